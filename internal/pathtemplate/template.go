// Package pathtemplate renders the paths of a sink's chunks and objects from
// a template: literal text, date placeholders of a time the configuration
// chooses (processing, the record's own, or a field's), and field values.
// The file and S3 sinks share it, so a template means the same in both.
package pathtemplate

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/weir-etl/weir/record"
)

// Template is a parsed path template. It is a small fixed syntax, not
// text/template: rendering must be cheap enough to run for every record when
// the template names a field.
type Template struct {
	segs []segment
	// HasFields says the template names a field ({{field "name"}}), so that
	// records of one write may have different paths.
	HasFields bool
	// HasTime says the template has a date placeholder: {{.Date}}, {{.Year}}, ...
	HasTime bool
}

type segKind uint8

const (
	segLit segKind = iota
	segDate
	segYear
	segMonth
	segDay
	segHour
	segField
)

type segment struct {
	kind  segKind
	text  string   // literal text or field name
	names []string // the field name, as record.Lookup takes it
}

// Parse parses a template: text and the placeholders {{.Date}}
// (2006-01-02), {{.Year}}, {{.Month}}, {{.Day}}, {{.Hour}} and {{field
// "name"}}. The template must stay relative and below its root (no leading
// /, no .. element) and end with a name prefix.
func Parse(s string) (Template, error) {
	var t Template
	rest := s
	for rest != "" {
		i := strings.Index(rest, "{{")
		if i < 0 {
			t.segs = append(t.segs, segment{kind: segLit, text: rest})
			break
		}
		if i > 0 {
			t.segs = append(t.segs, segment{kind: segLit, text: rest[:i]})
		}
		j := strings.Index(rest[i:], "}}")
		if j < 0 {
			return t, fmt.Errorf("pathtemplate: template %q has {{ without }}: close the placeholder", s)
		}
		inner := strings.TrimSpace(rest[i+2 : i+j])
		rest = rest[i+j+2:]
		switch inner {
		case ".Date":
			t.segs = append(t.segs, segment{kind: segDate})
		case ".Year":
			t.segs = append(t.segs, segment{kind: segYear})
		case ".Month":
			t.segs = append(t.segs, segment{kind: segMonth})
		case ".Day":
			t.segs = append(t.segs, segment{kind: segDay})
		case ".Hour":
			t.segs = append(t.segs, segment{kind: segHour})
		default:
			arg, ok := strings.CutPrefix(inner, "field ")
			name, err := strconv.Unquote(strings.TrimSpace(arg))
			if !ok || err != nil || name == "" {
				return t, fmt.Errorf("pathtemplate: template %q: unknown placeholder {{%s}}: use {{.Date}}, {{.Year}}, {{.Month}}, {{.Day}}, {{.Hour}} or {{field \"name\"}}", s, inner)
			}
			t.segs = append(t.segs, segment{segField, name, []string{name}})
			t.HasFields = true
		}
		if k := t.segs[len(t.segs)-1].kind; k >= segDate && k <= segHour {
			t.HasTime = true
		}
	}
	var lit strings.Builder
	for _, sg := range t.segs {
		if sg.kind == segLit {
			lit.WriteString(sg.text)
		} else {
			lit.WriteString("x")
		}
	}
	if err := checkRelative(lit.String()); err != nil {
		return t, err
	}
	return t, nil
}

// checkRelative rejects templates that could escape the output directory or
// prefix.
func checkRelative(t string) error {
	if filepath.IsAbs(t) || strings.HasPrefix(t, "/") {
		return fmt.Errorf("pathtemplate: template %q is absolute: make it relative to path", t)
	}
	for _, part := range strings.Split(t, "/") {
		if part == ".." {
			return fmt.Errorf("pathtemplate: template %q has a .. element: keep chunks inside path", t)
		}
	}
	if strings.HasSuffix(t, "/") || t == "" {
		return fmt.Errorf("pathtemplate: template %q must end with a file name prefix, e.g. {{.Date}}/part", t)
	}
	return nil
}

