package fileformat

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/weir-etl/weir/record"
)

// SplitCSV splits one CSV record into fields, appending them to dst, as RFC
// 4180 reads it: a field is quoted or not; a quoted field may hold the
// delimiter, line breaks and "" (a quote); a quote elsewhere is an error, and
// so is anything but the delimiter after a quoted field's closing quote.
//
// rec is the record as a reader frames it (a line, or lines while a quoted
// field is open), without its final '\n'. One
// '\r' before that '\n' belongs to the line end (CRLF) and is dropped; every
// other byte is kept, line breaks inside quoted fields included, exactly as
// they are in the file (encoding/csv would turn a quoted "\r\n" into "\n").
func SplitCSV(dst []string, rec []byte, delim byte) ([]string, error) {
	rec = TrimCR(rec)
	i := 0
	for {
		if i < len(rec) && rec[i] == '"' {
			i++
			var b []byte
			from := i
			for {
				j := bytes.IndexByte(rec[i:], '"')
				if j < 0 {
					return dst, errors.New("a quoted field is not closed: the record ends inside quotes")
				}
				i += j
				if i+1 < len(rec) && rec[i+1] == '"' {
					b = append(b, rec[from:i+1]...) // "" is one quote
					i += 2
					from = i
					continue
				}
				b = append(b, rec[from:i]...)
				i++
				break
			}
			dst = append(dst, string(b))
			if i == len(rec) {
				return dst, nil
			}
			if rec[i] != delim {
				return dst, fmt.Errorf("%q after the closing quote of field %d: a quoted field must end at a delimiter or the line end (write a quote inside one as \"\")", rec[i], len(dst))
			}
			i++
			continue
		}
		j := i
		for j < len(rec) && rec[j] != delim {
			if rec[j] == '"' {
				return dst, fmt.Errorf("a quote inside unquoted field %d: quote the whole field and double the quote (\"a\"\"b\")", len(dst)+1)
			}
			j++
		}
		dst = append(dst, string(rec[i:j]))
		if j == len(rec) {
			return dst, nil
		}
		i = j + 1
	}
}

// TrimCR drops one carriage return at the end of b: the rest of a CRLF line
// end.
func TrimCR(b []byte) []byte {
	if n := len(b); n > 0 && b[n-1] == '\r' {
		return b[:n-1]
	}
	return b
}

// BOM is the UTF-8 byte order mark, which spreadsheet exports put at the
// start of a file: an encoding mark, not data.
var BOM = []byte("\xEF\xBB\xBF")

// AppendCSVObject appends to b the JSON object of one CSV row: the members
// in the header's order, each field's bytes a JSON string with nothing
// replaced, so that the record is the row as written. header and fields
// have the same length.
func AppendCSVObject(b []byte, header, fields []string) []byte {
	b = append(b, '{')
	for i, name := range header {
		if i > 0 {
			b = append(b, ',')
		}
		b = record.AppendString(b, name)
		b = append(b, ':')
		b = record.AppendString(b, fields[i])
	}
	return append(b, '}')
}

// CSVObjectSize is the most bytes AppendCSVObject appends for header and
// fields without escapes: a capacity for its buffer.
func CSVObjectSize(header, fields []string) int {
	n := 2
	for i, name := range header {
		n += len(name) + len(fields[i]) + 6
	}
	return n
}
