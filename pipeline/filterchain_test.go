package pipeline_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
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

// countingMap is a map whose Process counts its calls; Apply, the in-place
// path, is the map's own.
type countingMap struct {
	*transform.Map
	processed *atomic.Int64
}

func (m countingMap) Process(in *record.Record, out []record.Record) ([]record.Record, error) {
	m.processed.Add(1)
	return m.Map.Process(in, out)
}

// processOnly hides everything of a transform but Process: a graph with it
// takes the general path.
type processOnly struct{ t transform.Transform }

func (p processOnly) Process(in *record.Record, out []record.Record) ([]record.Record, error) {
	return p.t.Process(in, out)
}

// Guarantee: a map in a line of filters and maps into sinks changes each
// record where it lies in its batch, and every sink gets what the general
// path gives it (the same graph with the map's in-place path hidden): the
// same values in each partition's order, the same counts, a record the map
// drops delivered, and the record the map fails on dead-lettered as it was
// read. With two sinks, the second gets a copy of the batch's records, each
// with a reference of its own: the run commits to the end only if every
// reference is released once.
func TestFilterChainRunsMapsInPlace(t *testing.T) {
	const n, parts, failAt = 6000, 3, 1001
	type result struct {
		out, other, dead []string
		rep              *pipeline.Report
		processed        int64
	}
	run := func(chain bool) result {
		t.Helper()
		m, err := transform.NewMap(transform.MapConfig{
			Set:    []transform.Assignment{{Field: "x", Expr: fmt.Sprintf(`seq %% 5 == 0 ? drop() : 100 / (seq - %d)`, failAt)}},
			Rename: []transform.Rename{{From: "id", To: "ident"}},
		})
		if err != nil {
			t.Fatal(err)
		}
		odd, err := transform.NewFilter("seq % 2 == 1")
		if err != nil {
			t.Fatal(err)
		}
		var count atomic.Int64
		var mt transform.Transform = countingMap{m, &count}
		if !chain {
			mt = processOnly{mt}
		}
		sink, dl, other := &conformance.MemSink{}, &conformance.MemSink{}, &conformance.MemSink{}
		sp := fastSpec(gen(t, n, parts, 70),
			pipeline.SinkSpec{Name: "out", Inputs: []string{"m"}, Sink: sink, OnFailure: pipeline.DeadLetter, DeadLetter: "dl"},
			pipeline.SinkSpec{Name: "other", Inputs: []string{"m"}, Sink: other, OnFailure: pipeline.DeadLetter, DeadLetter: "dl"},
			pipeline.SinkSpec{Name: "dl", Sink: dl})
		sp.Transforms = []pipeline.TransformSpec{
			{Name: "odd", Inputs: []string{"gen"}, Transform: odd},
			{Name: "m", Inputs: []string{"odd"}, Transform: mt},
		}
		var r result
		if err := pipeline.Run(context.Background(), sp, quiet, pipeline.WithReport(func(rep *pipeline.Report) { r.rep = rep })); err != nil {
			t.Fatal(err)
		}
		strs := func(vs [][]byte) (out []string) {
			for _, v := range vs {
				out = append(out, string(v))
			}
			return out
		}
		r.out, r.other, r.dead, r.processed = strs(sink.Values()), strs(other.Values()), strs(dl.Values()), count.Load()
		return r
	}
	chained, general := run(true), run(false)
	if chained.processed != 0 {
		t.Errorf("the map's Process ran %d times in the chain; it runs in place there", chained.processed)
	}
	if general.processed != n/2 {
		t.Errorf("the map's Process ran %d times on the general path, want %d", general.processed, n/2)
	}
	// Order is kept within a partition, not across: compare by partition.
	byPart := func(vals []string) [parts][]string {
		var ps [parts][]string
		for _, v := range vals {
			id := numOf(t, []byte(v), "ident")
			ps[id%parts] = append(ps[id%parts], v)
		}
		return ps
	}
	// seq 0..1999 in each partition: the filter keeps the odd ones, the map
	// drops a fifth of them and fails on the one at failAt.
	want := 0
	for seq := range n / parts {
		if seq%2 == 1 && seq%5 != 0 && seq != failAt {
			want += parts
		}
	}
	for _, c := range []struct {
		name             string
		chained, general []string
	}{{"out", chained.out, general.out}, {"other", chained.other, general.other}} {
		cp, gp := byPart(c.chained), byPart(c.general)
		for p := range parts {
			if !slices.Equal(cp[p], gp[p]) {
				t.Errorf("sink %s, partition %d: the chain wrote %d records, the general path %d; first %q and %q", c.name, p, len(cp[p]), len(gp[p]), first(cp[p]), first(gp[p]))
			}
		}
		if len(c.chained) != want {
			t.Errorf("sink %s: the chain wrote %d records, want %d", c.name, len(c.chained), want)
		}
	}
	if len(chained.dead) != parts || len(general.dead) != parts {
		t.Errorf("dead letters: chain %d, general path %d, want %d each", len(chained.dead), len(general.dead), parts)
	}
	for _, d := range chained.dead {
		if !strings.Contains(d, fmt.Sprintf(`"seq":%d}`, failAt)) || !strings.Contains(d, `"transform":"m"`) {
			t.Errorf("dead letter %s is not the record the map failed on, as read", d)
		}
	}
	for i := range chained.rep.Transforms {
		c, g := chained.rep.Transforms[i], general.rep.Transforms[i]
		if c.In != g.In || c.Out != g.Out || c.Rejected != g.Rejected {
			t.Errorf("transform %s: chain %d in, %d out, %d rejected; general path %d, %d, %d", c.Name, c.In, c.Out, c.Rejected, g.In, g.Out, g.Rejected)
		}
	}
	if c := chained.rep.Sources[0].Committed; c != n {
		t.Errorf("committed %d of %d records: every reference, the copies' too, is released once", c, n)
	}
}
