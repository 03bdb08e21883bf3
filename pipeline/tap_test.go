package pipeline_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/weir-etl/weir/pipeline"
	"github.com/weir-etl/weir/sink/blackhole"
	"github.com/weir-etl/weir/transform"
)

// tapLine is one line a tap sends.
type tapLine struct {
	Component string          `json:"component"`
	Kind      string          `json:"kind"`
	Source    string          `json:"source"`
	Partition string          `json:"partition"`
	Offset    int64           `json:"offset"`
	Value     json.RawMessage `json:"value"`
	End       string          `json:"tap_end"`
	Sent      int             `json:"sent"`
}

// readTap reads a whole tap response.
func readTap(t *testing.T, url string) []tapLine {
	t.Helper()
	// A tap whose hook is missing would wait for ever: bound it.
	client := &http.Client{Timeout: 20 * time.Second}
	resp, err := client.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/x-ndjson" {
		t.Fatalf("GET %s: %s %s", url, resp.Status, resp.Header.Get("Content-Type"))
	}
	var out []tapLine
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		var l tapLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		out = append(out, l)
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return out
}

// Guarantee: a tap on a running pipeline streams, as NDJSON, the records
// leaving the component it names (a source, a transform, a route output, a
// sink), as many as asked, then a line that says why it ended; a tap still
// open when the run ends is ended and told so; unknown components and bad
// limits are refused with the reason, and once the run is over new taps
// are refused.
func TestTapARunningPipeline(t *testing.T) {
	split, err := transform.NewRoute([]transform.RouteOutput{{Name: "all", Condition: "true"}, {Name: "none", Condition: "false"}})
	if err != nil {
		t.Fatal(err)
	}
	sp := fastSpec(gen(t, 0, 2, 50),
		pipeline.SinkSpec{Name: "out", Inputs: []string{"split.all"}, Sink: blackhole.New()},
		pipeline.SinkSpec{Name: "never", Inputs: []string{"split.none"}, Sink: blackhole.New()})
	sp.Transforms = []pipeline.TransformSpec{
		{Name: "even", Inputs: []string{"gen"}, Transform: keepEven{}},
		{Name: "split", Inputs: []string{"even"}, Router: split},
	}
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- pipeline.Run(ctx, sp, quiet, pipeline.WithServeMux(mux)) }()
	base := srv.URL + "/api/v1/tap/"
	// The endpoints are on the mux once Run opened: poll for them.
	for deadline := time.Now().Add(10 * time.Second); ; {
		if code, _ := httpGet(t, srv.URL+"/healthz"); code == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the endpoints never came up")
		}
		time.Sleep(time.Millisecond) // polling for another goroutine's progress
	}

	for _, tc := range []struct{ component, kind string }{
		{"gen", "source"}, {"even", "transform"}, {"split", "transform"}, {"split.all", "transform"}, {"out", "sink"},
	} {
		lines := readTap(t, base+tc.component+"?rate=10000&count=5")
		if len(lines) != 6 || lines[5].End != "count reached" || lines[5].Sent != 5 {
			t.Fatalf("tap %s: %d lines, last %+v; want 5 records and the end", tc.component, len(lines), lines[len(lines)-1])
		}
		for _, l := range lines[:5] {
			if l.Component != tc.component || l.Kind != tc.kind || l.Source != "gen" || !strings.HasPrefix(l.Partition, "gen/") {
				t.Errorf("tap %s: line %+v", tc.component, l)
			}
			var v struct{ Seq int64 }
			if err := json.Unmarshal(l.Value, &v); err != nil || v.Seq != l.Offset {
				t.Errorf("tap %s: value %s at offset %d", tc.component, l.Value, l.Offset)
			}
			if tc.component != "gen" && l.Offset%2 != 0 {
				t.Errorf("tap %s: offset %d passed the filter", tc.component, l.Offset)
			}
		}
	}
	for q, want := range map[string]string{
		"nope":             `no component "nope" to tap; there are: gen, even, split, split.all, split.none, out, never`,
		"split.other":      `no component "split.other"`,
		"even?rate=0":      "rate=",
		"even?rate=fast":   "rate=",
		"even?count=-1":    "count=",
		"even?rate=100000": "at most 10000",
	} {
		if code, body := httpGet(t, base+q); (code != http.StatusNotFound && code != http.StatusBadRequest) || !strings.Contains(body, want) {
			t.Errorf("GET %s: %d %q, want an error with %q", q, code, body, want)
		}
	}

	// A tap on an output no record takes is still open when the run ends:
	// its headers came back, so it is registered.
	resp, err := http.Get(base + "split.none")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	if want := `{"tap_end":"the pipeline stopped","sent":0,"dropped":0}` + "\n"; string(body) != want {
		t.Errorf("an open tap at the end got %q, want %q", body, want)
	}
	if code, body := httpGet(t, base+"even"); code != http.StatusServiceUnavailable || !strings.Contains(body, "not running") {
		t.Errorf("a tap after the run: %d %q", code, body)
	}
}

// Guarantee: a filter on a source's straight line into one sink, which the
// runtime filters where its batch lies when nobody taps, is tapped like any
// transform: the records it keeps, and the sink's.
func TestTapAFilterChain(t *testing.T) {
	even, err := transform.NewFilter("seq % 2 == 0")
	if err != nil {
		t.Fatal(err)
	}
	sp := fastSpec(gen(t, 0, 2, 50), pipeline.SinkSpec{Name: "out", Inputs: []string{"even"}, Sink: blackhole.New()})
	sp.Transforms = []pipeline.TransformSpec{{Name: "even", Inputs: []string{"gen"}, Transform: even}}
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- pipeline.Run(ctx, sp, quiet, pipeline.WithServeMux(mux)) }()
	for deadline := time.Now().Add(10 * time.Second); ; {
		if code, _ := httpGet(t, srv.URL+"/healthz"); code == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the endpoints never came up")
		}
		time.Sleep(time.Millisecond) // polling for another goroutine's progress
	}
	for _, c := range []string{"even", "out"} {
		lines := readTap(t, srv.URL+"/api/v1/tap/"+c+"?rate=10000&count=5")
		if len(lines) != 6 || lines[5].End != "count reached" {
			t.Fatalf("tap %s: %d lines, last %+v; want 5 records and the end", c, len(lines), lines[len(lines)-1])
		}
		for _, l := range lines[:5] {
			if l.Component != c || l.Offset%2 != 0 {
				t.Errorf("tap %s: line %+v, want a record of %s with an even offset", c, l, c)
			}
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
