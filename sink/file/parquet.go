package file

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"

	"github.com/parquet-go/parquet-go"
)

type colKind uint8

const (
	colString colKind = iota
	colInt64
	colDouble
	colBool
	colJSON
)

var colKinds = map[string]colKind{"string": colString, "int64": colInt64, "double": colDouble, "bool": colBool, "json": colJSON}

type pqCol struct {
	name string
	kind colKind
}

// pqSchema is a flat schema of optional columns, sorted by name as parquet-go
// orders a group's fields, so a column's index is its position here.
type pqSchema struct {
	cols   []pqCol
	index  map[string]int
	schema *parquet.Schema
}

func newPQSchema(cols []pqCol) *pqSchema {
	slices.SortFunc(cols, func(a, b pqCol) int {
		switch {
		case a.name < b.name:
			return -1
		case a.name > b.name:
			return 1
		}
		return 0
	})
	g := parquet.Group{}
	idx := make(map[string]int, len(cols))
	for i, c := range cols {
		var n parquet.Node
		switch c.kind {
		case colInt64:
			n = parquet.Int(64)
		case colDouble:
			n = parquet.Leaf(parquet.DoubleType)
		case colBool:
			n = parquet.Leaf(parquet.BooleanType)
		default:
			n = parquet.String()
		}
		g[c.name] = parquet.Optional(n)
		idx[c.name] = i
	}
	return &pqSchema{cols: cols, index: idx, schema: parquet.NewSchema("record", g)}
}

func schemaFromConfig(m map[string]string) *pqSchema {
	cols := make([]pqCol, 0, len(m))
	for name, t := range m {
		cols = append(cols, pqCol{name, colKinds[t]})
	}
	return newPQSchema(cols)
}

// inferSchema takes a schema from one record's fields: strings, numbers as
// double, booleans, and anything else (objects, arrays, null) as a JSON string.
func inferSchema(fields map[string]any) *pqSchema {
	cols := make([]pqCol, 0, len(fields))
	for name, v := range fields {
		cols = append(cols, pqCol{name, kindOf(v)})
	}
	return newPQSchema(cols)
}

func kindOf(v any) colKind {
	switch v.(type) {
	case string:
		return colString
	case bool:
		return colBool
	case float64:
		// A JSON number is a double even when this one is integral: inferring
		// int64 from 89 would start a new chunk at the next 39.9. Integer
		// columns are declared in schema.
		return colDouble
	case int64, int:
		return colInt64
	}
	return colJSON
}

func isInt(f float64) bool { return f == math.Trunc(f) && math.Abs(f) < 1<<53 }

// fit returns why fields cannot be stored in the schema, or nil.
func (s *pqSchema) fit(fields map[string]any) error {
	for name, v := range fields {
		i, ok := s.index[name]
		if !ok {
			return fmt.Errorf("field %q is not in the parquet schema", name)
		}
		if v == nil {
			continue
		}
		if !accepts(s.cols[i].kind, v) {
			return fmt.Errorf("field %q holds %T, the parquet schema says %s", name, v, kindName(s.cols[i].kind))
		}
	}
	return nil
}

func accepts(k colKind, v any) bool {
	switch k {
	case colString:
		_, ok := v.(string)
		return ok
	case colBool:
		_, ok := v.(bool)
		return ok
	case colInt64:
		switch x := v.(type) {
		case float64:
			return isInt(x)
		case int64, int:
			return true
		}
		return false
	case colDouble:
		switch v.(type) {
		case float64, int64, int:
			return true
		}
		return false
	}
	return true
}

func kindName(k colKind) string {
	for n, kk := range colKinds {
		if kk == k {
			return n
		}
	}
	return "?"
}

// pqWriter writes records as rows of one parquet file.
type pqWriter struct {
	s   *pqSchema
	w   *parquet.Writer
	row parquet.Row
}

func newPQWriter(out io.Writer, s *pqSchema, compression string) *pqWriter {
	opts := []parquet.WriterOption{s.schema}
	switch compression {
	case "gzip":
		opts = append(opts, parquet.Compression(&parquet.Gzip))
	case "zstd":
		opts = append(opts, parquet.Compression(&parquet.Zstd))
	}
	return &pqWriter{s: s, w: parquet.NewWriter(out, opts...)}
}

// write adds one row; fields must fit the schema.
func (p *pqWriter) write(fields map[string]any) error {
	row := p.row[:0]
	for i, c := range p.s.cols {
		v, ok := fields[c.name]
		if !ok || v == nil {
			row = append(row, parquet.NullValue().Level(0, 0, i))
			continue
		}
		var pv parquet.Value
		switch c.kind {
		case colString:
			pv = parquet.ByteArrayValue([]byte(v.(string)))
		case colBool:
			pv = parquet.BooleanValue(v.(bool))
		case colInt64:
			pv = parquet.Int64Value(toInt(v))
		case colDouble:
			pv = parquet.DoubleValue(toFloat(v))
		default:
			b, err := json.Marshal(v)
			if err != nil {
				return fmt.Errorf("field %q: %w", c.name, err)
			}
			pv = parquet.ByteArrayValue(b)
		}
		row = append(row, pv.Level(0, 1, i))
	}
	p.row = row
	_, err := p.w.WriteRows([]parquet.Row{row})
	return err
}

func toInt(v any) int64 {
	switch x := v.(type) {
	case float64:
		return int64(x)
	case int64:
		return x
	case int:
		return int64(x)
	}
	return 0
}

func toFloat(v any) float64 {
	switch x := v.(type) {
	case float64:
		return x
	case int64:
		return float64(x)
	case int:
		return float64(x)
	}
	return 0
}

func (p *pqWriter) close() error { return p.w.Close() }
