package pipeline

import (
	"errors"
	"fmt"
	"github.com/weir-etl/weir/internal/words"
	"strings"
	"time"

	"github.com/weir-etl/weir/checkpoint"
)

// ErrSpec is wrapped by every error that Run returns for an invalid Spec.
var ErrSpec = errors.New("pipeline: invalid spec")

// Problem is one thing wrong with a Spec, as Validate reports it: which
// component, which of its settings, and what to do about it.
type Problem struct {
	// Kind is "source", "transform", "sink", "checkpoint" or "metrics"; empty
	// for the Spec as a whole (no sources, no sinks).
	Kind string
	// Name is the component's name; empty for checkpoint and metrics.
	Name string
	// Field is the setting at fault by its name in a pipeline file, as a path
	// below the component: "inputs[1]", "dead_letter", "batch.max_records",
	// "outputs.eu". Empty means the component as a whole. For the Spec as a
	// whole it is the section: "sources" or "sinks".
	Field string
	// Msg says what is wrong and how to fix it. It does not repeat the
	// component or the field.
	Msg string
}

// String formats p as `sink "out": dead_letter: message`.
func (p Problem) String() string {
	var b strings.Builder
	switch p.Kind {
	case "source", "transform", "sink":
		fmt.Fprintf(&b, "%s %q: ", p.Kind, p.Name)
	case "":
	default:
		b.WriteString(p.Kind + ": ")
	}
	if p.Field != "" {
		b.WriteString(p.Field + ": ")
	}
	b.WriteString(p.Msg)
	return b.String()
}

// SpecError is the error Run returns for an invalid Spec: every problem
// Validate found. It wraps ErrSpec.
type SpecError struct {
	Problems []Problem
}

// Error prints the problem, or a count and then one problem per line.
func (e *SpecError) Error() string {
	if len(e.Problems) == 1 {
		return ErrSpec.Error() + ": " + e.Problems[0].String()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d problems:", ErrSpec, len(e.Problems))
	for _, p := range e.Problems {
		b.WriteString("\n" + p.String())
	}
	return b.String()
}

// Unwrap returns ErrSpec, for errors.Is.
func (e *SpecError) Unwrap() error { return ErrSpec }

// IncompleteError is returned by Run when it stopped gracefully (its context
// was cancelled) with data read but not delivered: a sink still failing, or
// writes the shutdown timeout cut short. Everything durable was committed;
// what is listed is read again next time.
type IncompleteError struct {
	// Partitions whose committed position stops before data that was read.
	Partitions []PartitionRef
	// InFlight is the batches read and never resolved.
	InFlight int64
	// Failing lists the sinks failing when the run stopped.
	Failing []SinkFailure
}

func (e *IncompleteError) Error() string {
	var b strings.Builder
	b.WriteString("pipeline: stopped with data read but not delivered (it is read again next time; everything durable was committed)")
	if len(e.Partitions) > 0 {
		fmt.Fprintf(&b, ": %s behind (%s)", words.Plural(len(e.Partitions), "partition"), partitionList(e.Partitions, 5))
	}
	if e.InFlight > 0 {
		fmt.Fprintf(&b, ", %s unresolved", words.Count(e.InFlight, "batch", "batches"))
	}
	for _, f := range e.Failing {
		if f.Waiting {
			fmt.Fprintf(&b, "; sink %s waits: %s", f.Sink, f.Error)
			continue
		}
		fmt.Fprintf(&b, "; sink %s failing for %v: %s", f.Sink, roughly(time.Duration(f.FailingForMillis)*time.Millisecond), f.Error)
	}
	return b.String()
}

// partitionList names at most max partitions, grouped by source, as
// "source orders: orders/0, orders/1; source files: /var/log/a.log, and 3
// more": a partition's own name may hold a slash, so it is never joined to
// its source's with one.
func partitionList(ps []PartitionRef, max int) string {
	var b strings.Builder
	shown := ps[:min(len(ps), max)]
	for i, p := range shown {
		switch {
		case i == 0:
			fmt.Fprintf(&b, "source %s: %s", p.Source, p.Partition)
		case p.Source != shown[i-1].Source:
			fmt.Fprintf(&b, "; source %s: %s", p.Source, p.Partition)
		default:
			b.WriteString(", " + p.Partition)
		}
	}
	if len(ps) > len(shown) {
		fmt.Fprintf(&b, ", and %d more", len(ps)-len(shown))
	}
	return b.String()
}

// roughly rounds d for a message: to 100ms under 10s, to the second above.
func roughly(d time.Duration) time.Duration {
	if d < 10*time.Second {
		return d.Round(100 * time.Millisecond)
	}
	return d.Round(time.Second)
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
