package file

import (
	"github.com/weir-etl/weir/connector"
)

// A batch claims that the source caught up (connector.Batch.CaughtUp), so
// that the sinks flush now rather than at their max_age, when its read
// reached the end of what its file held and every other file's last read did
// too (or found nothing, or the file waits for a scan). A file that grew
// since its last read makes the claim early, which costs an early flush at
// most (the runtime honours a claim once per max_age).
//
// A batch can end exactly where its file ends, cut by batch_size or
// batch_bytes, and then claims nothing: the next read finds nothing new, and
// no batch would carry the claim. So when a Poll finds nothing to read and
// the last batch made no claim, it returns an empty batch that does, at the
// position its file was read to.

// othersAtEnd reports whether every file but f was read to its end (as far
// as it was then) or cannot be read now (a file not named yet has no record
// to read). Called with mu held.
func (s *Source) othersAtEnd(f *file) bool {
	for _, g := range s.order {
		if g != f && g.name != "" && !g.atEnd && !g.idle && !g.paused {
			return false
		}
	}
	return true
}

// caughtUp fills b with an empty batch claiming the source caught up, and
// reports true, if the last batch returned made no claim and its file is
// still read from.
func (s *Source) caughtUp(b *connector.Batch) bool {
	if !s.owed {
		return false
	}
	s.owed = false
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.last
	if f == nil || s.files[f.part] != f || f.gone {
		return false
	}
	b.Reset()
	b.Partition, b.End, b.CaughtUp = f.part, connector.Position(f.reported), true
	return true
}
