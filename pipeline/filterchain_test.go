package pipeline_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/weir-etl/weir/connector/conformance"
	"github.com/weir-etl/weir/pipeline"
	"github.com/weir-etl/weir/record"
	"github.com/weir-etl/weir/transform"
)

// keepOnly is a predicate that keeps the records whose seq is not a multiple
// of mod and fails on the one at offset failAt (-1: none). Its Process counts
// its calls: a source whose records only pass predicates into one sink is
// filtered by Keep, where the batch lies.
type keepOnly struct {
	mod       int64
	failAt    int64
	processed *atomic.Int64
}

func (k keepOnly) Keep(in *record.Record) (bool, error) {
	if in.Origin.Offset == k.failAt {
		return false, errors.New("filter condition compared null with a number")
	}
	return in.Origin.Offset%k.mod != 0, nil
}

func (k keepOnly) Process(in *record.Record, out []record.Record) ([]record.Record, error) {
	k.processed.Add(1)
	ok, err := k.Keep(in)
	if err != nil || !ok {
		return out, err
	}
	return append(out, *in), nil
}

// Guarantee: a line of filters into one sink keeps exactly the records every
// filter keeps, unchanged and in each partition's order, counts each filter's
// records in and out, delivers the dropped ones (the run commits to the end),
// and sends a record a filter fails on to the dead letter sink.
func TestFilterChainKeepsWhatEveryFilterKeeps(t *testing.T) {
	even, err := transform.NewFilter("seq % 2 == 0") // the built-in filter, a Predicate
	if err != nil {
		t.Fatal(err)
	}
	var processed atomic.Int64
	const n, parts, failAt = 6000, 3, 1000
	third := keepOnly{mod: 3, failAt: failAt, processed: &processed}
	out, dl := &conformance.MemSink{}, &conformance.MemSink{}
	sp := fastSpec(gen(t, n, parts, 70),
		pipeline.SinkSpec{Name: "out", Inputs: []string{"third"}, Sink: out, OnFailure: pipeline.DeadLetter, DeadLetter: "dl"},
		pipeline.SinkSpec{Name: "dl", Sink: dl})
	sp.Transforms = []pipeline.TransformSpec{
		{Name: "even", Inputs: []string{"gen"}, Transform: even},
		{Name: "third", Inputs: []string{"even"}, Transform: third},
	}
	var rep *pipeline.Report
	if err := pipeline.Run(context.Background(), sp, quiet, pipeline.WithReport(func(r *pipeline.Report) { rep = r })); err != nil {
		t.Fatal(err)
	}
	if p := processed.Load(); p != 0 {
		t.Errorf("the filter's Process ran %d times; a line of predicates into one sink is filtered with Keep", p)
	}

	// gen's values: seq is the record's offset in its partition, id is
	// seq*parts + the partition's index.
	var want [parts][]string
	var evens, kept int64
	for seq := range n / parts {
		if seq%2 != 0 {
			continue
		}
		evens += parts
		if seq%3 != 0 && seq != failAt {
			for p := range parts {
				want[p] = append(want[p], fmt.Sprintf(`{"id":%d,"seq":%d}`, seq*parts+p, seq))
				kept++
			}
		}
	}
	var got [parts][]string
	for _, v := range out.Values() {
		id := numOf(t, v, "id")
		got[id%parts] = append(got[id%parts], string(v))
	}
	for p := range parts {
		if !slices.Equal(got[p], want[p]) {
			t.Errorf("partition %d: wrote %d records, want %d, in order; first written %q", p, len(got[p]), len(want[p]), first(got[p]))
		}
	}
	if len(rep.Transforms) != 2 {
		t.Fatalf("report has %d transforms, want 2", len(rep.Transforms))
	}
	if tr := rep.Transforms[0]; tr.In != n || tr.Out != evens {
		t.Errorf("filter even: %d in, %d out, want %d and %d", tr.In, tr.Out, n, evens)
	}
	if tr := rep.Transforms[1]; tr.In != evens || tr.Out != kept || tr.Rejected != parts {
		t.Errorf("filter third: %d in, %d out, %d rejected, want %d, %d and %d", tr.In, tr.Out, tr.Rejected, evens, kept, parts)
	}
	dead := dl.Values()
	if len(dead) != parts {
		t.Fatalf("%d dead letters, want %d (offset %d of each partition)", len(dead), parts, failAt)
	}
	for _, d := range dead {
		for _, part := range []string{`"transform":"third"`, fmt.Sprintf(`"offset":%d,`, failAt), fmt.Sprintf(`"seq":%d}}`, failAt)} {
			if !bytes.Contains(d, []byte(part)) {
				t.Errorf("dead letter %s has no %s: it is not the record filter third failed on", d, part)
			}
		}
	}
	if c := rep.Sources[0].Committed; c != n {
		t.Errorf("committed %d of %d records: the dropped and dead-lettered ones are delivered", c, n)
	}
}

func first(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}

// numOf returns the integer member name of the JSON object v.
func numOf(t testing.TB, v []byte, name string) int {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(v, &m); err != nil {
		t.Fatalf("%s: %v", v, err)
	}
	n, err := strconv.Atoi(string(m[name]))
	if err != nil {
		t.Fatalf("%s: member %s: %v", v, name, err)
	}
	return n
}
