package http

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/weir-etl/weir/record"
)

// template is a text with {{field}} parts, as the Kafka sink's topic.
type template struct {
	lits   []string // len(fields)+1 literal parts around the fields
	fields [][]string
	query  []bool // field i is in a URL's query (escaped as a query value)
}

func parseTemplate(text string) (template, error) {
	var t template
	s := text
	inQuery := false
	for {
		i := strings.Index(s, "{{")
		if i < 0 {
			if strings.Contains(s, "}}") {
				return t, fmt.Errorf("%q has a }} without {{", redactURL(text))
			}
			t.lits = append(t.lits, s)
			return t, nil
		}
		j := strings.Index(s[i:], "}}")
		if j < 0 {
			return t, fmt.Errorf("%q has a {{ without }}", redactURL(text))
		}
		name := strings.TrimSpace(s[i+2 : i+j])
		if name == "" {
			return t, fmt.Errorf("%q has an empty {{}}: name a field", redactURL(text))
		}
		inQuery = inQuery || strings.Contains(s[:i], "?")
		t.lits = append(t.lits, s[:i])
		t.fields = append(t.fields, strings.Split(name, "."))
		t.query = append(t.query, inQuery)
		s = s[i+j+2:]
	}
}

// static reports whether the template has no field.
func (t template) static() bool { return len(t.fields) == 0 }

// render joins the literals and the values val gives for the fields.
func (t template) render(val func(i int) string) string {
	if len(t.fields) == 0 {
		return t.lits[0]
	}
	var sb strings.Builder
	for i := range t.fields {
		sb.WriteString(t.lits[i])
		sb.WriteString(val(i))
	}
	sb.WriteString(t.lits[len(t.lits)-1])
	return sb.String()
}

// renderRecord renders t for r; escape says whether values are escaped for
// their place in a URL. A missing or non-scalar field is an error.
func (t template) renderRecord(r *record.Record, escape bool) (string, error) {
	if len(t.fields) == 0 {
		return t.lits[0], nil
	}
	vals := make([]string, len(t.fields))
	for i, f := range t.fields {
		v, err := field(r, f)
		if err != nil {
			return "", err
		}
		if escape {
			if t.query[i] {
				v = url.QueryEscape(v)
			} else {
				v = url.PathEscape(v)
			}
		}
		vals[i] = v
	}
	return t.render(func(i int) string { return vals[i] }), nil
}

// field returns the scalar at path in r's value as text: a string's text, a
// number's literal as the record wrote it, true or false.
func field(r *record.Record, path []string) (string, error) {
	var v [1]record.Value
	var found [1]bool
	if err := r.Lookup(path[:1], v[:], found[:]); err != nil {
		return "", err
	}
	cur, ok := v[0], found[0]
	for i := 1; ok && i < len(path); i++ {
		if cur.Kind() != record.Object {
			return "", fmt.Errorf("field %s: not an object at %q", strings.Join(path, "."), path[i])
		}
		cur, ok = cur.Get(path[i])
	}
	if !ok {
		return "", fmt.Errorf("field %s is missing", strings.Join(path, "."))
	}
	switch cur.Kind() {
	case record.String:
		return cur.Text(), nil
	case record.Int, record.Float, record.Number:
		return cur.Literal(), nil
	case record.Bool:
		return strconv.FormatBool(cur.Bool()), nil
	case record.Null:
		return "", fmt.Errorf("field %s is null, not a string, number or boolean", strings.Join(path, "."))
	}
	return "", fmt.Errorf("field %s is %s, not a string, number or boolean", strings.Join(path, "."), cur.Kind())
}
