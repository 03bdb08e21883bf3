package conformance_test

import (
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weir-etl/weir/checkpoint"
	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/connector/conformance"
	"github.com/weir-etl/weir/pipeline/pipelinetest"
)

// A correct listSource passes the source suite, with one partition and with
// several.
func TestListSourceConforms(t *testing.T) {
	for _, parts := range []int{1, 3} {
		dest := destPerTest()
		conformance.TestSource(t, conformance.SourceHarness{Runtime: pipelinetest.Runtime{}, New: func(t *testing.T) connector.Source {
			return newListSource(parts, dest(t), "")
		}})
	}
}

// destPerTest gives each test its own committed positions, shared by the
// sources one test opens (a restart must find what was committed before it),
// so that a test that reads everything leaves the next one something to
// read.
func destPerTest() func(t *testing.T) *listDest {
	var mu sync.Mutex
	dests := map[string]*listDest{}
	return func(t *testing.T) *listDest {
		mu.Lock()
		defer mu.Unlock()
		d, ok := dests[t.Name()]
		if !ok {
			d = &listDest{committed: map[string]checkpoint.Position{}}
			dests[t.Name()] = d
		}
		return d
	}
}

// brokenCase is a connector broken in one way, and the checks of the suite
// that must catch it: exactly those fail, every other passes, and the
// failure says what is wrong.
type brokenCase struct {
	name  string
	run   func(t *testing.T)
	fails []string
	says  string
}

func brokenSource(mode string) func(t *testing.T) {
	return func(t *testing.T) {
		dest := destPerTest()
		conformance.TestSource(t, conformance.SourceHarness{Runtime: pipelinetest.Runtime{}, New: func(t *testing.T) connector.Source {
			return newListSource(1, dest(t), mode)
		}})
	}
}

func brokenSinkSuite(mode string) func(t *testing.T) {
	return func(t *testing.T) {
		conformance.TestSink(t, conformance.SinkHarness{Runtime: pipelinetest.Runtime{},
			New:     func(t *testing.T) connector.Sink { return &brokenSink{mode: mode, dest: &brokenDest{}} },
			Count:   func(t *testing.T, s connector.Sink) int { return len(s.(*brokenSink).written()) },
			Written: func(t *testing.T, s connector.Sink) [][]byte { return s.(*brokenSink).written() },
			Reopen: func(t *testing.T, s connector.Sink) connector.Sink {
				return &brokenSink{mode: mode, dest: s.(*brokenSink).dest}
			},
			Unwritable: unencodable,
		})
	}
}

var brokenCases = []brokenCase{
	{name: "SeekKeepsOffsets", run: brokenSource("seek-keeps-offsets"),
		// Seek rereads the right records but numbers them on from where it
		// was: the runtime would take them for records a sink already holds.
		fails: []string{"SeekReadsExactlyFromThePosition", "CancelledPollLosesNothing"},
		says:  "the offsets they had the first time"},
	{name: "CancelDropsBuffer", run: brokenSource("cancel-drops-buffer"),
		// A rewind of one partition would lose what was fetched of the others.
		fails: []string{"CancelledPollLosesNothing"},
		says:  "read with cancelled Polls in between"},
	{name: "PollIgnoresCancel", run: brokenSource("poll-ignores-cancel"),
		// A rewind requested while Poll waits would wait for new data.
		fails: []string{"CancelledPollLosesNothing"},
		says:  "did not return in time"},
	{name: "AssignAtZero", run: brokenSource("assign-at-zero"),
		// Reads from its committed position, tells the runtime it starts at
		// 0: a rewind to where it began (a Seek to the Assign's start) then
		// reads what was committed long ago. Only a restart shows it (each
		// check starts from nothing committed).
		fails: []string{"FailedBatchesAreReplayedAfterRestart"},
		says:  "Assign each partition at its committed position"},
	{name: "EmptyBatchGoesBack", run: brokenSource("empty-batch-goes-back"),
		fails: []string{"CommitsNeverRegress", "FailedBatchesAreReplayedAfterRestart", "SeekReadsExactlyFromThePosition", "CancelledPollLosesNothing"},
		says:  "before where it begins"},
	{name: "UnassignedPartition", run: brokenSource("unassigned-partition"),
		fails: []string{"CommitsNeverRegress", "FailedBatchesAreReplayedAfterRestart", "SeekReadsExactlyFromThePosition", "CancelledPollLosesNothing"},
		says:  "which is not assigned"},
	{name: "FlushInProcess", run: brokenSinkSuite("flush-in-process"),
		// Flush returns with the group in the process's memory only.
		fails: []string{"CrashBetweenWriteAndFlush"},
		says:  "the flushed group must survive"},
	{name: "WriteThrough", run: brokenSinkSuite("write-through"),
		// Write goes straight to the destination; only Abort takes it back.
		fails: []string{"CloseFlushesNothing", "CrashBetweenWriteAndFlush"},
		says:  "the unflushed one must not show"},
	{name: "CloseFlushes", run: brokenSinkSuite("close-flushes"),
		fails: []string{"CloseFlushesNothing"},
		says:  "Close flushes nothing"},
	{name: "RejectAfterWritingTheRest", run: brokenSinkSuite("reject-after-writing-the-rest"),
		fails: []string{"RejectedRecordIsLeftOut"},
		says:  "each once"},
	{name: "RejectAsPlainError", run: brokenSinkSuite("reject-as-plain-error"),
		fails: []string{"RejectedRecordIsLeftOut"},
		says:  "want a *connector.RejectError with Index 1"},
}

// TestBrokenConnector runs the suites against the broken connectors; it
// fails by design, so it runs only in the child processes that
// TestSuiteCatchesBrokenConnectors starts.
func TestBrokenConnector(t *testing.T) {
	if os.Getenv("WEIR_CONFORMANCE_BROKEN") == "" {
		t.Skip("run by TestSuiteCatchesBrokenConnectors")
	}
	conformance.SetCancelledPollDeadline(200 * time.Millisecond)
	for _, c := range brokenCases {
		t.Run(c.name, c.run)
	}
}

// Each check the suite has for a part of the contract fails on a connector
// that breaks that part, and only that check (or the few that depend on the
// same rule) fails: the broken connectors pass the rest of the suite, so
// each check is what catches them.
func TestSuiteCatchesBrokenConnectors(t *testing.T) {
	failLine := regexp.MustCompile(`--- FAIL: TestBrokenConnector/[^/\s]+/(\S+)`)
	for _, c := range brokenCases {
		t.Run(c.name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestBrokenConnector$/^"+c.name+"$", "-test.v", "-test.count=1", "-test.timeout=2m")
			cmd.Env = append(os.Environ(), "WEIR_CONFORMANCE_BROKEN=1")
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("the suite passed the broken connector:\n%s", out)
			}
			var failed []string
			for _, m := range failLine.FindAllStringSubmatch(string(out), -1) {
				failed = append(failed, m[1])
			}
			slices.Sort(failed)
			want := slices.Sorted(slices.Values(c.fails))
			if !slices.Equal(failed, want) {
				t.Fatalf("failed checks %v, want exactly %v:\n%s", failed, want, out)
			}
			if !strings.Contains(string(out), c.says) {
				t.Fatalf("the failure does not say %q:\n%s", c.says, out)
			}
		})
	}
}
