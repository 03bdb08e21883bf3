package main

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/record"
)

// countingSink counts the records of every group its sink made durable, and
// closes all when the sink was handed want records, done when want records
// are durable. With stall set, no group ever becomes durable: Flush and
// Persist wait until their context ends.
type countingSink struct {
	connector.Sink
	want    int64
	stall   bool
	pending int64        // records written into the current group; sink goroutine only
	written atomic.Int64 // records written, flushed or not
	lastIn  atomic.Int64 // UnixNano when the last of want records was written
	flushed atomic.Int64
	all     chan struct{}
	done    chan struct{}
	once    sync.Once
}

func (c *countingSink) Write(ctx context.Context, recs []record.Record) error {
	err := c.Sink.Write(ctx, recs)
	if err == nil {
		c.pending += int64(len(recs))
		if c.written.Add(int64(len(recs))) >= c.want && c.lastIn.Load() == 0 {
			c.lastIn.Store(time.Now().UnixNano())
			close(c.all)
		}
	}
	return err
}

func (c *countingSink) Flush(ctx context.Context) error {
	if c.stall {
		<-ctx.Done()
		return ctx.Err()
	}
	err := c.Sink.Flush(ctx)
	if err == nil {
		c.durable(c.pending)
	}
	c.pending = 0
	return err
}

func (c *countingSink) durable(n int64) {
	if c.flushed.Add(n) >= c.want {
		c.once.Do(func() { close(c.done) })
	}
}

func (c *countingSink) Abort(ctx context.Context) error {
	c.pending = 0
	return c.Sink.Abort(ctx)
}

// countingSealer is countingSink for a sink that seals: a group's records
// count once its Persist succeeded.
type countingSealer struct {
	*countingSink
	sealer connector.Sealer
}

func (c *countingSealer) Seal(ctx context.Context) (connector.SealedGroup, error) {
	g, err := c.sealer.Seal(ctx)
	if err != nil {
		return nil, err
	}
	n := c.pending
	c.pending = 0
	return &countedGroup{SealedGroup: g, c: c.countingSink, n: n}, nil
}

type countedGroup struct {
	connector.SealedGroup
	c *countingSink
	n int64
}

func (g *countedGroup) Persist(ctx context.Context) error {
	if g.c.stall {
		<-ctx.Done()
		return ctx.Err()
	}
	err := g.SealedGroup.Persist(ctx)
	if err == nil {
		g.c.durable(g.n)
	}
	return err
}

// countingKeeper is countingSealer for an exactly-once sink: it passes the
// positions through, so that the runtime uses the sink as one.
type countingKeeper struct {
	*countingSealer
	keeper connector.PositionKeeper
}

func (c *countingKeeper) StoredPositions(ctx context.Context, source string, partitions []string) (map[string]connector.Position, error) {
	return c.keeper.StoredPositions(ctx, source, partitions)
}

func (c *countingKeeper) GroupPositions(ps []connector.GroupPosition) { c.keeper.GroupPositions(ps) }
