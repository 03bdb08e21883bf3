//go:build unsafe_eos

package kafka

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// splitTransaction breaks exactly_once on purpose, for the tests that
// must catch it only: with WEIR_UNSAFE_EOS=1 in a binary built with -tags
// unsafe_eos, a group's records are committed in one transaction and its
// positions in the next, outside the data's atomic step. A crash between the
// two leaves committed records that no stored position covers, which the
// replay writes again. The exactly-once suite and the kill loops build this
// variant and assert that they count the duplicates. No normal build
// contains it.
var splitTransaction = os.Getenv("WEIR_UNSAFE_EOS") == "1"

// unsafePause, from WEIR_UNSAFE_EOS_PAUSE (a duration), is how long the
// broken variant waits between its two steps, so that a kill loop lands
// between them often.
var unsafePause, _ = time.ParseDuration(os.Getenv("WEIR_UNSAFE_EOS_PAUSE"))

// unsafeNote says on stderr that the broken variant is between its two
// steps, so that a kill loop can land there for sure.
func unsafeNote() { os.Stderr.WriteString(unsafeMarker + "\n") }

// unsafeMarker is the line unsafeNote writes.
const unsafeMarker = "unsafe_eos: kafka sink: between the data and its positions"

// unsafeSplitTransaction commits the group's records in a transaction of
// their own, before the positions, which go in the next one, when the
// variant is on: deliberately wrong.
func (sg *sealedTxn) unsafeSplitTransaction(pctx context.Context) error {
	if !splitTransaction {
		return nil
	}
	g, k := sg.g, sg.g.k
	if err := g.p.cl.Flush(pctx); err != nil {
		return k.wrap(fmt.Errorf("waiting for acknowledgements: %w", context.Cause(pctx)))
	}
	if err := g.firstErr(); err != nil {
		return k.wrap(k.explainFenced(g.p, err))
	}
	k.at("data-acknowledged")
	if err := g.p.cl.EndTransaction(pctx, kgo.TryCommit); err != nil {
		return k.wrap(fmt.Errorf("committing the transaction: %w", k.explainFenced(g.p, err)))
	}
	k.at("data-committed")
	unsafeNote()
	time.Sleep(unsafePause)
	if err := g.p.cl.BeginTransaction(); err != nil {
		return k.wrap(err)
	}
	return nil
}
