package pipeline

// SetPauseHook sets the backpressure hook for a test; call it before Run and
// reset it with nil after.
func SetPauseHook(f func(source string, batches, bytes int64)) { pauseHook = f }
