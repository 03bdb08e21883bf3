package pipeline_test

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/weir-etl/weir/connector/conformance"
	"github.com/weir-etl/weir/pipeline"
	"github.com/weir-etl/weir/transform"
)

// describedSink is a memory sink that says where its output went.
type describedSink struct{ *conformance.MemSink }

func (describedSink) Describe() string { return "memory: all of it" }

// The report counts records read per source, in, out and dropped per
// transform, written per sink with the sink's own description, and the
// positions of the final commit.
func TestReportSummarisesTheRun(t *testing.T) {
	const n = 1000
	src := gen(t, n, 2, 50)
	even, err := transform.NewFilter("seq % 2 == 0")
	if err != nil {
		t.Fatal(err)
	}
	kept := describedSink{&conformance.MemSink{}}
	all := &conformance.MemSink{}
	sp := fastSpec(src,
		pipeline.SinkSpec{Name: "kept", Inputs: []string{"even"}, Sink: kept},
		pipeline.SinkSpec{Name: "all", Inputs: []string{"gen"}, Sink: all})
	sp.Transforms = []pipeline.TransformSpec{{Name: "even", Inputs: []string{"gen"}, Transform: even}}
	var rep *pipeline.Report
	if err := pipeline.Run(context.Background(), sp, quiet, pipeline.WithReport(func(r *pipeline.Report) { rep = r })); err != nil {
		t.Fatal(err)
	}
	if rep == nil {
		t.Fatal("WithReport's function was not called")
	}
	if len(rep.Sources) != 1 || !reflect.DeepEqual(rep.Sources[0], pipeline.SourceReport{Name: "gen", Read: n, Partitions: 2, Committed: n}) {
		t.Fatalf("sources: %+v; want gen, %d read, 2 partitions committed at %d in total", rep.Sources, n, n)
	}
	tr := rep.Transforms
	if len(tr) != 1 || tr[0].Kind != "filter" || tr[0].In != n || tr[0].Out != n/2 || tr[0].Dropped() != n/2 || tr[0].Rejected != 0 {
		t.Fatalf("transforms: %+v; want the filter to keep %d of %d", tr, n/2, n)
	}
	sk := rep.Sinks
	if len(sk) != 2 || sk[0].Written != n/2 || sk[0].Output != "memory: all of it" || sk[1].Written != n || sk[1].Output != "" || sk[0].Failed+sk[1].Failed != 0 {
		t.Fatalf("sinks: %+v", sk)
	}
	s := rep.String()
	for _, want := range []string{"run summary", "source  gen", "1000 records read", "committed 2 partitions, positions summing to 1000",
		"filter  even", "500 out, 500 dropped", "sink    kept", "500 written", "memory: all of it", "1000 written"} {
		if !strings.Contains(s, want) {
			t.Errorf("summary lacks %q:\n%s", want, s)
		}
	}
}

// Guarantee: the summary counts as English does, and says so when nothing
// was committed rather than "positions summing to 0".
func TestReportWords(t *testing.T) {
	r := &pipeline.Report{Sources: []pipeline.SourceReport{
		{Name: "a", Read: 1, Partitions: 1, Committed: 7, Behind: []string{"a/0"}, Unread: map[string]int64{"files_gone": 1}},
		{Name: "b", Read: 0, Partitions: 3},
		{Name: "c"},
	}}
	s := r.String()
	for _, want := range []string{"1 record read", "1 byte unread", "1 partition left behind", "committed 1 partition, positions summing to 7",
		"nothing committed past the start of 3 partitions", "no partitions to commit"} {
		if !strings.Contains(s, want) {
			t.Errorf("summary lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "summing to 0") {
		t.Errorf("summary says positions summing to 0:\n%s", s)
	}
	e := &pipeline.IncompleteError{Partitions: []pipeline.PartitionRef{{Source: "orders", Partition: "orders/0"}, {Source: "orders", Partition: "orders/1"}, {Source: "files", Partition: "/var/log/a.log"}}, InFlight: 1}
	if got, want := e.Error(), "3 partitions behind (source orders: orders/0, orders/1; source files: /var/log/a.log), 1 batch unresolved"; !strings.Contains(got, want) {
		t.Errorf("IncompleteError = %q, want it to hold %q", got, want)
	}
}
