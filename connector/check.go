package connector

import "context"

// Checker is an optional interface for a Source or Sink whose settings can
// be wrong in a way only the world outside the file shows: a path that
// matches no file, a directory that cannot be made because a file is in the
// way, a certificate file that cannot be read.
//
// `weir validate` and `weir run` call Check right after the component is
// built, before anything is opened, so that everything run would refuse
// before reading a record, validate refuses too, with the same words at the
// option's line of the file (`weir validate --offline` and `weir test` skip
// it). Check must change nothing and connect to nothing: a peer that is down
// is not a configuration error (the connector waits for it at Open, up to its
// connect_timeout). It returns nil, or a *FieldError per option at fault
// (several joined with errors.Join), each naming the fix; Open may find the
// same faults again (the world changes between the two), in the same words.
type Checker interface {
	Check(ctx context.Context) error
}
