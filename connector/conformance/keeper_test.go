package conformance_test

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/connector/conformance"
	"github.com/weir-etl/weir/pipeline/pipelinetest"
	"github.com/weir-etl/weir/record"
)

// memKeeper is an in-memory connector.PositionKeeper: a Flush stores the
// group's values and positions in one step, as a database sink does in one
// transaction. Its destination outlives it, for Reopen. mode, when set,
// breaks it in one way (see keeperCases).
type memKeeper struct {
	mode  string
	dest  *keeperDest
	group [][]byte
	gpos  []connector.GroupPosition
}

type keeperDest struct {
	mu   sync.Mutex
	vals [][]byte
	pos  map[[2]string]connector.Position // by source and partition
}

func newMemKeeper(mode string) *memKeeper {
	return &memKeeper{mode: mode, dest: &keeperDest{pos: map[[2]string]connector.Position{}}}
}

func (k *memKeeper) Open(ctx context.Context) error { return nil }

func (k *memKeeper) Write(ctx context.Context, recs []record.Record) error {
	for i := range recs {
		err := recs[i].CheckJSON()
		v, _ := recs[i].Value()
		if err != nil {
			return &connector.RejectError{Index: i, Err: err}
		}
		k.group = append(k.group, v)
	}
	return nil
}

func (k *memKeeper) GroupPositions(ps []connector.GroupPosition) {
	switch k.mode {
	case "keeps-the-slice":
		k.gpos = ps
	case "stores-before-flush":
		k.gpos = append(k.gpos[:0], ps...)
		k.store()
	default:
		k.gpos = append(k.gpos[:0], ps...)
	}
}

func (k *memKeeper) store() {
	k.dest.mu.Lock()
	defer k.dest.mu.Unlock()
	for _, p := range k.gpos {
		src := p.Source
		if k.mode == "one-source" {
			src = ""
		}
		k.dest.pos[[2]string{src, p.Partition}] = p.Position
	}
}

func (k *memKeeper) Flush(ctx context.Context) error {
	k.dest.mu.Lock()
	k.dest.vals = append(k.dest.vals, k.group...)
	k.dest.mu.Unlock()
	k.store()
	k.group, k.gpos = nil, k.gpos[:0]
	return nil
}

func (k *memKeeper) Abort(ctx context.Context) error {
	k.group, k.gpos = nil, k.gpos[:0]
	return nil
}

func (k *memKeeper) Close(ctx context.Context) error { return nil }

func (k *memKeeper) StoredPositions(ctx context.Context, source string, partitions []string) (map[string]connector.Position, error) {
	if k.mode == "one-source" {
		source = ""
	}
	k.dest.mu.Lock()
	defer k.dest.mu.Unlock()
	out := map[string]connector.Position{}
	for _, p := range partitions {
		if pos, ok := k.dest.pos[[2]string{source, p}]; ok {
			out[p] = pos
		}
	}
	return out, nil
}

func (k *memKeeper) values() [][]byte {
	k.dest.mu.Lock()
	defer k.dest.mu.Unlock()
	return slices.Clone(k.dest.vals)
}

func keeperSuite(mode string) func(t *testing.T) {
	return func(t *testing.T) {
		conformance.TestSink(t, conformance.SinkHarness{Runtime: pipelinetest.Runtime{},
			New:     func(t *testing.T) connector.Sink { return newMemKeeper(mode) },
			Count:   func(t *testing.T, s connector.Sink) int { return len(s.(*memKeeper).values()) },
			Written: func(t *testing.T, s connector.Sink) [][]byte { return s.(*memKeeper).values() },
			Reopen: func(t *testing.T, s connector.Sink) connector.Sink {
				return &memKeeper{mode: mode, dest: s.(*memKeeper).dest}
			},
			Unwritable: unencodable,
		})
	}
}

// A correct in-memory PositionKeeper passes the sink suite, its position
// checks included.
func TestMemKeeperConforms(t *testing.T) { keeperSuite("")(t) }

func init() {
	brokenCases = append(brokenCases,
		brokenCase{name: "KeeperStoresBeforeFlush", run: keeperSuite("stores-before-flush"),
			// A crash before the Flush would leave a position past records
			// the sink does not hold: they would never be written.
			fails: []string{"PositionsAreStoredWithTheirGroup"},
			says:  "before the Flush"},
		brokenCase{name: "KeeperKeepsTheSlice", run: keeperSuite("keeps-the-slice"),
			fails: []string{"PositionsAreStoredWithTheirGroup"},
			says:  "after the Flush: stored map[], want"},
		brokenCase{name: "KeeperOneSource", run: keeperSuite("one-source"),
			fails: []string{"PositionsAreStoredWithTheirGroup"},
			says:  "positions are per source"},
	)
}
