package http

// FailListener closes the source's listener under its server, as a listener
// that fails for good would: Serve returns with an error.
func FailListener(s *Source) error { return s.ln.Close() }
