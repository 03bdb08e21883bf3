package pipeline_test

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/weir-etl/weir/checkpoint"
	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/pipeline"
	"github.com/weir-etl/weir/record"
)

// words is a finite source: one partition, one record per word, positions are
// word indexes.
type words struct {
	list      []string
	next      int
	committed checkpoint.Position
	noOffsets bool // break the rule (a test's)
}

func (w *words) Open(ctx context.Context, h connector.Host) error {
	h.Assign("words", 0)
	return nil
}

func (w *words) Poll(ctx context.Context, b *connector.Batch) error {
	if w.next == len(w.list) {
		return connector.ErrEndOfInput
	}
	r := record.New([]byte(w.list[w.next]))
	if !w.noOffsets {
		r.Origin.Offset = int64(w.next) // every record carries its own position
	}
	b.Records = append(b.Records, r)
	w.next++
	b.Partition, b.End = 0, checkpoint.Position(w.next)
	return nil
}

func (w *words) Commit(ctx context.Context, cs []connector.Commit) error {
	w.committed = cs[len(cs)-1].Position
	return nil
}

func (w *words) Seek(ctx context.Context, p checkpoint.Partition, pos checkpoint.Position) error {
	w.next = int(pos)
	return nil
}

func (w *words) Close(ctx context.Context) error { return nil }

// printer prints a group when it is flushed.
type printer struct{ group []string }

func (p *printer) Open(ctx context.Context) error { return nil }
func (p *printer) Write(ctx context.Context, rs []record.Record) error {
	for i := range rs {
		v, _ := rs[i].Value()
		p.group = append(p.group, string(v))
	}
	return nil
}
func (p *printer) Flush(ctx context.Context) error {
	for _, s := range p.group {
		fmt.Println(s)
	}
	p.group = p.group[:0]
	return nil
}
func (p *printer) Abort(ctx context.Context) error { p.group = p.group[:0]; return nil }
func (p *printer) Close(ctx context.Context) error { return nil }

// A custom source and sink run to the end of input; the last position is
// committed only after the sink flushed every word.
func ExampleRun() {
	src := &words{list: []string{"weir", "holds", "the", "level"}}
	spec := &pipeline.Spec{
		Sources: []pipeline.SourceSpec{{Name: "words", Source: src}},
		Sinks:   []pipeline.SinkSpec{{Name: "print", Inputs: []string{"words"}, Sink: &printer{}}},
		Metrics: pipeline.MetricsSettings{Address: "off"},
	}
	if err := pipeline.Run(context.Background(), spec, pipeline.WithLogger(slog.New(slog.DiscardHandler))); err != nil {
		fmt.Println(err)
	}
	fmt.Println("committed:", src.committed)
	// Output:
	// weir
	// holds
	// the
	// level
	// committed: 4
}
