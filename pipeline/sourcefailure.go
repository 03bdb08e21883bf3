package pipeline

import (
	"fmt"
	"time"

	"github.com/weir-etl/weir/pipeline/view"
)

// FailureReporter is an optional interface of a connector.Source that waits
// out a failure on its own instead of returning it from Poll: an object
// store or database that stops answering, whose requests the source retries
// with backoff until it answers again. With it the failure is as visible as
// a failing sink's: /readyz names the source once it has been failing for
// stall_warning, /debug/stalls lists it, and the status shows it.
//
// Failing returns since when the source has been failing, how many attempts
// have failed, and the last error; a zero time when it is not failing. It is
// called from HTTP handlers' goroutines, concurrently with Poll, so it must
// be safe for concurrent use and fast. Defined here, like LagReporter, so
// that the connector API is unchanged until more sources need it.
type FailureReporter interface {
	Failing() (since time.Time, attempts int, err error)
}

// SourceFailure is a failure a source is waiting out (view.SourceFailure).
type SourceFailure = view.SourceFailure

// failure returns the source's failure now, if it reports one.
func (s *sourceRunner) failure(now time.Time) (SourceFailure, bool) {
	fr, ok := s.src.(FailureReporter)
	if !ok {
		return SourceFailure{}, false
	}
	since, n, err := fr.Failing()
	if since.IsZero() || err == nil {
		return SourceFailure{}, false
	}
	return SourceFailure{Source: s.spec.Name, Since: since, FailingForMillis: now.Sub(since).Milliseconds(), Attempts: n, Error: err.Error()}, true
}

// sourceFailures lists the sources failing now, for /debug/stalls as
// entries of their own (no partition), after the partitions' stalls.
func (rt *runtime) sourceFailures(dst []Stall) []Stall {
	now := rt.now()
	for _, s := range rt.sources {
		if f, ok := s.failure(now); ok {
			dst = append(dst, Stall{Source: f.Source, AgeMillis: f.FailingForMillis, Status: "source_failing",
				Note: fmt.Sprintf("the source cannot read and retries (%d attempts): %s", f.Attempts, f.Error)})
		}
	}
	return dst
}
