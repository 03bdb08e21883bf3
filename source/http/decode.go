package http

import (
	"bytes"
	"errors"
	"fmt"
	"mime"
	"slices"
	"strings"

	"github.com/weir-etl/weir/record"
)

// format is how a body is cut into records.
type format uint8

const (
	formatNDJSON format = iota // one JSON value a line
	formatJSON                 // one JSON document: an array's elements, or the value itself
	formatLines                // each line's bytes
)

// mediaTypes are the Content-Types format auto knows.
var mediaTypes = map[string]format{
	"application/x-ndjson":  formatNDJSON,
	"application/ndjson":    formatNDJSON,
	"application/jsonl":     formatNDJSON,
	"application/x-jsonl":   formatNDJSON,
	"application/jsonlines": formatNDJSON,
	"application/json":      formatJSON,
	"text/plain":            formatLines,
}

// errMediaType is the answer to a Content-Type format auto does not know.
var errMediaType = errors.New("send application/x-ndjson (one JSON value a line), application/json (a JSON array or one value) or text/plain (lines), or set format on the source to take every body one way")

// formatOf returns the format of a body of Content-Type ct under the
// source's format option.
func formatOf(option, ct string) (format, error) {
	switch option {
	case "ndjson":
		return formatNDJSON, nil
	case "json":
		return formatJSON, nil
	case "lines":
		return formatLines, nil
	}
	mt, _, err := mime.ParseMediaType(ct)
	if ct == "" || err != nil {
		return 0, fmt.Errorf("no usable Content-Type (%q): %w", ct, errMediaType)
	}
	if f, ok := mediaTypes[mt]; ok {
		return f, nil
	}
	if strings.HasSuffix(mt, "+json") {
		return formatJSON, nil
	}
	return 0, fmt.Errorf("Content-Type %s is not taken: %w", mt, errMediaType)
}

var newline = []byte{'\n'}

// badInput is a body that is not valid input: the 400's reason.
type badInput struct {
	line int // 1-based; 0 when the body as a whole is at fault
	msg  string
}

func (b *badInput) Error() string {
	if b.line > 0 {
		return fmt.Sprintf("line %d: %s", b.line, b.msg)
	}
	return b.msg
}

// decode cuts body into records, appended to recs, each holding a piece of
// body (capped, so that nothing appending to one can reach the next). It
// returns how many blank lines it passed over. A body with one invalid record
// is refused as a whole: a request is taken all or nothing.
func decode(f format, body []byte, recs []record.Record) ([]record.Record, int, *badInput) {
	switch f {
	case formatJSON:
		return decodeJSON(body, recs)
	default:
		return decodeLines(f, body, recs)
	}
}

func decodeLines(f format, body []byte, recs []record.Record) ([]record.Record, int, *badInput) {
	// A record a line: room for them all at once, rather than growing the
	// slice (and copying the records) a dozen times a request.
	recs = slices.Grow(recs, bytes.Count(body, newline)+1)
	blank := 0
	for line, start := 1, 0; start < len(body); line++ {
		end := len(body)
		next := end
		if i := bytes.IndexByte(body[start:], '\n'); i >= 0 {
			end, next = start+i, start+i+1
		}
		v := body[start:end:end]
		if len(v) > 0 && v[len(v)-1] == '\r' {
			v = v[: len(v)-1 : len(v)-1]
		}
		start = next
		if f == formatNDJSON {
			if len(bytes.TrimSpace(v)) == 0 {
				blank++
				continue
			}
			// CheckJSON rather than Valid: the record remembers it was
			// checked, so that the sinks (the file sink's ndjson, for one)
			// do not scan it a second time.
			r := record.New(v)
			if err := r.CheckJSON(); err != nil {
				return recs, blank, &badInput{line: line, msg: jsonMsg(err)}
			}
			recs = append(recs, r)
			continue
		}
		if len(v) == 0 {
			blank++
			continue
		}
		recs = append(recs, record.New(v))
	}
	return recs, blank, nil
}

func decodeJSON(body []byte, recs []record.Record) ([]record.Record, int, *badInput) {
	if err := record.Valid(body); err != nil {
		var se *record.SyntaxError
		line := 0
		if errors.As(err, &se) {
			line = 1 + bytes.Count(body[:min(se.Offset, len(body))], []byte("\n"))
		}
		msg := jsonMsg(err)
		if se != nil && strings.Contains(se.Msg, "after the value") {
			msg += " (more than one JSON value: send NDJSON as application/x-ndjson, or a JSON array)"
		}
		return recs, 0, &badInput{line: line, msg: msg}
	}
	v := bytes.TrimSpace(body)
	if v[0] != '[' {
		return append(recs, record.New(v[:len(v):len(v)])), 0, nil
	}
	for _, e := range elements(v) {
		recs = append(recs, record.New(v[e[0]:e[1]:e[1]]))
	}
	return recs, 0, nil
}

// elements returns where each element of the valid JSON array arr is: it
// only tracks strings and nesting, since the array was checked.
func elements(arr []byte) [][2]int {
	var out [][2]int
	depth, start := 0, -1
	for i := 0; i < len(arr); i++ {
		c := arr[i]
		switch {
		case c == '"':
			if start < 0 {
				start = i
			}
			for i++; arr[i] != '"'; i++ {
				if arr[i] == '\\' {
					i++
				}
			}
		case c == '[' || c == '{':
			depth++
			if depth == 2 && start < 0 {
				start = i
			}
		case c == ']' || c == '}':
			if depth == 1 && start >= 0 {
				out = append(out, [2]int{start, trimEnd(arr, i)})
				start = -1
			}
			depth--
		case c == ',' && depth == 1:
			out = append(out, [2]int{start, trimEnd(arr, i)})
			start = -1
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
		default:
			if depth == 1 && start < 0 {
				start = i
			}
		}
	}
	return out
}

// trimEnd returns the end of the element that ends before arr[i], without
// the whitespace before the delimiter.
func trimEnd(arr []byte, i int) int {
	for i > 0 {
		switch arr[i-1] {
		case ' ', '\t', '\n', '\r':
			i--
			continue
		}
		break
	}
	return i
}

// jsonMsg is what a 400 says of a value that is not JSON, without the
// "record:" prefix a user has no use for.
func jsonMsg(err error) string {
	var se *record.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("not JSON: %s at byte %d", se.Msg, se.Offset+1)
	}
	return "not JSON: " + err.Error()
}
