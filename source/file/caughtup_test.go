package file

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// claims polls until n records were read and returns each batch as
// "<file>:<records>/<caught up>".
func (h *harness) claims(n int) []string {
	h.t.Helper()
	var out []string
	for got := 0; got < n; {
		b, err := h.poll()
		if err != nil {
			h.t.Fatalf("poll after %d records: %v", got, err)
		}
		name := "-"
		if f := h.src.files[b.Partition]; f != nil {
			name = strings.TrimSuffix(filepath.Base(f.path), ".log")
		}
		out = append(out, fmt.Sprintf("%s:%d/%t", name, len(b.Records), b.CaughtUp))
		got += len(b.Records)
	}
	return out
}

// Guarantee: a batch claims that the source caught up (so that the sinks
// flush now) only once every file was read to its end, not when one of
// several files is; an append read later claims it again.
func TestCaughtUpWhenEveryFileIsRead(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "a.log"), strings.Repeat("a\n", 10))
	write(t, filepath.Join(dir, "b.log"), strings.Repeat("b\n", 3))
	h := open(t, testConfig(dir, func(c *Config) { c.Mode, c.BatchSize = "tail", 4 }))
	if got, want := fmt.Sprint(h.claims(13)), "[a:4/false b:3/false a:4/false a:2/true]"; got != want {
		t.Fatalf("batches %s, want %s", got, want)
	}
	appendTo(t, filepath.Join(dir, "b.log"), "b\n")
	if got, want := fmt.Sprint(h.claims(1)), "[b:1/true]"; got != want {
		t.Fatalf("batches after an append %s, want %s", got, want)
	}
	if err := h.pollFor(50 * time.Millisecond); err != context.DeadlineExceeded {
		t.Fatalf("poll with nothing new: %v, want nothing (DeadlineExceeded)", err)
	}
}

// Guarantee: a batch that batch_size ends exactly at the end of the file
// cannot know it is the last; the next Poll, which finds nothing, then
// returns an empty batch that claims the source caught up, at the position
// read to, and claims nothing more until more is read.
func TestCaughtUpAfterABatchEndingAtTheEnd(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "a.log"), strings.Repeat("a\n", 8))
	h := open(t, testConfig(dir, func(c *Config) { c.Mode, c.BatchSize = "tail", 4 }))
	if got, want := fmt.Sprint(h.claims(8)), "[a:4/false a:4/false]"; got != want {
		t.Fatalf("batches %s, want %s", got, want)
	}
	b, err := h.poll()
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Records) != 0 || !b.CaughtUp || b.End != 16 {
		t.Fatalf("batch of %d records ending at %d, caught up %t; want an empty one at 16 that claims it", len(b.Records), b.End, b.CaughtUp)
	}
	if err := h.pollFor(50 * time.Millisecond); err != context.DeadlineExceeded {
		t.Fatalf("poll with nothing new: %v, want nothing (DeadlineExceeded)", err)
	}
}

// Guarantee: in mode once too, the batch that reads the last file to its
// end claims the source caught up.
func TestCaughtUpInModeOnce(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "a.log"), strings.Repeat("a\n", 3))
	h := open(t, testConfig(dir, nil))
	if got, want := fmt.Sprint(h.claims(3)), "[a:3/true]"; got != want {
		t.Fatalf("batches %s, want %s", got, want)
	}
}
