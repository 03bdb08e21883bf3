package iceberg

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/apache/iceberg-go"
)

// typeNames are the primitive Iceberg types a column may have, as written in
// the configuration.
var typeNames = map[string]iceberg.Type{
	"boolean":     iceberg.PrimitiveTypes.Bool,
	"int":         iceberg.PrimitiveTypes.Int32,
	"long":        iceberg.PrimitiveTypes.Int64,
	"float":       iceberg.PrimitiveTypes.Float32,
	"double":      iceberg.PrimitiveTypes.Float64,
	"string":      iceberg.PrimitiveTypes.String,
	"binary":      iceberg.PrimitiveTypes.Binary,
	"date":        iceberg.PrimitiveTypes.Date,
	"timestamp":   iceberg.PrimitiveTypes.Timestamp,
	"timestamptz": iceberg.PrimitiveTypes.TimestampTz,
}

// typeHelp lists the types for error messages and the docs.
const typeHelp = "boolean, int, long, float, double, decimal(p,s), string, binary, date, timestamp, timestamptz, struct<name: type, ...>, list<type> or map<key type, value type>"

// parseType reads a column type as the configuration writes it:
// "long", "decimal(12,2)", "struct<id: long, tags: list<string>>",
// "map<string, double>". Nested fields are optional; their ids are given by
// ids, which hands out the next free field id.
func parseType(s string, ids *int) (iceberg.Type, error) {
	p := typeParser{s: s, ids: ids}
	t, err := p.typ()
	if err != nil {
		return nil, err
	}
	p.space()
	if p.i != len(p.s) {
		return nil, fmt.Errorf("%q: unexpected %q at offset %d: a type is one of %s", s, p.s[p.i:], p.i, typeHelp)
	}
	return t, nil
}

type typeParser struct {
	s   string
	i   int
	ids *int
}

func (p *typeParser) space() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t') {
		p.i++
	}
}

// word reads a name: letters, digits and underscores (struct field names
// may also be quoted with backquotes to hold anything else but a backquote).
func (p *typeParser) word() string {
	p.space()
	if p.i < len(p.s) && p.s[p.i] == '`' {
		end := strings.IndexByte(p.s[p.i+1:], '`')
		if end < 0 {
			return ""
		}
		w := p.s[p.i+1 : p.i+1+end]
		p.i += end + 2
		return w
	}
	start := p.i
	for p.i < len(p.s) {
		c := p.s[p.i]
		if c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' {
			p.i++
			continue
		}
		break
	}
	return p.s[start:p.i]
}

func (p *typeParser) expect(c byte) error {
	p.space()
	if p.i >= len(p.s) || p.s[p.i] != c {
		got := "the end"
		if p.i < len(p.s) {
			got = strconv.Quote(p.s[p.i:])
		}
		return fmt.Errorf("%q: expected %q at offset %d, found %s", p.s, c, p.i, got)
	}
	p.i++
	return nil
}

func (p *typeParser) peek(c byte) bool {
	p.space()
	return p.i < len(p.s) && p.s[p.i] == c
}

func (p *typeParser) nextID() int {
	*p.ids++
	return *p.ids
}

