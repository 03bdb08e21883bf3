package file

import (
	"bytes"
	"fmt"
	"io"
)

// lineStatus says what lineReader.next found.
type lineStatus uint8

const (
	lineNone    lineStatus = iota // no complete line yet (end of file so far)
	lineOK                        // a complete line
	lineTooLong                   // a line longer than maxLine (not consumed)
	lineSkipped                   // a line longer than maxLine was consumed and dropped
)

// lineReader splits a file into lines without copying them: a returned line is
// a slice of the read buffer, and the buffer is handed over to the records
// that reference it. Once any line of a buffer has been returned the buffer is
// never written again; the next read that needs room allocates a fresh one and
// moves only the unfinished line into it. So each byte is copied at most once
// (from the kernel), plus the tail of a line that straddles two reads.
//
// A line is complete only when its '\n' has been read: an unterminated last
// line stays in the buffer, unreported, and pos does not move past it.
type lineReader struct {
	src     io.ReaderAt
	bufSize int
	maxLine int
	skip    bool // drop over-long lines instead of reporting lineTooLong

	buf    []byte
	r, w   int   // buf[r:w] is read from the file but not yet returned
	off    int64 // file offset of buf[0]
	shared bool  // some of buf has been returned and may still be referenced

	skipping bool  // inside an over-long line being dropped
	skipFrom int64 // where that line started
}

func (l *lineReader) reset(pos int64) {
	if l.shared {
		l.buf, l.shared = nil, false
	}
	l.r, l.w, l.off = 0, 0, pos
	l.skipping = false
}

// pos is the offset just after the last line returned or skipped: the position
// to commit once the lines before it are safe.
func (l *lineReader) pos() int64 {
	if l.skipping {
		return l.skipFrom
	}
	return l.off + int64(l.r)
}

// readPos is the offset of the next byte to read from the file.
func (l *lineReader) readPos() int64 { return l.off + int64(l.w) }

// buffered reports whether a complete line is buffered but not yet returned.
func (l *lineReader) buffered() bool { return bytes.IndexByte(l.buf[l.r:l.w], '\n') >= 0 }

// unread gives back the line just returned, which started at start, so that
// the next call returns it again.
func (l *lineReader) unread(start int64) { l.r = int(start - l.off) }

// next returns the next line (without its '\n') and the offset it starts at.
// For lineTooLong and lineSkipped, n is the line's length so far.
func (l *lineReader) next() (line []byte, start int64, n int64, st lineStatus, err error) {
	for {
		if i := bytes.IndexByte(l.buf[l.r:l.w], '\n'); i >= 0 {
			start := l.off + int64(l.r)
			if l.skipping {
				l.r += i + 1
				l.skipping = false
				return nil, l.skipFrom, l.off + int64(l.r) - 1 - l.skipFrom, lineSkipped, nil
			}
			if i > l.maxLine {
				if !l.skip {
					return nil, start, int64(i), lineTooLong, nil
				}
				l.r += i + 1
				return nil, start, int64(i), lineSkipped, nil
			}
			line := l.buf[l.r : l.r+i : l.r+i]
			l.r += i + 1
			l.shared = true
			return line, start, int64(i), lineOK, nil
		}
		switch {
		case l.skipping:
			// Drop what is buffered of the over-long line.
			l.r = l.w
		case l.w-l.r > l.maxLine:
			start := l.off + int64(l.r)
			if !l.skip {
				return nil, start, int64(l.w - l.r), lineTooLong, nil
			}
			l.skipping, l.skipFrom = true, start
			l.r = l.w
		}
		got, err := l.fill()
		if err != nil {
			return nil, 0, 0, lineNone, err
		}
		if got == 0 {
			return nil, 0, 0, lineNone, nil
		}
	}
}

// fill reads more of the file after buf[w], making room first.
func (l *lineReader) fill() (int, error) {
	pending := l.w - l.r
	switch {
	case l.buf == nil:
		l.buf = make([]byte, l.bufSize)
	case pending == 0:
		l.off += int64(l.w)
		l.r, l.w = 0, 0
		if l.shared {
			l.buf, l.shared = make([]byte, l.bufSize), false
		}
	case len(l.buf)-l.w < max(l.bufSize/8, 64):
		// Little room left: move the unfinished line to the front, into a new
		// buffer if the old one is referenced or too small for the line.
		size := l.bufSize
		for size-pending < max(l.bufSize/2, 64) {
			size *= 2
		}
		if l.shared || size > len(l.buf) {
			nb := make([]byte, size)
			copy(nb, l.buf[l.r:l.w])
			l.buf, l.shared = nb, false
		} else {
			copy(l.buf, l.buf[l.r:l.w])
		}
		l.off += int64(l.r)
		l.r, l.w = 0, pending
	}
	n, err := l.src.ReadAt(l.buf[l.w:], l.off+int64(l.w))
	l.w += n
	if err != nil && err != io.EOF {
		return n, fmt.Errorf("reading at byte %d: %w", l.off+int64(l.w), err)
	}
	return n, nil
}
