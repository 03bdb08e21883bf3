package fileformat

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/weir-etl/weir/record"
)

// An output without a declared schema still has one parquet schema, kept
// from chunk to chunk so that readers read its chunks together
// (docs/DESIGN.md, "One parquet schema per output"):
//
//   - a column's type is inferred, as for one chunk (pqinfer.go), from every
//     record seen before it is settled, which is when the first chunk
//     holding a value of it is written; from then on it never changes;
//   - a field seen later adds a column (readers that unify by name, DuckDB's
//     union_by_name and pyarrow's unify_schemas, read the earlier chunks'
//     rows with null there);
//   - a field that has only been null is no column yet;
//   - a record with a value its settled column cannot hold exactly, or of
//     another kind than the column's (a string where it has numbers), is
//     refused, naming the column and the type to declare instead.
//
// Every chunk is written with every settled column.

// OutputSchema is the schema of every parquet chunk of one output. It is
// used from one goroutine.
type OutputSchema struct {
	where   string // where it is kept, for errors: "out/.weir-schema.json"
	cols    map[string]*outCol
	pending map[string]*colInfer // seen since the last Settle, not settled
	schema  *Schema              // of cols, nil until rebuilt
	obj     record.Obj
	row     pqRow
}

// outCol is a settled column: its type and the kind of value it holds.
type outCol struct {
	t   *pqType
	fam family
}

// NewOutputSchema returns an output schema with no columns yet; where says
// where it is kept, for the errors that name it.
func NewOutputSchema(where string) *OutputSchema {
	return &OutputSchema{where: where, cols: map[string]*outCol{}, pending: map[string]*colInfer{}}
}

// Check takes the object value b, if every field fits: a settled column's
// type exactly, or the kind of the values seen of a column not settled yet.
// Otherwise it returns why, naming the column, and takes nothing.
func (o *OutputSchema) Check(b []byte) error {
	if err := o.obj.Reset(b); err != nil {
		return fmt.Errorf("needs a JSON object: %w", err)
	}
	var err error
	o.obj.Range(func(name string, v record.Value) bool {
		f := familyOf(v)
		if f == famNone {
			return true
		}
		if c := o.cols[name]; c != nil {
			if c.fam != f {
				err = o.refuse(name, c.t, v, fmt.Sprintf("holds %s", kindName(v)), true)
			} else if why := o.fits(c.t, name, v); why != "" {
				err = o.refuse(name, c.t, v, why, true)
			}
		} else if p := o.pending[name]; p != nil && p.fam != f {
			err = o.refuse(name, p.resolve(), v, fmt.Sprintf("holds %s", kindName(v)), false)
		}
		return err == nil
	})
	if err != nil {
		return err
	}
	o.obj.Range(func(name string, v record.Value) bool {
		if familyOf(v) == famNone || o.cols[name] != nil {
			return true
		}
		p := o.pending[name]
		if p == nil {
			p = &colInfer{}
			o.pending[name] = p
		}
		p.observe(v)
		return true
	})
	return nil
}

// fits returns why v, of the kind of the column name of type t, does not
// fit it, or "". Only what can fail is converted: a string is checked, not
// copied.
func (o *OutputSchema) fits(t *pqType, name string, v record.Value) string {
	switch t.kind {
	case pqJSON, pqBinary, pqBool:
		return ""
	case pqString:
		if !utf8.ValidString(v.Text()) {
			return "the string holds bytes that are not UTF-8"
		}
		return ""
	}
	if _, err := o.row.leaf(t, name, v); err != nil {
		if ce, ok := err.(*colError); ok {
			return ce.msg
		}
		return err.Error()
	}
	return ""
}

// refuse is the error for a value v that column name, of type t, cannot
// hold; settled says whether t is settled or only what the records before
// v made of it.
func (o *OutputSchema) refuse(name string, t *pqType, v record.Value, why string, settled bool) error {
	col := fmt.Sprintf("the output's column %s has type %s, inferred from the first records that gave it a value and kept in %s", name, t, o.where)
	if !settled {
		col = fmt.Sprintf("the output's column %s holds %s values in the records before it (its type is settled when its first chunk is written, then kept)", name, famNames[o.pending[name].fam])
	}
	return &colError{name, fmt.Sprintf("%s; %s, so that all of the output's chunks read as one table: declare the sink's schema, with %s: %s (a schema lists every column)",
		why, col, name, suggest(t, v))}
}

