package fileformat

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/parquet-go/parquet-go"
)

// pqKind is a parquet column type as weir writes it.
type pqKind uint8

const (
	pqString    pqKind = iota // BYTE_ARRAY, STRING: UTF-8 text
	pqBinary                  // BYTE_ARRAY: any bytes of a JSON string
	pqBool                    // BOOLEAN
	pqInt32                   // INT32
	pqInt64                   // INT64
	pqDouble                  // DOUBLE
	pqDecimal                 // DECIMAL(precision, scale): INT64 up to 18 digits, else FIXED_LEN_BYTE_ARRAY(16)
	pqTimestamp               // INT64 TIMESTAMP(unit, adjusted to UTC or not)
	pqDate                    // INT32 DATE
	pqJSON                    // BYTE_ARRAY, STRING: any value as its JSON text, exactly
	pqList                    // LIST of elem
	pqStruct                  // a group of fields
)

// pqType is one column's type: a leaf, a list or a struct.
type pqType struct {
	kind         pqKind
	prec, scale  int    // decimal
	unit         string // timestamp: ms, us or ns
	local        bool   // timestamp: wall-clock time, not adjusted to UTC
	elem         *pqType
	fields       []pqField // struct, sorted by name as parquet orders a group
	leafLo, leaf int       // the leaf columns below this node: [leafLo, leaf)
}

type pqField struct {
	name string
	t    *pqType
}

// String gives the type as the schema option spells it.
func (t *pqType) String() string {
	switch t.kind {
	case pqString:
		return "string"
	case pqBinary:
		return "binary"
	case pqBool:
		return "bool"
	case pqInt32:
		return "int32"
	case pqInt64:
		return "int64"
	case pqDouble:
		return "double"
	case pqDecimal:
		return fmt.Sprintf("decimal(%d,%d)", t.prec, t.scale)
	case pqTimestamp:
		if t.local {
			return "timestamp(" + t.unit + ", local)"
		}
		return "timestamp(" + t.unit + ", UTC)"
	case pqDate:
		return "date"
	case pqJSON:
		return "json"
	case pqList:
		return "list<" + t.elem.String() + ">"
	case pqStruct:
		var parts []string
		for _, f := range t.fields {
			parts = append(parts, f.name+": "+f.t.String())
		}
		return "struct<" + strings.Join(parts, ", ") + ">"
	}
	return "?"
}

// parseType parses a schema type: string, binary, bool, int32, int64,
// double, decimal(P,S), timestamp(UNIT[, UTC|local]), date, json,
// list<T>, struct<name: T, ...>.
func parseType(s string) (*pqType, error) {
	p := &typeParser{s: s}
	t, err := p.parse()
	if err != nil {
		return nil, err
	}
	p.space()
	if p.i != len(p.s) {
		return nil, fmt.Errorf("unexpected %q after the type", p.s[p.i:])
	}
	return t, nil
}

type typeParser struct {
	s string
	i int
}

func (p *typeParser) space() {
	for p.i < len(p.s) && p.s[p.i] == ' ' {
		p.i++
	}
}

func (p *typeParser) word() string {
	p.space()
	j := p.i
	for p.i < len(p.s) && (p.s[p.i] == '_' || p.s[p.i] >= 'a' && p.s[p.i] <= 'z' || p.s[p.i] >= 'A' && p.s[p.i] <= 'Z' || p.s[p.i] >= '0' && p.s[p.i] <= '9') {
		p.i++
	}
	return p.s[j:p.i]
}

func (p *typeParser) expect(c byte) error {
	p.space()
	if p.i >= len(p.s) || p.s[p.i] != c {
		return fmt.Errorf("expected %q at %q", c, p.s[min(p.i, len(p.s)):])
	}
	p.i++
	return nil
}

func (p *typeParser) peek(c byte) bool {
	p.space()
	return p.i < len(p.s) && p.s[p.i] == c
}

