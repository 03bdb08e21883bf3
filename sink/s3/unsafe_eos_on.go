//go:build unsafe_eos

package s3

import (
	"context"
	"os"
)

// publishEarly breaks the commit on purpose, for the test that must
// catch it only: with WEIR_UNSAFE_EOS=1 in a binary built with -tags
// unsafe_eos, a partition's uploads are completed (its objects listed)
// before the PUT of its position object, so the positions are stored
// outside the data's atomic step. A crash between the two leaves listed
// records no stored position covers, and a writer the fence stops has
// already shown its objects. sink/s3's exactly-once suite builds this
// variant and asserts that it says so. No normal build contains it.
var publishEarly = os.Getenv("WEIR_UNSAFE_EOS") == "1"

// unsafePublishEarly completes m's uploads before m is written when the
// variant is on: deliberately wrong.
func (s *Sink) unsafePublishEarly(ctx context.Context, m *manifest) {
	if !publishEarly {
		return
	}
	for _, o := range m.Objects {
		if err := s.complete(ctx, o); err != nil {
			s.log.Warn("s3: completing an upload before its commit failed", "key", o.Key, "err", err)
			continue
		}
		if s.step != nil {
			s.step("published-early")
		}
	}
}
