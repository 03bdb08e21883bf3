package s3

import (
	"bytes"
	"io"
)

// framer cuts records out of a stream (an object's bytes, decompressed):
// a record ends at a '\n' (for CSV, one outside a quoted field), or at the
// end of the stream. Records are slices of its buffer; once one is returned
// the buffer is never written again (a fresh one takes the unfinished
// record), so records need no copy.
type framer struct {
	r       io.Reader
	bufSize int
	maxLine int
	csv     bool
	delim   byte

	buf  []byte
	i, n int   // buf[i:n] is read but not returned
	off  int64 // stream offset of buf[0]
	eof  bool
	used bool // a record of buf was returned

	scanned int      // CSV: buf[i:i+scanned] was scanned
	state   csvState // CSV: the state after it
}

type csvState uint8

const (
	csvFieldStart csvState = iota
	csvUnquoted
	csvQuoted
	csvQuote
)

// frame is what framer.next found.
type frame uint8

const (
	frameRecord  frame = iota // a record
	frameEnd                  // the end of the stream
	frameTooLong              // a record longer than maxLine, skipped
)

// pos is the stream offset after the last record returned.
func (f *framer) pos() int64 { return f.off + int64(f.i) }

// next returns the next record (without its '\n') and where it starts.
// For frameTooLong the record was consumed; start is where it began.
// A read error is returned as it is; calling next again goes on.
func (f *framer) next() ([]byte, int64, frame, error) {
	skipping, skipFrom := false, int64(0)
	for {
		if j := f.end(); j >= 0 {
			start := f.pos()
			rec := f.buf[f.i : f.i+j : f.i+j]
			f.i += j + 1
			f.scanned, f.state = 0, csvFieldStart
			if skipping || j > f.maxLine {
				if skipping {
					start = skipFrom
				}
				return nil, start, frameTooLong, nil
			}
			f.used = true
			return rec, start, frameRecord, nil
		}
		if f.n-f.i > f.maxLine {
			// Drop what is buffered of an over-long record and go on to its end.
			if !skipping {
				skipping, skipFrom = true, f.pos()
			}
			f.off += int64(f.i + (f.n - f.i))
			f.i, f.n = 0, 0
			f.scanned = 0
		}
		if f.eof {
			if f.i == f.n && !skipping {
				return nil, f.pos(), frameEnd, nil
			}
			start := f.pos()
			if skipping {
				f.i = f.n
				return nil, skipFrom, frameTooLong, nil
			}
			rec := f.buf[f.i:f.n:f.n]
			f.i = f.n
			f.used = true
			if len(rec) > f.maxLine {
				return nil, start, frameTooLong, nil
			}
			return rec, start, frameRecord, nil
		}
		if err := f.fill(); err != nil {
			return nil, f.pos(), frameEnd, err
		}
	}
}

// fill reads more, making room first.
func (f *framer) fill() error {
	pending := f.n - f.i
	if f.buf == nil || f.used || len(f.buf)-f.n < f.bufSize/4 {
		size := f.bufSize
		for size-pending < f.bufSize/2 {
			size *= 2
		}
		nb := make([]byte, size)
		copy(nb, f.buf[f.i:f.n])
		f.off += int64(f.i)
		f.buf, f.i, f.n, f.used = nb, 0, pending, false
	}
	m, err := f.r.Read(f.buf[f.n:])
	f.n += m
	if err == io.EOF {
		f.eof = true
		return nil
	}
	return err
}

// end returns the index in buf[i:n] of the '\n' that ends the next record,
// or -1.
func (f *framer) end() int {
	b := f.buf[f.i:f.n]
	if !f.csv {
		return bytes.IndexByte(b, '\n')
	}
	j, st := f.scanned, f.state
	for ; j < len(b); j++ {
		c := b[j]
		switch st {
		case csvQuoted:
			k := bytes.IndexByte(b[j:], '"')
			if k < 0 {
				j = len(b) - 1
				continue
			}
			j += k
			st = csvQuote
			continue
		case csvQuote:
			if c == '"' {
				st = csvQuoted
				continue
			}
		case csvFieldStart:
			if c == '"' {
				st = csvQuoted
				continue
			}
		}
		switch c {
		case '\n':
			return j
		case f.delim:
			st = csvFieldStart
		default:
			st = csvUnquoted
		}
	}
	f.scanned, f.state = len(b), st
	return -1
}
