package fileformat

import (
	"fmt"
	"io"
	"math"
	"math/big"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/parquet-go/parquet-go"

	"github.com/weir-etl/weir/record"
)

// Schema is the schema of one parquet chunk: top-level columns sorted by
// name, as parquet-go orders a group's fields.
type Schema struct {
	cols   []pqField
	index  map[string]int
	leaves int
	schema *parquet.Schema
	// nullsOutside: a field that is not a column is taken when it is null
	// (an output schema's, where a field only ever null is no column yet).
	nullsOutside bool
}

func newSchema(cols []pqField) *Schema {
	sortFields(cols)
	g := parquet.Group{}
	idx := make(map[string]int, len(cols))
	next := 0
	for i, c := range cols {
		g[c.name] = c.t.node(&next)
		idx[c.name] = i
	}
	return &Schema{cols: cols, index: idx, leaves: next, schema: parquet.NewSchema("record", g)}
}

// DeclaredSchema builds the schema the schema option declares (column types
// by field name), which CheckType has checked.
func DeclaredSchema(m map[string]string) *Schema {
	cols := make([]pqField, 0, len(m))
	for name, s := range m {
		t, _ := parseType(s)
		cols = append(cols, pqField{name, t})
	}
	return newSchema(cols)
}

// colError is a record that does not fit a column.
type colError struct {
	col string
	msg string
}

func (e *colError) Error() string { return fmt.Sprintf("column %s: %s", e.col, e.msg) }

// pqRow builds one row's values, leaf by leaf.
type pqRow struct {
	leaves [][]parquet.Value
}

