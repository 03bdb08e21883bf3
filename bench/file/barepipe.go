package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/weir-etl/weir/record"
)

// The pipelined bare loop ("filterp"): the bare filter loop's work split the
// way weir splits it, so that reading, deciding and writing overlap. One
// goroutine reads and cuts lines, one decides, and the caller's writes and
// fsyncs chunks; batches of up to barePipeBatch lines (weir's poll batch)
// go from one to the next over channels of capacity 4, as between weir's
// stages. A read needs a fresh buffer, as in weir: the lines of a buffer are
// in flight until the writer has them. Positions advance at whole batches.
//
// It answers one question the single-goroutine loop cannot: what running a
// pipeline's stages on different goroutines costs by itself, before any of
// weir's bookkeeping. Its CPU against the bare loop's is the price of the
// overlap; weir's against its own is what weir adds.

const barePipeBatch = 1000 // source/file.DefaultBatchSize

// pipeBatch is one hand-off: lines of input file file, and the file's offset
// after the last of them.
type pipeBatch struct {
	lines [][]byte
	file  int
	end   int64
}

// barePipelined runs the pipelined filter over the .ndjson files in in,
// writing under out.
func barePipelined(in, out string) error {
	paths, err := filepath.Glob(filepath.Join(in, "*.ndjson"))
	if err != nil {
		return err
	}
	o := &bareOut{dir: filepath.Join(out, "a"), buf: make([]byte, 0, bareWriteBytes)}
	if err := os.MkdirAll(o.dir, 0o755); err != nil {
		return err
	}
	pos, err := openPositions(out, paths)
	if err != nil {
		return err
	}
	defer pos.f.Close()

	read, decided := make(chan *pipeBatch, 4), make(chan *pipeBatch, 4)
	free := make(chan *pipeBatch, 16) // batches back from the writer, for reuse
	errs := make(chan error, 2)
	stop := make(chan struct{}) // closed when the writer ends, however it ends
	get := func() *pipeBatch {
		select {
		case b := <-free:
			b.lines = b.lines[:0]
			return b
		default:
			return &pipeBatch{lines: make([][]byte, 0, barePipeBatch)}
		}
	}
	send := func(c chan<- *pipeBatch, b *pipeBatch) bool {
		select {
		case c <- b:
			return true
		case <-stop:
			return false
		}
	}

	go func() { // the reader
		defer close(read)
		errs <- pipeRead(paths, get, func(b *pipeBatch) bool { return send(read, b) })
	}()
	go func() { // the decider
		defer close(decided)
		errs <- pipeDecide(paths, read, func(b *pipeBatch) bool { return send(decided, b) })
	}()

	durable := func() error {
		if err := o.finish(); err != nil {
			return err
		}
		return pos.persist()
	}
	werr := func() error { // the writer
		for b := range decided {
			for _, line := range b.lines {
				if err := o.add(line); err != nil {
					return err
				}
			}
			pos.at[b.file] = b.end
			clear(b.lines)
			select {
			case free <- b:
			default:
			}
			if o.full() {
				if err := durable(); err != nil {
					return err
				}
			}
		}
		return durable()
	}()
	close(stop) // the writer is done: the others are too, or must stop
	for range 2 {
		if err := <-errs; err != nil {
			return err
		}
	}
	return werr
}

// pipeDecide keeps the lines of each batch from read whose id is even and
// hands the batch on. It stops early when emit refuses a batch.
func pipeDecide(paths []string, read <-chan *pipeBatch, emit func(*pipeBatch) bool) error {
	names := []string{"id"}
	vals := make([]record.Value, 1)
	found := make([]bool, 1)
	for b := range read {
		kept := b.lines[:0]
		for _, line := range b.lines {
			rec := record.New(line)
			if err := rec.Lookup(names, vals, found); err != nil {
				return fmt.Errorf("%s before %d: %v", paths[b.file], b.end, err)
			}
			id, err := vals[0].Int()
			if err != nil || !found[0] {
				return fmt.Errorf("%s before %d: id is not an integer", paths[b.file], b.end)
			}
			if id%2 == 0 {
				kept = append(kept, line)
			}
		}
		clear(b.lines[len(kept):])
		b.lines = kept
		if !emit(b) {
			return nil
		}
	}
	return nil
}

// pipeRead reads paths in turn, each read into a fresh buffer that starts
// with the partial line the read before left, and hands on batches of whole
// lines. It stops early when emit refuses a batch.
func pipeRead(paths []string, get func() *pipeBatch, emit func(*pipeBatch) bool) error {
	var rest []byte
	for fi, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		var off int64 // file offset after the last line handed on
		b := get()
		b.file = fi
		for {
			buf := make([]byte, bareReadBytes)
			w := copy(buf, rest)
			n, err := f.Read(buf[w:])
			if err != nil && !errors.Is(err, io.EOF) {
				f.Close()
				return err
			}
			if n == 0 {
				if w != 0 {
					f.Close()
					return fmt.Errorf("%s: the last line has no line end", p)
				}
				break
			}
			w += n
			r := 0
			for {
				i := bytes.IndexByte(buf[r:w], '\n')
				if i < 0 {
					break
				}
				line := buf[r : r+i : r+i]
				r += i + 1
				off += int64(i + 1)
				if len(line) > 0 {
					b.lines = append(b.lines, line)
				}
				if len(b.lines) == barePipeBatch {
					b.end = off
					if !emit(b) {
						f.Close()
						return nil
					}
					b = get()
					b.file = fi
				}
			}
			if r == 0 && w == len(buf) {
				f.Close()
				return fmt.Errorf("%s: a line longer than %d bytes", p, bareReadBytes)
			}
			rest = buf[r:w]
		}
		f.Close()
		b.end = off
		if !emit(b) {
			return nil
		}
		rest = nil
	}
	return nil
}
