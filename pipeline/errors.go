package pipeline

import (
	"errors"
	"fmt"
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
	// Partitions whose committed position stops before data that was read,
	// as "source/partition".
	Partitions []string
	// InFlight is the batches read and never resolved.
	InFlight int64
	// Failing lists the sinks failing when the run stopped.
	Failing []SinkFailure
}

func (e *IncompleteError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "pipeline: stopped with data read but not delivered (it is read again next time; everything durable was committed): %d partitions behind", len(e.Partitions))
	if len(e.Partitions) > 0 {
		shown := e.Partitions[:min(len(e.Partitions), 5)]
		fmt.Fprintf(&b, " (%s", strings.Join(shown, ", "))
		if len(e.Partitions) > len(shown) {
			fmt.Fprintf(&b, ", and %d more", len(e.Partitions)-len(shown))
		}
		b.WriteString(")")
	}
	if e.InFlight > 0 {
		fmt.Fprintf(&b, ", %d batches unresolved", e.InFlight)
	}
	for _, f := range e.Failing {
		fmt.Fprintf(&b, "; sink %s failing for %v: %s", f.Sink, roughly(time.Duration(f.FailingForMillis)*time.Millisecond), f.Error)
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
