package iceberg

// The steps of a commit at which the tests stop a sink as a crash would
// (see crash_test.go): the data files written but not committed; the
// snapshot committed but Flush not yet returned; and, in the deliberately
// broken build only, between the snapshot of the data and that of its
// positions.
const (
	stepFilesWritten = "files-written"
	stepCommitted    = "committed"
	stepPositions    = "positions"
)

// step calls the test hook, if any: a hook that returns an error stops the
// commit there, as if the process had died, the sink then abandoned.
func (s *Sink) step(name string) error {
	if s.hook == nil {
		return nil
	}
	return s.hook(name)
}