// Render appends the template's path for r to dst, with at (UTC) as the
// time of the date placeholders. r may be nil when the template has no
// fields.
func (t *Template) Render(dst []byte, at time.Time, r *record.Record) ([]byte, error) {
	for _, sg := range t.segs {
		switch sg.kind {
		case segLit:
			dst = append(dst, sg.text...)
		case segDate:
			dst = at.AppendFormat(dst, "2006-01-02")
		case segYear:
			dst = at.AppendFormat(dst, "2006")
		case segMonth:
			dst = at.AppendFormat(dst, "01")
		case segDay:
			dst = at.AppendFormat(dst, "02")
		case segHour:
			dst = at.AppendFormat(dst, "15")
		case segField:
			var v [1]record.Value
			var found [1]bool
			if err := r.Lookup(sg.names, v[:], found[:]); err != nil {
				return dst, fmt.Errorf("template needs field %q: %w", sg.text, err)
			}
			dst = appendPathValue(dst, v[0])
		}
	}
	return dst, nil
}

// appendPathValue appends a field value as one path element: a string's
// text, a number's literal as written, a bool. A missing, null, empty or
// non-scalar value becomes "_", and separators become "_", so that a value
// can never leave its directory level.
func appendPathValue(dst []byte, v record.Value) []byte {
	var s string
	switch v.Kind() {
	case record.String:
		s = v.Text()
	case record.Int, record.Float, record.Number:
		s = v.Literal()
	case record.Bool:
		return strconv.AppendBool(dst, v.Bool())
	}
	if s == "" || s == "." || s == ".." {
		return append(dst, '_')
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '/' || c == '\\' || c == 0 {
			c = '_'
		}
		dst = append(dst, c)
	}
	return dst
}

// Time is where the time of a path comes from (template_time).
type Time struct {
	kind  string   // processing, record or field
	field []string // the field, as record.Lookup takes it
}

// NewTime returns the time of kind (processing, record or field), read from
// field for kind field.
func NewTime(kind, field string) Time { return Time{kind: kind, field: []string{field}} }

// PerRecord reports whether the time of the path can differ between the
// records of one Write, so that each record's path is rendered on its own.
func (p Time) PerRecord(t *Template) bool {
	return t.HasTime && p.kind != "processing"
}

// Of returns the time of r's path when it is written at now (UTC): now
// itself, the record's time, or the time in its field. A record that has
// no such time is the record's fault: the error says what is missing.
func (p Time) Of(r *record.Record, now time.Time) (time.Time, error) {
	switch p.kind {
	case "record":
		if r.Time.IsZero() {
			return now, fmt.Errorf("the record has no time of its own (its source gives none), and template_time is record: use template_time: field, or processing")
		}
		return r.Time.UTC(), nil
	case "field":
		var v [1]record.Value
		var found [1]bool
		if err := r.Lookup(p.field, v[:], found[:]); err != nil {
			return now, fmt.Errorf("template_time_field %q: %w", p.field[0], err)
		}
		if !found[0] || v[0].Kind() != record.String {
			return now, fmt.Errorf("template_time_field %q is %s, not a time: the path needs an RFC 3339 time or a date in it", p.field[0], describeValue(found[0], v[0]))
		}
		s := v[0].Text()
		if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
			return t.UTC(), nil
		}
		if t, err := time.Parse(time.DateOnly, s); err == nil {
			return t, nil
		}
		return now, fmt.Errorf("template_time_field %q is %q, not an RFC 3339 time (2026-02-01T19:27:17Z) or a date (2026-02-01)", p.field[0], s)
	}
	return now, nil
}

// describeValue names what a field held, for an error.
func describeValue(found bool, v record.Value) string {
	if !found {
		return "missing"
	}
	switch v.Kind() {
	case record.Null:
		return "null"
	case record.Int, record.Float, record.Number:
		return "the number " + v.Literal()
	case record.Bool:
		return "a bool"
	case record.Object:
		return "an object"
	case record.Array:
		return "an array"
	}
	return "not a string"
}
