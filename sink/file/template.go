package file

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/weir-etl/weir/record"
)

// pathTemplate is a parsed chunk path template. It is a small fixed syntax,
// not text/template: rendering must be cheap enough to run for every record
// when the template names a field.
type pathTemplate struct {
	segs      []segment
	hasFields bool
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

func parseTemplate(s string) (pathTemplate, error) {
	var t pathTemplate
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
			return t, fmt.Errorf("sink/file: template %q has {{ without }}: close the placeholder", s)
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
				return t, fmt.Errorf("sink/file: template %q: unknown placeholder {{%s}}: use {{.Date}}, {{.Year}}, {{.Month}}, {{.Day}}, {{.Hour}} or {{field \"name\"}}", s, inner)
			}
			t.segs = append(t.segs, segment{segField, name, []string{name}})
			t.hasFields = true
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
	if err := validateTemplatePath(lit.String()); err != nil {
		return t, err
	}
	return t, nil
}

// render appends the template's path for r written at now (UTC) to dst. r may
// be nil when the template has no fields.
func (t *pathTemplate) render(dst []byte, now time.Time, r *record.Record) ([]byte, error) {
	for _, sg := range t.segs {
		switch sg.kind {
		case segLit:
			dst = append(dst, sg.text...)
		case segDate:
			dst = now.AppendFormat(dst, "2006-01-02")
		case segYear:
			dst = now.AppendFormat(dst, "2006")
		case segMonth:
			dst = now.AppendFormat(dst, "01")
		case segDay:
			dst = now.AppendFormat(dst, "02")
		case segHour:
			dst = now.AppendFormat(dst, "15")
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