// row converts the record object o to a row of s, or returns the column
// it does not fit.
func (s *Schema) row(o *record.Obj, b *pqRow) (parquet.Row, error) {
	if len(b.leaves) < s.leaves {
		b.leaves = make([][]parquet.Value, s.leaves)
	}
	for i := range b.leaves[:s.leaves] {
		b.leaves[i] = b.leaves[i][:0]
	}
	var err error
	o.Range(func(name string, v record.Value) bool {
		if _, ok := s.index[name]; !ok && !(s.nullsOutside && v.IsNull()) {
			err = &colError{name, "the field is not in the parquet schema: add it to schema or remove it with a map"}
			return false
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	for _, c := range s.cols {
		v, ok := o.Get(c.name)
		if err := b.emit(c.t, c.name, v, ok, 0, 0, 0); err != nil {
			return nil, err
		}
	}
	var row parquet.Row
	for i, vs := range b.leaves[:s.leaves] {
		for _, v := range vs {
			row = append(row, v.Level(v.RepetitionLevel(), v.DefinitionLevel(), i))
		}
	}
	return row, nil
}

// emit appends the values of v, of type t at column path col, to the leaf
// columns below t. rep and def are the levels of v's position; reps is the
// number of repeated nodes above t.
func (b *pqRow) emit(t *pqType, col string, v record.Value, present bool, rep, def, reps int) error {
	if !present || v.IsNull() {
		for i := t.leafLo; i < t.leaf; i++ {
			b.leaves[i] = append(b.leaves[i], parquet.NullValue().Level(rep, def, i))
		}
		return nil
	}
	switch t.kind {
	case pqStruct:
		if v.Kind() != record.Object {
			return &colError{col, fmt.Sprintf("holds %s, the schema says %s", kindName(v), t)}
		}
		for _, f := range t.fields {
			fv, ok := v.Get(f.name)
			if err := b.emit(f.t, col+"."+f.name, fv, ok, rep, def+1, reps); err != nil {
				return err
			}
		}
		var extra string
		v.Range(func(name string, _ record.Value) bool {
			for _, f := range t.fields {
				if f.name == name {
					return true
				}
			}
			extra = name
			return false
		})
		if extra != "" {
			return &colError{col + "." + extra, "the field is not in the struct: add it to the schema"}
		}
		return nil
	case pqList:
		if v.Kind() != record.Array {
			return &colError{col, fmt.Sprintf("holds %s, the schema says %s", kindName(v), t)}
		}
		if v.Len() == 0 {
			for i := t.leafLo; i < t.leaf; i++ {
				b.leaves[i] = append(b.leaves[i], parquet.NullValue().Level(rep, def+1, i))
			}
			return nil
		}
		var err error
		v.Elems(func(i int, e record.Value) bool {
			r := rep
			if i > 0 {
				r = reps + 1
			}
			err = b.emit(t.elem, fmt.Sprintf("%s[%d]", col, i), e, true, r, def+2, reps+1)
			return err == nil
		})
		return err
	}
	pv, err := b.leaf(t, col, v)
	if err != nil {
		return err
	}
	b.leaves[t.leafLo] = append(b.leaves[t.leafLo], pv.Level(rep, def+1, t.leafLo))
	return nil
}

func kindName(v record.Value) string {
	switch v.Kind() {
	case record.Int, record.Float, record.Number:
		return "a number"
	case record.Object:
		return "an object"
	case record.Array:
		return "an array"
	}
	return "a " + v.Kind().String()
}

// leaf converts a scalar exactly, or says why it cannot be.
func (b *pqRow) leaf(t *pqType, col string, v record.Value) (parquet.Value, error) {
	bad := func(format string, a ...any) (parquet.Value, error) {
		return parquet.Value{}, &colError{col, fmt.Sprintf(format, a...)}
	}
	isNum := v.Kind() == record.Int || v.Kind() == record.Float || v.Kind() == record.Number
	switch t.kind {
	case pqJSON:
		return parquet.ByteArrayValue(v.AppendJSON(nil)), nil
	case pqString, pqBinary:
		if v.Kind() != record.String {
			return bad("holds %s, the schema says %s", kindName(v), t)
		}
		s := v.Text()
		if t.kind == pqString && !utf8.ValidString(s) {
			return bad("the string holds bytes that are not UTF-8, which a string column cannot: declare the column binary")
		}
		return parquet.ByteArrayValue([]byte(s)), nil
	case pqBool:
		if v.Kind() != record.Bool {
			return bad("holds %s, the schema says bool", kindName(v))
		}
		return parquet.BooleanValue(v.Bool()), nil
	case pqInt32, pqInt64:
		if !isNum {
			return bad("holds %s, the schema says %s", kindName(v), t)
		}
		i, err := v.Int()
		if err != nil {
			return bad("%s is not an integer that %s holds", v.Literal(), t)
		}
		if t.kind == pqInt32 {
			if i < math.MinInt32 || i > math.MaxInt32 {
				return bad("%s is out of the int32 range", v.Literal())
			}
			return parquet.Int32Value(int32(i)), nil
		}
		return parquet.Int64Value(i), nil
	case pqDouble:
		if !isNum {
			return bad("holds %s, the schema says double", kindName(v))
		}
		f, err := v.Float()
		if err != nil {
			return bad("%s has no exact double: declare the column decimal(P,S) or string", v.Literal())
		}
		return parquet.DoubleValue(f), nil
	case pqDecimal:
		if !isNum {
			return bad("holds %s, the schema says %s", kindName(v), t)
		}
		u, err := unscaled(v.Literal(), t.prec, t.scale)
		if err != nil {
			return bad("%s does not fit %s: %v", v.Literal(), t, err)
		}
		if t.prec <= 18 {
			return parquet.Int64Value(u.Int64()), nil
		}
		return parquet.FixedLenByteArrayValue(twos16(u)), nil
	case pqTimestamp:
		n, err := timestampValue(v, t)
		if err != nil {
			return bad("%v", err)
		}
		return parquet.Int64Value(n), nil
	case pqDate:
		if v.Kind() != record.String {
			return bad("holds %s, the schema says date (a string such as 2026-02-01)", kindName(v))
		}
		d, err := time.Parse(time.DateOnly, v.Text())
		if err != nil {
			return bad("%q is not a date such as 2026-02-01", v.Text())
		}
		return parquet.Int32Value(int32(d.Unix() / 86400)), nil
	}
	return bad("unsupported type %s", t)
}

// unscaled returns the decimal literal lit times 10^scale, which must be an
// integer of at most prec digits.
func unscaled(lit string, prec, scale int) (*big.Int, error) {
	r, ok := new(big.Rat).SetString(lit)
	if !ok {
		return nil, fmt.Errorf("not a number")
	}
	r.Mul(r, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale)), nil)))
	if !r.IsInt() {
		return nil, fmt.Errorf("more than %d digits after the point", scale)
	}
	u := r.Num()
	if len(strings.TrimPrefix(u.String(), "-")) > prec {
		return nil, fmt.Errorf("more than %d digits", prec)
	}
	return u, nil
}

