package postgres

// ArmCommitSteps sets the function the sink calls at each step of a group's
// transaction (nil disarms it), for the crash points of the exactly-once
// suite.
func ArmCommitSteps(s *Sink, step func(string)) { s.step = step }