func (p *typeParser) parse() (*pqType, error) {
	w := p.word()
	switch strings.ToLower(w) {
	case "string":
		return &pqType{kind: pqString}, nil
	case "binary":
		return &pqType{kind: pqBinary}, nil
	case "bool", "boolean":
		return &pqType{kind: pqBool}, nil
	case "int32":
		return &pqType{kind: pqInt32}, nil
	case "int64":
		return &pqType{kind: pqInt64}, nil
	case "double":
		return &pqType{kind: pqDouble}, nil
	case "date":
		return &pqType{kind: pqDate}, nil
	case "json":
		return &pqType{kind: pqJSON}, nil
	case "decimal":
		if err := p.expect('('); err != nil {
			return nil, err
		}
		prec, err := strconv.Atoi(p.word())
		if err != nil {
			return nil, fmt.Errorf("decimal needs a precision, as in decimal(10,2)")
		}
		if err := p.expect(','); err != nil {
			return nil, err
		}
		scale, err := strconv.Atoi(p.word())
		if err != nil {
			return nil, fmt.Errorf("decimal needs a scale, as in decimal(10,2)")
		}
		if err := p.expect(')'); err != nil {
			return nil, err
		}
		if prec < 1 || prec > 38 || scale < 0 || scale > prec {
			return nil, fmt.Errorf("decimal(%d,%d): the precision must be 1 to 38 and the scale 0 to the precision", prec, scale)
		}
		return &pqType{kind: pqDecimal, prec: prec, scale: scale}, nil
	case "timestamp":
		t := &pqType{kind: pqTimestamp, unit: "us"}
		if !p.peek('(') {
			return t, nil
		}
		p.expect('(')
		switch u := p.word(); u {
		case "ms", "us", "ns":
			t.unit = u
		default:
			return nil, fmt.Errorf("timestamp unit %q is unknown: use ms, us or ns", u)
		}
		if p.peek(',') {
			p.expect(',')
			switch z := p.word(); strings.ToLower(z) {
			case "utc":
			case "local":
				t.local = true
			default:
				return nil, fmt.Errorf("timestamp zone %q is unknown: use UTC (an instant) or local (a wall-clock time)", z)
			}
		}
		if err := p.expect(')'); err != nil {
			return nil, err
		}
		return t, nil
	case "list":
		if err := p.expect('<'); err != nil {
			return nil, err
		}
		e, err := p.parse()
		if err != nil {
			return nil, err
		}
		if err := p.expect('>'); err != nil {
			return nil, err
		}
		return &pqType{kind: pqList, elem: e}, nil
	case "struct":
		if err := p.expect('<'); err != nil {
			return nil, err
		}
		t := &pqType{kind: pqStruct}
		for {
			name := p.word()
			if name == "" {
				return nil, fmt.Errorf("a struct field needs a name, as in struct<name: string>")
			}
			if err := p.expect(':'); err != nil {
				return nil, err
			}
			ft, err := p.parse()
			if err != nil {
				return nil, err
			}
			if slices.ContainsFunc(t.fields, func(f pqField) bool { return f.name == name }) {
				return nil, fmt.Errorf("struct field %s is given twice", name)
			}
			t.fields = append(t.fields, pqField{name, ft})
			if p.peek(',') {
				p.expect(',')
				continue
			}
			if err := p.expect('>'); err != nil {
				return nil, err
			}
			break
		}
		sortFields(t.fields)
		return t, nil
	case "":
		return nil, fmt.Errorf("a type is missing")
	}
	return nil, fmt.Errorf("type %q is unknown: use string, binary, bool, int32, int64, double, decimal(P,S), timestamp(us, UTC), date, json, list<T> or struct<name: T, ...>", w)
}

func sortFields(fs []pqField) {
	slices.SortFunc(fs, func(a, b pqField) int { return strings.Compare(a.name, b.name) })
}

// node returns t's parquet node, optional (every column may be null or
// missing), and numbers the leaves below it from *next.
func (t *pqType) node(next *int) parquet.Node {
	t.leafLo = *next
	var n parquet.Node
	switch t.kind {
	case pqString, pqJSON:
		n = parquet.String()
	case pqBinary:
		n = parquet.Leaf(parquet.ByteArrayType)
	case pqBool:
		n = parquet.Leaf(parquet.BooleanType)
	case pqInt32:
		n = parquet.Int(32)
	case pqInt64:
		n = parquet.Int(64)
	case pqDouble:
		n = parquet.Leaf(parquet.DoubleType)
	case pqDecimal:
		if t.prec <= 18 {
			n = parquet.Decimal(t.scale, t.prec, parquet.Int64Type)
		} else {
			n = parquet.Decimal(t.scale, t.prec, parquet.FixedLenByteArrayType(16))
		}
	case pqTimestamp:
		unit := map[string]parquet.TimeUnit{"ms": parquet.Millisecond, "us": parquet.Microsecond, "ns": parquet.Nanosecond}[t.unit]
		n = parquet.TimestampAdjusted(unit, !t.local)
	case pqDate:
		n = parquet.Date()
	case pqList:
		n = parquet.List(t.elem.node(next))
		t.leaf = *next
		return parquet.Optional(n)
	case pqStruct:
		g := parquet.Group{}
		for _, f := range t.fields {
			g[f.name] = f.t.node(next)
		}
		t.leaf = *next
		return parquet.Optional(g)
	}
	*next++
	t.leaf = *next
	return parquet.Optional(n)
}
