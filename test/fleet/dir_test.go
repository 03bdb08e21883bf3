//go:build e2e

package fleet_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/weir-etl/weir/internal/testkit/weirtest"
)

// Three pipelines from a directory: file → file (edited), file → file and
// generate → blackhole. The edited one's file changes 20 times (--watch)
// while lines keep coming: it alone reloads, 20 times; the other two never
// restart (one run each, their committed positions never go back); no line
// of either file pipeline is lost, and the edited one's duplicates are at
// most what can be in flight (max_in_flight_batches × batch_size).
func TestE2EEditOnePipeline(t *testing.T) {
	bin := weirtest.BuildTemp(t, "")
	root := t.TempDir()
	dir := filepath.Join(root, "pipelines")
	edited, other := filepath.Join(root, "edited"), filepath.Join(root, "other")
	mkdirs(t, dir, filepath.Join(edited, "in"), filepath.Join(other, "in"))
	ea, oa := &appender{path: filepath.Join(edited, "in", "a.ndjson")}, &appender{path: filepath.Join(other, "in", "a.ndjson")}
	ea.add(t, 1000)
	oa.add(t, 1000)
	writeFile(t, filepath.Join(dir, "edited.yaml"), tailYAML(edited, "0"))
	writeFile(t, filepath.Join(dir, "other.yaml"), tailYAML(other, "0"))
	writeFile(t, filepath.Join(dir, "gen.yaml"), generateYAML)
	w := start(t, bin, freeAddr(t, "127.0.0.1"), nil, "-d", dir, "--watch")
	weirtest.WaitFor(t, "the three pipelines running", time.Minute, func() bool {
		ps := w.pipelines(t, "")
		return len(ps) == 3 && ps["edited"].State == "running" && ps["other"].State == "running" && ps["gen"].State == "running"
	})

	committed := `weir_partition_committed_position{pipeline="other",`
	var lastPos float64
	checkPos := func() {
		v, ok := w.metricPrefix(t, committed)
		if !ok {
			return
		}
		if v < lastPos {
			t.Errorf("the other pipeline's committed position went back from %v to %v", lastPos, v)
		}
		lastPos = v
	}
	const edits = 20
	for i := 1; i <= edits; i++ {
		ea.add(t, 200)
		oa.add(t, 200)
		writeFile(t, filepath.Join(dir, "edited.yaml"), tailYAML(edited, fmt.Sprint(i)))
		weirtest.WaitFor(t, fmt.Sprintf("reload %d", i), time.Minute, func() bool {
			p := w.pipelines(t, "")["edited"]
			return p.Reloads == i && p.State == "running"
		})
		checkPos()
	}
	ea.add(t, 500)
	oa.add(t, 500)
	checkDelivered(t, "edited", ea, filepath.Join(edited, "out"), 4*50)
	checkDelivered(t, "other", oa, filepath.Join(other, "out"), 0)
	checkPos()
	if lastPos == 0 {
		t.Errorf("no committed position of the other pipeline in /metrics (%s)", committed)
	}
	ps := w.pipelines(t, "")
	for _, n := range []string{"other", "gen"} {
		if p := ps[n]; p.Runs != 1 || p.Reloads != 0 || p.State != "running" {
			t.Errorf("%s: %d runs, %d reloads, %s; want 1 run, never restarted", n, p.Runs, p.Reloads, p.State)
		}
	}
	if v, _ := w.metric(t, `weir_pipeline_reloads_total{pipeline="edited"}`); v != edits {
		t.Errorf("weir_pipeline_reloads_total of edited: %v, want %d", v, edits)
	}
	// The counters since the process started equal what was written.
	_, all := output(t, filepath.Join(edited, "out"))
	weirtest.WaitFor(t, "the counters to reach the output", time.Minute, func() bool {
		v, _ := w.metric(t, `weir_records_out_total{pipeline="edited",component="out"}`)
		return v == float64(all)
	})
	if v, _ := w.metric(t, `weir_records_out_total{pipeline="edited",component="in"}`); v != float64(all) {
		t.Errorf("edited read %v records over %d runs; its sink wrote %d", v, edits+1, all)
	}

	_ = w.cmd.Process.Signal(syscall.SIGTERM)
	<-w.done
	if w.err != nil {
		t.Fatalf("weir exited: %v\n%s", w.err, weirtest.Last(w.stderr.String(), 20))
	}
	if want := fmt.Sprintf("pipeline edited: stopped after %d runs (%d reloads): %d read, %d written", edits+1, edits, all, all); !strings.Contains(w.stderr.String(), want) {
		t.Errorf("the summary lacks %q:\n%s", want, weirtest.Last(w.stderr.String(), 20))
	}
}

// One failing pipeline leaves the others running; weir exits 3 once the
// rest is interrupted, and says which failed.
func TestE2EOneFails(t *testing.T) {
	bin := weirtest.BuildTemp(t, "")
	root := t.TempDir()
	dir := filepath.Join(root, "pipelines")
	other := filepath.Join(root, "other")
	mkdirs(t, dir, filepath.Join(other, "in"))
	oa := &appender{path: filepath.Join(other, "in", "a.ndjson")}
	oa.add(t, 100)
	writeFile(t, filepath.Join(dir, "other.yaml"), tailYAML(other, "0"))
	writeFile(t, filepath.Join(dir, "broken.yaml"), strings.Replace(strings.Replace(generateYAML, "inputs: [g]", "inputs: [m]", 1), "sinks:", "transforms:\n  m: { type: map, inputs: [g], set: { y: 'missing.field + 1' } }\nsinks:", 1))
	w := start(t, bin, freeAddr(t, "127.0.0.1"), nil, "-d", dir)
	weirtest.WaitFor(t, "broken to fail", time.Minute, func() bool { return w.pipelines(t, "")["broken"].State == "failed" })
	oa.add(t, 100)
	checkDelivered(t, "other", oa, filepath.Join(other, "out"), 0)
	if p := w.pipelines(t, "")["other"]; p.State != "running" {
		t.Fatalf("other is %s after broken failed", p.State)
	}
	_ = w.cmd.Process.Signal(syscall.SIGTERM)
	<-w.done
	if code := w.cmd.ProcessState.ExitCode(); code != 3 || !strings.Contains(w.stderr.String(), "1 of 2 pipelines failed (broken)") {
		t.Fatalf("exit %d, want 3 with the failed pipeline named:\n%s", code, weirtest.Last(w.stderr.String(), 10))
	}
}
