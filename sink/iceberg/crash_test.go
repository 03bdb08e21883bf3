package iceberg

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/record"
)

// errCrash stops a commit at a step, as the process dying there would.
var errCrash = errors.New("crashed here on purpose")

// offsetRecords returns records of partition in/p with offsets from..to-1,
// each value naming its offset.
func offsetRecords(from, to int) []record.Record {
	var out []record.Record
	for off := from; off < to; off++ {
		r := record.New([]byte(fmt.Sprintf(`{"off":%d}`, off)))
		r.Origin = record.Origin{Source: "in", Partition: "p", Offset: int64(off)}
		out = append(out, r)
	}
	return out
}

func writeGroup(ctx context.Context, s *Sink, from, to int) error {
	if err := s.Write(ctx, offsetRecords(from, to)); err != nil {
		return err
	}
	s.GroupPositions([]connector.GroupPosition{{Source: "in", Partition: "p", Position: connector.Position(to)}})
	return s.Flush(ctx)
}

// heldOffsets returns how often the table holds each offset.
func heldOffsets(t *testing.T, s *Sink) map[int]int {
	t.Helper()
	held := map[int]int{}
	for _, v := range columnValues(t, s, "off") {
		n, err := strconv.Atoi(v)
		if err != nil {
			t.Fatalf("off %q", v)
		}
		held[n]++
	}
	return held
}

// exactlyOnceViolations compares what a sink reports (its stored position
// of in/p) with what its table holds: every offset below the position
// exactly once, none at or above it. A record held beyond the position
// would be written again by the replay that the position asks for; one
// missing below it would never be.
func exactlyOnceViolations(held map[int]int, stored, total int) []string {
	var out []string
	for off := range total {
		n := held[off]
		switch {
		case off < stored && n != 1:
			out = append(out, fmt.Sprintf("offset %d is below the stored position %d and held %d times", off, stored, n))
		case off >= stored && n != 0:
			out = append(out, fmt.Sprintf("offset %d is at or past the stored position %d and held %d times: a replay writes it again", off, stored, n))
		}
	}
	return out
}

// crashAt runs one crash scenario: a group of offsets 0-9 is committed,
// then the commit of 10-19 stops at step (the sink abandoned: no Abort, no
// Close, as after SIGKILL). A new sink over the table reports its stored
// position, which must match what the table holds; it then receives the
// records from 10 on again (more than the runtime would give it: it must
// leave out what it holds itself) and finally holds 0-19 once each, with no
// data file on disk that no snapshot refers to.
func crashAt(t *testing.T, step string) (violations []string) {
	ctx := context.Background()
	// off is a number in the records; a string column holds its text,
	// which the test reads back.
	cfg := sqliteConfig(t.TempDir(), "crash", Column{Name: "off", Type: "string"})
	first := newSink(t, cfg)
	if err := first.Open(ctx); err != nil {
		t.Fatal(err)
	}
	if err := writeGroup(ctx, first, 0, 10); err != nil {
		t.Fatal(err)
	}
	first.hook = func(s string) error {
		if s == step {
			return errCrash
		}
		return nil
	}
	if err := writeGroup(ctx, first, 10, 20); !errors.Is(err, errCrash) {
		t.Fatalf("the commit did not stop at step %s: %v", step, err)
	}
	// Abandoned as it is; only its catalog connection is released, which
	// a dead process's would be too.
	first.release()

	second := openSink(t, cfg)
	got, err := second.StoredPositions(ctx, "in", []string{"p"})
	if err != nil {
		t.Fatal(err)
	}
	stored := int(got["p"])
	violations = append(violations, exactlyOnceViolations(heldOffsets(t, second), stored, 20)...)
	if err := writeGroup(ctx, second, 10, 20); err != nil {
		t.Fatal(err)
	}
	got, _ = second.StoredPositions(ctx, "in", []string{"p"})
	violations = append(violations, exactlyOnceViolations(heldOffsets(t, second), int(got["p"]), 20)...)
	if got["p"] != 20 {
		violations = append(violations, fmt.Sprintf("the stored position is %d after the replay, want 20", got["p"]))
	}
	tbl, committed := committedFiles(t, second)
	onDisk := dataFilesOnDisk(t, tbl)
	if len(onDisk) != len(committed) {
		violations = append(violations, fmt.Sprintf("%d data files on disk, %d in snapshots: orphans left after the clean-up", len(onDisk), len(committed)))
	}
	return violations
}

// TestCrashPoints stops a commit at each of its steps and checks, after a
// restart, that the sink's stored position says exactly what its table
// holds, and that the replay leaves every record in it once.
func TestCrashPoints(t *testing.T) {
	for _, step := range crashSteps() {
		t.Run(step, func(t *testing.T) {
			for _, v := range crashAt(t, step) {
				t.Error(v)
			}
		})
	}
}

// crashSteps are the steps of a commit of a normal build.
func crashSteps() []string { return []string{stepFilesWritten, stepCommitted} }
