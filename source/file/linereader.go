package file

import (
	"bytes"
	"fmt"
	"io"

	"github.com/weir-etl/weir/internal/fileformat"
)

// lineStatus says what lineReader.next found.
type lineStatus uint8

const (
	lineNone    lineStatus = iota // no complete record yet (end of file so far)
	lineOK                        // a complete record
	lineTooLong                   // a record longer than maxLine (not consumed)
	lineSkipped                   // a record longer than maxLine was consumed and dropped
)

// csvState is where the CSV framing stands inside a record (RFC 4180): only
// a line end outside a quoted field ends a record.
type csvState uint8

const (
	csvFieldStart csvState = iota // at the start of a field
	csvUnquoted                   // inside an unquoted field
	csvQuoted                     // inside a quoted field
	csvQuote                      // just after a quote inside a quoted field: its end, or the first of ""
)

// bom is the UTF-8 byte order mark, which spreadsheet exports put at the start
// of a file.
var bom = fileformat.BOM

// lineReader splits a file into records without copying them: a returned
// record is a slice of the read buffer, and the buffer is handed over to the
// records that reference it. Once any record of a buffer has been returned
// the buffer is never written again; the next read that needs room allocates
// a fresh one and moves only the unfinished record into it. So each byte is
// copied at most once (from the kernel), plus the tail of a record that
// straddles two reads.
//
// A record ends at a '\n' (for CSV, one outside a quoted field: a quoted field
// may hold line breaks). It is complete only when that '\n' has been read: an
// unterminated last record stays in the buffer, unreported, and pos does not
// move past it, unless final is set (the file is finished: mode once, or a
// rotated file being let go), when the end of the file ends it too.
type lineReader struct {
	src     io.ReaderAt
	bufSize int
	maxLine int
	skip    bool // drop over-long records instead of reporting lineTooLong
	csv     bool // quote-aware framing
	delim   byte // the CSV delimiter
	final   bool // the end of the file ends the last record
	// verify, if set, is asked after each read whether the file still holds
	// the bytes it held (it was not truncated and written again meanwhile);
	// end is the offset just after the bytes read. When it says no, the
	// bytes are not kept: they may be the new content at the old offsets.
	verify func(end int64) bool
	// sizeHint is the file's size when last looked at, or 0. A fresh buffer
	// is no larger than what is left to read (at least minBuffer): a source
	// following many small files must not hold a full buffer for each.
	sizeHint int64

	buf    []byte
	r, w   int   // buf[r:w] is read from the file but not yet returned
	off    int64 // file offset of buf[0]
	shared bool  // some of buf has been returned and may still be referenced

	skipping bool  // inside an over-long record being dropped
	skipFrom int64 // where that record started

	scanned int      // CSV: buf[r:r+scanned] was scanned for the record's end
	state   csvState // CSV: the framing state after the scanned bytes
}

func (l *lineReader) reset(pos int64) {
	if l.shared {
		l.buf, l.shared = nil, false
	}
	l.r, l.w, l.off = 0, 0, pos
	l.skipping = false
	l.scanned, l.state = 0, csvFieldStart
}

// rewind makes the next record start at pos if the buffer still holds the
// bytes from there on, and reports whether it does.
func (l *lineReader) rewind(pos int64) bool {
	if l.skipping || pos < l.off || pos > l.readPos() {
		return false
	}
	l.r = int(pos - l.off)
	l.scanned, l.state = 0, csvFieldStart
	return true
}

// pos is the offset just after the last record returned or skipped: the
// position to commit once the records before it are safe.
func (l *lineReader) pos() int64 {
	if l.skipping {
		return l.skipFrom
	}
	return l.off + int64(l.r)
}

// readPos is the offset of the next byte to read from the file.
func (l *lineReader) readPos() int64 { return l.off + int64(l.w) }

// pending reports whether bytes were read that no returned record holds yet
// (a complete record not yet returned, or the start of an unfinished one).
func (l *lineReader) pending() bool { return l.w > l.r }

// unread gives back the record just returned, which started at start, so
// that the next call returns it again.
func (l *lineReader) unread(start int64) {
	l.r = int(start - l.off)
	l.scanned, l.state = 0, csvFieldStart
}

