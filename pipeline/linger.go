package pipeline

import (
	"context"
)

// lingering reports whether the linger check applies: MaxAge would flush no
// later otherwise.
func (s *sinkRunner) lingering() bool {
	return s.spec.Batch.Linger > 0 && s.spec.Batch.Linger < s.spec.Batch.MaxAge
}

// noteInput records the arrival of records and makes sure the linger timer
// runs while the group holds any.
func (s *sinkRunner) noteInput() {
	if !s.lingering() {
		return
	}
	s.lastIn = s.rt.now()
	if len(s.group) > 0 && !s.lingerOn {
		s.linger.Reset(s.spec.Batch.Linger)
		s.lingerOn = true
	}
}

// checkLinger flushes the group if no records arrived for Linger; otherwise
// it waits for the rest of the idle time.
func (s *sinkRunner) checkLinger(ctx context.Context) {
	if len(s.group) == 0 || !s.lingering() {
		return
	}
	idle := s.rt.now().Sub(s.lastIn)
	if idle >= s.spec.Batch.Linger {
		s.flush(ctx)
		return
	}
	s.linger.Reset(s.spec.Batch.Linger - idle)
	s.lingerOn = true
}
