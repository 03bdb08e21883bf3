// Package conformance holds the shared suites every weir connector must pass:
// TestSource and TestSink. A connector's own test calls them with a harness
// that builds instances and, for sinks, reads back what was made durable.
//
// The suites check weir's contract from the connector's side: a position is
// committed only up to the first failed batch, a restarted source resumes
// there and replays the failed data, Seek replays, commits never regress, and a
// sink shows what it flushed and never what it aborted.
package conformance