// twos16 is u as 16 bytes of big-endian two's complement.
func twos16(u *big.Int) []byte {
	out := make([]byte, 16)
	if u.Sign() >= 0 {
		return u.FillBytes(out)
	}
	// -x = 2^128 - x
	m := new(big.Int).Lsh(big.NewInt(1), 128)
	return m.Add(m, u).FillBytes(out)
}

var unitDiv = map[string]int64{"ms": 1e6, "us": 1e3, "ns": 1}

// timestampValue converts an RFC 3339 string (or an integer, a count of the
// column's unit since 1970) to the column's unit, exactly.
func timestampValue(v record.Value, t *pqType) (int64, error) {
	switch v.Kind() {
	case record.Int, record.Number:
		i, err := v.Int()
		if err != nil {
			return 0, fmt.Errorf("%s is not an integer count of %s", v.Literal(), t.unit)
		}
		return i, nil
	case record.String:
	default:
		return 0, fmt.Errorf("holds %s, the schema says %s (an RFC 3339 string)", kindName(v), t)
	}
	s := v.Text()
	var ts time.Time
	var err error
	if t.local {
		ts, err = time.Parse("2006-01-02T15:04:05.999999999", s)
		if err != nil {
			return 0, fmt.Errorf("%q is not a wall-clock time such as 2026-02-01T19:27:17 (no zone: the column is local)", s)
		}
	} else {
		ts, err = time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return 0, fmt.Errorf("%q is not an RFC 3339 time such as 2026-02-01T19:27:17Z", s)
		}
	}
	div := unitDiv[t.unit]
	sec, nsec := ts.Unix(), int64(ts.Nanosecond())
	if nsec%div != 0 {
		return 0, fmt.Errorf("%q is more precise than the column's unit (%s): declare timestamp(ns) or round it", s, t.unit)
	}
	per := int64(1e9) / div
	if sec > math.MaxInt64/per || sec < math.MinInt64/per {
		return 0, fmt.Errorf("%q is out of the range of timestamp(%s)", s, t.unit)
	}
	return sec*per + nsec/div, nil
}

// ParquetWriter writes records as rows of one parquet file.
type ParquetWriter struct {
	s   *Schema
	w   *parquet.GenericWriter[any]
	buf pqRow
	obj record.Obj
}

// NewParquetWriter returns a writer of one parquet file of schema s to out,
// its columns compressed with compression (none, gzip or zstd).
func NewParquetWriter(out io.Writer, s *Schema, compression string) *ParquetWriter {
	opts := []parquet.WriterOption{s.schema}
	switch compression {
	case "gzip":
		opts = append(opts, parquet.Compression(&parquet.Gzip))
	case "zstd":
		opts = append(opts, parquet.Compression(&parquet.Zstd))
	}
	return &ParquetWriter{s: s, w: parquet.NewGenericWriter[any](out, opts...)}
}

// Convert checks that the object value fits the schema and returns its row.
func (p *ParquetWriter) Convert(value []byte) (parquet.Row, error) {
	if err := p.obj.Reset(value); err != nil {
		return nil, err
	}
	return p.s.row(&p.obj, &p.buf)
}

// Write writes one row that Convert returned.
func (p *ParquetWriter) Write(row parquet.Row) error {
	_, err := p.w.WriteRows([]parquet.Row{row})
	return err
}

// Close writes the file's footer.
func (p *ParquetWriter) Close() error { return p.w.Close() }