// suggest returns a type that holds v as well as what t holds.
func suggest(t *pqType, v record.Value) string {
	f := familyOf(v)
	switch {
	case f == famNumber && (t.kind == pqInt64 || t.kind == pqDouble || t.kind == pqDecimal):
		if t.kind == pqInt64 {
			if _, err := v.Float(); err == nil {
				return "double"
			}
		}
		in, fr := decimalDigits(v.Literal())
		if t.kind == pqDecimal {
			in, fr = max(in, t.prec-t.scale), max(fr, t.scale)
		}
		if in+fr <= 38 {
			return fmt.Sprintf("decimal(%d,%d)", max(in+fr, 1), fr)
		}
		return "json"
	case f == famString && t.kind == pqTimestamp:
		if ts, err := time.Parse(time.RFC3339Nano, v.Text()); err == nil && ts.Nanosecond()%1000 != 0 {
			return "timestamp(ns, UTC)"
		}
		return "string"
	case f == famString && t.kind == pqString:
		return "binary"
	}
	return "json"
}

// Settle settles every column seen since the last Settle and returns the
// schema of all settled columns, and whether it changed.
func (o *OutputSchema) Settle() (*Schema, bool) {
	changed := len(o.pending) > 0
	for name, p := range o.pending {
		o.cols[name] = &outCol{t: p.resolve(), fam: p.fam}
	}
	clear(o.pending)
	if changed || o.schema == nil {
		cols := make([]pqField, 0, len(o.cols))
		for name, c := range o.cols {
			t := *c.t // node numbers the leaves of its own copy
			cols = append(cols, pqField{name, &t})
		}
		o.schema = newSchema(cols)
		o.schema.nullsOutside = true
	}
	return o.schema, changed
}

// Forget drops what was seen since the last Settle: the records of a group
// that was aborted, which will be written again.
func (o *OutputSchema) Forget() { clear(o.pending) }

// Empty reports whether no column is settled.
func (o *OutputSchema) Empty() bool { return len(o.cols) == 0 }

// outputFile is how an output schema is kept: each settled column's type as
// the schema option spells it, and what it holds (a number, a string, a
// bool, or json: an object or an array).
type outputFile struct {
	Note    string                   `json:"note"`
	Columns map[string]outputFileCol `json:"columns"`
}

type outputFileCol struct {
	Type  string `json:"type"`
	Holds string `json:"holds"`
}

var famNames = map[family]string{famNumber: "number", famString: "string", famBool: "bool", famJSON: "json"}

// Encode returns the settled columns as JSON.
func (o *OutputSchema) Encode() []byte {
	f := outputFile{
		Note:    "The parquet schema weir inferred for the chunks of this directory; its columns keep these types. To change one, declare the sink's schema (with these types, changed where needed).",
		Columns: map[string]outputFileCol{},
	}
	for _, name := range slices.Sorted(maps.Keys(o.cols)) {
		c := o.cols[name]
		f.Columns[name] = outputFileCol{Type: c.t.String(), Holds: famNames[c.fam]}
	}
	b, _ := json.MarshalIndent(f, "", "  ")
	return append(b, '\n')
}

// Load replaces the settled columns with those b, from Encode, holds.
func (o *OutputSchema) Load(b []byte) error {
	var f outputFile
	if err := json.Unmarshal(b, &f); err != nil {
		return err
	}
	cols := make(map[string]*outCol, len(f.Columns))
	for name, c := range f.Columns {
		t, err := parseType(c.Type)
		if err != nil {
			return fmt.Errorf("column %s: %v", name, err)
		}
		var fam family
		for k, v := range famNames {
			if v == c.Holds {
				fam = k
			}
		}
		if fam == famNone {
			return fmt.Errorf("column %s: holds %q, which is not one of number, string, bool, json", name, c.Holds)
		}
		if t.kind == pqList || t.kind == pqStruct || !strings.Contains(kindTypes[fam], " "+t.kind.name()+" ") {
			return fmt.Errorf("column %s: type %s cannot hold a %s", name, t, c.Holds)
		}
		cols[name] = &outCol{t: t, fam: fam}
	}
	o.cols, o.schema = cols, nil
	clear(o.pending)
	return nil
}

// kindTypes are the types a column of each kind may have.
var kindTypes = map[family]string{
	famNumber: " int32 int64 double decimal json ",
	famString: " string binary timestamp date json ",
	famBool:   " bool ",
	famJSON:   " json ",
}

func (k pqKind) name() string {
	switch k {
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
		return "decimal"
	case pqTimestamp:
		return "timestamp"
	case pqDate:
		return "date"
	case pqJSON:
		return "json"
	}
	return "?"
}

// WriteRows writes the object values as one parquet file of schema s (from
// Settle) to out, its columns compressed with compression.
func WriteRows(out io.Writer, s *Schema, values [][]byte, compression string) error {
	pq := NewParquetWriter(out, s, compression)
	for _, v := range values {
		row, err := pq.Convert(v)
		if err != nil {
			// Check took it, so the schema settled from it holds it.
			return fmt.Errorf("a record the output's schema took does not fit it: %w", err)
		}
		if err := pq.Write(row); err != nil {
			return err
		}
	}
	return pq.Close()
}