func (p *typeParser) typ() (iceberg.Type, error) {
	name := strings.ToLower(p.word())
	if t, ok := typeNames[name]; ok {
		return t, nil
	}
	switch name {
	case "decimal":
		if err := p.expect('('); err != nil {
			return nil, err
		}
		prec, err := strconv.Atoi(p.word())
		if err != nil {
			return nil, fmt.Errorf("%q: decimal needs a precision, e.g. decimal(12,2)", p.s)
		}
		if err := p.expect(','); err != nil {
			return nil, err
		}
		scale, err := strconv.Atoi(p.word())
		if err != nil {
			return nil, fmt.Errorf("%q: decimal needs a scale, e.g. decimal(12,2)", p.s)
		}
		if err := p.expect(')'); err != nil {
			return nil, err
		}
		if prec < 1 || prec > 38 || scale < 0 || scale > prec {
			return nil, fmt.Errorf("%q: decimal(p,s) needs 1 <= p <= 38 and 0 <= s <= p", p.s)
		}
		return iceberg.DecimalTypeOf(prec, scale), nil
	case "struct":
		if err := p.expect('<'); err != nil {
			return nil, err
		}
		st := &iceberg.StructType{}
		seen := map[string]bool{}
		for {
			fname := p.word()
			if fname == "" {
				return nil, fmt.Errorf("%q: a struct field needs a name at offset %d", p.s, p.i)
			}
			if seen[fname] {
				return nil, fmt.Errorf("%q: struct field %q is listed twice", p.s, fname)
			}
			seen[fname] = true
			if err := p.expect(':'); err != nil {
				return nil, err
			}
			id := p.nextID()
			ft, err := p.typ()
			if err != nil {
				return nil, err
			}
			st.FieldList = append(st.FieldList, iceberg.NestedField{ID: id, Name: fname, Type: ft})
			if p.peek(',') {
				p.i++
				continue
			}
			if err := p.expect('>'); err != nil {
				return nil, err
			}
			return st, nil
		}
	case "list":
		if err := p.expect('<'); err != nil {
			return nil, err
		}
		id := p.nextID()
		et, err := p.typ()
		if err != nil {
			return nil, err
		}
		if err := p.expect('>'); err != nil {
			return nil, err
		}
		return &iceberg.ListType{ElementID: id, Element: et}, nil
	case "map":
		if err := p.expect('<'); err != nil {
			return nil, err
		}
		kid := p.nextID()
		kt, err := p.typ()
		if err != nil {
			return nil, err
		}
		if !mapKeyType(kt) {
			return nil, fmt.Errorf("%q: a map's key type must be string, int, long or date (a JSON object's member names)", p.s)
		}
		if err := p.expect(','); err != nil {
			return nil, err
		}
		vid := p.nextID()
		vt, err := p.typ()
		if err != nil {
			return nil, err
		}
		if err := p.expect('>'); err != nil {
			return nil, err
		}
		return &iceberg.MapType{KeyID: kid, KeyType: kt, ValueID: vid, ValueType: vt}, nil
	case "":
		return nil, fmt.Errorf("%q: expected a type at offset %d: one of %s", p.s, p.i, typeHelp)
	}
	return nil, fmt.Errorf("%q: %q is not a type: use one of %s", p.s, name, typeHelp)
}

// mapKeyType reports whether t can be a map's key: JSON object member
// names are strings, and these types read exactly from one.
func mapKeyType(t iceberg.Type) bool {
	switch t.(type) {
	case iceberg.StringType, iceberg.Int32Type, iceberg.Int64Type, iceberg.DateType:
		return true
	}
	return false
}

// supported reports whether the sink can write values of t (a table made
// elsewhere may have types weir does not fill: time, uuid, fixed, variant).
func supported(t iceberg.Type) error {
	switch t := t.(type) {
	case iceberg.BooleanType, iceberg.Int32Type, iceberg.Int64Type, iceberg.Float32Type, iceberg.Float64Type,
		iceberg.StringType, iceberg.BinaryType, iceberg.DateType, iceberg.TimestampType, iceberg.TimestampTzType,
		iceberg.DecimalType:
		return nil
	case *iceberg.StructType:
		for _, f := range t.FieldList {
			if err := supported(f.Type); err != nil {
				return fmt.Errorf("%s: %w", f.Name, err)
			}
		}
		return nil
	case *iceberg.ListType:
		return supported(t.Element)
	case *iceberg.MapType:
		if !mapKeyType(t.KeyType) {
			return fmt.Errorf("map key type %s is not one weir fills (string, int, long, date)", t.KeyType)
		}
		return supported(t.ValueType)
	}
	return fmt.Errorf("type %s is not one weir fills (%s)", t, typeHelp)
}
