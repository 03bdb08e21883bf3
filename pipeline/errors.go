package pipeline

import (
	"errors"
	"fmt"

	"github.com/weir-etl/weir/checkpoint"
)

// ErrSpec is wrapped by every error that Run returns for an invalid Spec.
var ErrSpec = errors.New("pipeline: invalid spec")

func specErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrSpec, fmt.Sprintf(format, args...))
}

// HaltError is returned by Run when a failure stopped the pipeline: a sink
// whose policy is Halt gave up on a write, or a record was rejected where no
// replay can help. Nothing at or past Batch was committed.
type HaltError struct {
	Sink      string // the sink that failed; empty for a transform failure
	Source    string
	Partition string // the source's name for the partition
	Batch     checkpoint.BatchID
	Err       error
}

func (e *HaltError) Error() string {
	where := "sink " + e.Sink + " "
	if e.Sink == "" {
		where = ""
	}
	return fmt.Sprintf("pipeline: %shalted at source %s partition %s batch %v: %v", where, e.Source, e.Partition, e.Batch, e.Err)
}

func (e *HaltError) Unwrap() error { return e.Err }