// end returns the index in buf[r:w] of the '\n' that ends the next record, or
// -1 when the buffer holds no complete record.
func (l *lineReader) end() int {
	b := l.buf[l.r:l.w]
	if !l.csv {
		return bytes.IndexByte(b, '\n')
	}
	i, st := l.scanned, l.state
	if i == 0 && l.off+int64(l.r) == 0 {
		// A byte order mark is not part of the first field.
		if len(b) < len(bom) && bytes.HasPrefix(bom, b) {
			return -1
		}
		if bytes.HasPrefix(b, bom) {
			i = len(bom)
		}
	}
	for ; i < len(b); i++ {
		c := b[i]
		switch st {
		case csvQuoted:
			j := bytes.IndexByte(b[i:], '"')
			if j < 0 {
				i = len(b) - 1
				continue
			}
			i += j
			st = csvQuote
			continue
		case csvQuote:
			if c == '"' {
				st = csvQuoted // a doubled quote
				continue
			}
		case csvFieldStart:
			if c == '"' {
				st = csvQuoted
				continue
			}
		}
		// Outside quotes (a malformed "a"b goes on as unquoted, for the
		// parser to report).
		switch c {
		case '\n':
			l.scanned, l.state = 0, csvFieldStart
			return i
		case l.delim:
			st = csvFieldStart
		default:
			st = csvUnquoted
		}
	}
	l.scanned, l.state = len(b), st
	return -1
}

// consumed notes that the framing scan restarts at r after r moved.
func (l *lineReader) consumed() { l.scanned = 0 }

// next returns the next record (without its '\n') and the offset it starts
// at. For lineTooLong and lineSkipped, n is the record's length so far.
func (l *lineReader) next() (line []byte, start int64, n int64, st lineStatus, err error) {
	for {
		if i := l.end(); i >= 0 {
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
			// Drop what is buffered of the over-long record (its framing state
			// goes on).
			l.r = l.w
			l.consumed()
		case l.w-l.r > l.maxLine:
			start := l.off + int64(l.r)
			if !l.skip {
				return nil, start, int64(l.w - l.r), lineTooLong, nil
			}
			l.skipping, l.skipFrom = true, start
			l.r = l.w
			l.consumed()
		}
		got, err := l.fill()
		if err != nil {
			return nil, 0, 0, lineNone, err
		}
		if got > 0 {
			continue
		}
		if !l.final {
			return nil, 0, 0, lineNone, nil
		}
		// The file is finished: its end ends the last record.
		start := l.off + int64(l.r)
		switch {
		case l.skipping:
			l.skipping = false
			return nil, l.skipFrom, l.readPos() - l.skipFrom, lineSkipped, nil
		case l.w == l.r:
			return nil, 0, 0, lineNone, nil
		}
		line := l.buf[l.r:l.w:l.w]
		l.r = l.w
		l.consumed()
		l.state = csvFieldStart
		l.shared = true
		return line, start, int64(len(line)), lineOK, nil
	}
}

// minBuffer is the smallest fresh read buffer.
const minBuffer = 4096

// freshSize is the size of a fresh buffer for reading from off.
func (l *lineReader) freshSize(off int64) int {
	if left := l.sizeHint - off; left >= 0 && left < int64(l.bufSize) {
		return max(int(left)+minBuffer/2, min(minBuffer, l.bufSize))
	}
	return l.bufSize
}

// fill reads more of the file after buf[w], making room first.
func (l *lineReader) fill() (int, error) {
	pending := l.w - l.r
	switch {
	case l.buf == nil:
		l.buf = make([]byte, l.freshSize(l.off))
	case pending == 0:
		l.off += int64(l.w)
		l.r, l.w = 0, 0
		if l.shared || len(l.buf) < l.freshSize(l.off) {
			l.buf, l.shared = make([]byte, l.freshSize(l.off)), false
		}
	case len(l.buf)-l.w < max(l.bufSize/8, 64):
		// Little room left: move the unfinished record to the front, into a
		// new buffer if the old one is referenced or too small for the record.
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
	if l.src == nil {
		return 0, nil // a file whose content is gone (truncated): nothing more to read
	}
	n, err := l.src.ReadAt(l.buf[l.w:], l.off+int64(l.w))
	if n > 0 && l.verify != nil && !l.verify(l.off+int64(l.w+n)) {
		return 0, nil
	}
	l.w += n
	if err != nil && err != io.EOF {
		return n, fmt.Errorf("reading at byte %d: %w", l.off+int64(l.w), err)
	}
	return n, nil
}
