package fileformat

import (
	"strings"
	"time"
	"unicode/utf8"

	"github.com/weir-etl/weir/record"
)

// Without a declared schema, a parquet chunk's schema is inferred from all
// of its records, when the chunk is sealed (the group holds the records
// until then anyway). Each top-level field becomes a column:
//
//   - integers (literals without a fraction or exponent, within int64):
//     INT64;
//   - numbers with a fraction or exponent: DOUBLE, if every value of the
//     column, integers included, has an exact double; otherwise
//     DECIMAL(P,S) with the digits the values need (up to 38); beyond that
//     a string column holding each number's literal;
//   - strings: TIMESTAMP(us, UTC) if every one is an RFC 3339 time in UTC
//     ("2026-02-01T19:27:17Z"; ns if one has digits below the microsecond),
//     STRING otherwise, or BINARY if one is not UTF-8;
//   - booleans: BOOLEAN; objects and arrays: a string column holding their
//     JSON text exactly; a column that is only null: STRING.
//
// A record whose field would mix kinds that no column type holds (a number
// and a string) starts a new chunk, with a schema of its own.

type family uint8

const (
	famNone family = iota
	famNumber
	famString
	famBool
	famJSON
)

// colInfer is what a chunk's records have shown of one column.
type colInfer struct {
	fam        family
	floats     bool // a number with a fraction or exponent
	inexact    bool // a number that neither int64 nor (with the others) double holds
	notInt53   bool // an integer beyond 2^53
	intDigits  int  // for DECIMAL: the most digits before the point
	fracDigits int  // and after it
	notTime    bool // a string that is not an RFC 3339 time in UTC
	nanos      bool // a time below the microsecond
	notUTF8    bool // a string that is not UTF-8
}

// Inferred collects a chunk's records and their column kinds.
type Inferred struct {
	cols    map[string]*colInfer
	pending [][]byte
	obj     record.Obj
}

// NewInferred returns an empty Inferred.
func NewInferred() *Inferred { return &Inferred{cols: map[string]*colInfer{}} }

// Add takes the object value b into the chunk, unless one of its fields
// conflicts with what the chunk holds; then it reports false and changes
// nothing.
func (c *Inferred) Add(b []byte) (bool, error) {
	if err := c.obj.Reset(b); err != nil {
		return false, err
	}
	ok := true
	c.obj.Range(func(name string, v record.Value) bool {
		f := familyOf(v)
		if col := c.cols[name]; col != nil && f != famNone && col.fam != famNone && col.fam != f {
			ok = false
		}
		return ok
	})
	if !ok {
		return false, nil
	}
	c.obj.Range(func(name string, v record.Value) bool {
		col := c.cols[name]
		if col == nil {
			col = &colInfer{}
			c.cols[name] = col
		}
		col.observe(v)
		return true
	})
	c.pending = append(c.pending, b)
	return true, nil
}

func familyOf(v record.Value) family {
	switch v.Kind() {
	case record.Int, record.Float, record.Number:
		return famNumber
	case record.String:
		return famString
	case record.Bool:
		return famBool
	case record.Object, record.Array:
		return famJSON
	}
	return famNone
}

func (c *colInfer) observe(v record.Value) {
	f := familyOf(v)
	if f == famNone {
		return
	}
	c.fam = f
	switch f {
	case famNumber:
		form, i, _ := v.Form()
		switch form {
		case record.IntForm:
			if i > 1<<53 || i < -(1<<53) {
				c.notInt53 = true
			}
		case record.FloatForm:
			c.floats = true
		default:
			c.inexact = true
			if !strings.ContainsAny(v.Literal(), ".eE") {
				c.notInt53 = true
			} else {
				c.floats = true
			}
		}
		in, fr := decimalDigits(v.Literal())
		c.intDigits, c.fracDigits = max(c.intDigits, in), max(c.fracDigits, fr)
	case famString:
		s := v.Text()
		if !utf8.ValidString(s) {
			c.notUTF8 = true
		}
		if !c.notTime {
			if len(s) < 20 || s[len(s)-1] != 'Z' || s[10] != 'T' {
				c.notTime = true
			} else if t, err := time.Parse(time.RFC3339Nano, s); err != nil {
				c.notTime = true
			} else if t.Nanosecond()%1000 != 0 {
				c.nanos = true
			}
		}
	}
}

// decimalDigits returns how many digits the exact decimal value of the
// literal lit has before and after its point.
func decimalDigits(lit string) (int, int) {
	lit = strings.TrimPrefix(lit, "-")
	exp := 0
	if i := strings.IndexAny(lit, "eE"); i >= 0 {
		e := 0
		neg := false
		for j, ch := range lit[i+1:] {
			if j == 0 && (ch == '+' || ch == '-') {
				neg = ch == '-'
				continue
			}
			e = e*10 + int(ch-'0')
			if e > 1000 {
				e = 1000 // beyond any DECIMAL
			}
		}
		if neg {
			e = -e
		}
		exp, lit = e, lit[:i]
	}
	intPart, frac, _ := strings.Cut(lit, ".")
	intPart = strings.TrimLeft(intPart, "0")
	frac = strings.TrimRight(frac, "0")
	digits := intPart + frac
	point := len(intPart) + exp
	return max(point, 0), max(len(digits)-point, 0)
}

// Schema resolves the columns' kinds into types.
func (c *Inferred) Schema() *Schema {
	cols := make([]pqField, 0, len(c.cols))
	for name, col := range c.cols {
		cols = append(cols, pqField{name, col.resolve()})
	}
	return newSchema(cols)
}

func (c *colInfer) resolve() *pqType {
	switch c.fam {
	case famNumber:
		switch {
		case !c.floats && !c.inexact:
			return &pqType{kind: pqInt64}
		case !c.inexact && !c.notInt53:
			return &pqType{kind: pqDouble}
		case c.intDigits+c.fracDigits <= 38:
			return &pqType{kind: pqDecimal, prec: max(c.intDigits+c.fracDigits, 1), scale: c.fracDigits}
		}
		return &pqType{kind: pqJSON}
	case famString:
		switch {
		case c.notUTF8:
			return &pqType{kind: pqBinary}
		case !c.notTime && c.nanos:
			return &pqType{kind: pqTimestamp, unit: "ns"}
		case !c.notTime:
			return &pqType{kind: pqTimestamp, unit: "us"}
		}
		return &pqType{kind: pqString}
	case famBool:
		return &pqType{kind: pqBool}
	case famJSON:
		return &pqType{kind: pqJSON}
	}
	return &pqType{kind: pqString}
}
