package file

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"github.com/weir-etl/weir/internal/fileformat"
	"github.com/weir-etl/weir/record"
)

// framing is how a format's records are cut out of a file.
type framing uint8

const (
	framingLines framing = iota // one record a line
	framingCSV                  // RFC 4180: a quoted field may hold line breaks
)

// formats are the values of the format option and how each is framed. A new
// format adds itself here and a case in decode.
var formats = map[string]framing{
	"ndjson":      framingLines,
	"lines":       framingLines,
	"csv":         framingCSV,
	"dead_letter": framingLines,
}

func formatKnown(name string) bool {
	_, ok := formats[name]
	return ok
}

func formatList() string {
	names := make([]string, 0, len(formats))
	for n := range formats {
		names = append(names, n)
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// decode turns one framed record of f, which starts at byte start, into rec,
// which is empty (a new slot of the batch). It reports keep false for a record that holds nothing (a blank line of
// ndjson or csv, a csv header). An error is a record that cannot be read;
// on_invalid decides what becomes of it. Called with mu held.
func (s *Source) decode(f *file, raw []byte, start int64, rec *record.Record) (keep bool, err error) {
	if start == 0 && s.cfg.Format != "lines" {
		raw = bytes.TrimPrefix(raw, bom) // an encoding mark, not data
	}
	switch s.cfg.Format {
	case "ndjson":
		raw = trimCR(raw)
		if len(raw) == 0 {
			return false, nil // blank lines hold no record
		}
		rec.SetValue(raw)
	case "lines":
		rec.SetValue(trimCR(raw))
	case "csv":
		return s.decodeCSV(f, raw, start, rec)
	case "dead_letter":
		return decodeDeadLetter(f, trimCR(raw), rec)
	default:
		panic("source/file: no decoder for format " + s.cfg.Format) // Validate lets only known formats through
	}
	return true, nil
}

// badRecord is a record that does not parse; on_invalid decides its fate.
type badRecord struct{ err error }

func (e *badRecord) Error() string { return e.err.Error() }
func (e *badRecord) Unwrap() error { return e.err }

func (s *Source) decodeCSV(f *file, raw []byte, start int64, rec *record.Record) (bool, error) {
	if len(trimCR(raw)) == 0 {
		return false, nil // blank lines hold no record
	}
	fields, err := splitCSV(s.fields[:0], raw, s.cfg.CSVDelimiter[0])
	s.fields = fields
	if err != nil {
		return false, &badRecord{err}
	}
	if start == 0 && s.cfg.CSVHeader {
		if err := s.setHeader(f, fields); err != nil {
			return false, err
		}
		return false, nil
	}
	if f.header == nil {
		f.header = s.cfg.CSVColumns // csv_header: false
	}
	if len(fields) != len(f.header) {
		return false, &badRecord{fmt.Errorf("the record has %d fields, the header %d", len(fields), len(f.header))}
	}
	// The object's members are in the header's order, each field's bytes a
	// JSON string with nothing replaced: the record is the row as written.
	b := fileformat.AppendCSVObject(make([]byte, 0, fileformat.CSVObjectSize(f.header, fields)), f.header, fields)
	*rec = record.New(b)
	return true, nil
}

// setHeader takes the field names from a header record (or, with
// csv_columns, checks that it has as many fields).
func (s *Source) setHeader(f *file, fields []string) error {
	if cols := s.cfg.CSVColumns; len(cols) > 0 {
		if len(fields) != len(cols) {
			return fmt.Errorf("the csv header has %d fields, csv_columns names %d: make them agree", len(fields), len(cols))
		}
		f.header = cols
		return nil
	}
	seen := make(map[string]bool, len(fields))
	for _, n := range fields {
		if seen[n] {
			return fmt.Errorf("the csv header names %q twice: rename one, or name the fields with csv_columns", n)
		}
		seen[n] = true
	}
	f.header = slices.Clone(fields)
	return nil
}
