package postgres

// ArmCommitSteps sets the function the sink calls at each step of a group's
// transaction (nil disarms it), for the crash points of the exactly-once
// suite.
func ArmCommitSteps(s *Sink, step func(string)) { s.step = step }

// AheadCounts returns how many sealed groups committed on the connection that
// copied them ahead, and how many copied ahead went the classic way after all.
func AheadCounts(s *Sink) (committed, again int64) {
	return s.aheadCommitted.Load(), s.aheadAgain.Load()
}

// OpenConns is how many of the sink's connections are in use.
func OpenConns(s *Sink) int32 { return s.pool.Stat().AcquiredConns() }
