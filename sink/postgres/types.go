package postgres

import (
	"fmt"
	"strconv"
	"strings"
)

// colType is a column type the sink knows how to fill from a record.
type colType uint8

const (
	typeText colType = iota + 1
	typeSmallint
	typeInteger
	typeBigint
	typeNumeric
	typeDouble
	typeBoolean
	typeTimestamptz
	typeJSONB
	typeJSON
	typeBytea
)

// columnType is a parsed column type: the kind, and for numeric(p,s) its
// precision and scale.
type columnType struct {
	kind             colType
	precision, scale int // numeric(p,s); precision 0 means unconstrained
}

// typeNames maps every accepted spelling to its kind.
var typeNames = map[string]colType{
	"text":                     typeText,
	"smallint":                 typeSmallint,
	"int2":                     typeSmallint,
	"integer":                  typeInteger,
	"int":                      typeInteger,
	"int4":                     typeInteger,
	"bigint":                   typeBigint,
	"int8":                     typeBigint,
	"numeric":                  typeNumeric,
	"decimal":                  typeNumeric,
	"double precision":         typeDouble,
	"float8":                   typeDouble,
	"boolean":                  typeBoolean,
	"bool":                     typeBoolean,
	"timestamptz":              typeTimestamptz,
	"timestamp with time zone": typeTimestamptz,
	"jsonb":                    typeJSONB,
	"json":                     typeJSON,
	"bytea":                    typeBytea,
}

// typeList is the accepted types as the documentation lists them.
const typeList = "text, smallint, integer, bigint, numeric, numeric(p,s), double precision, boolean, timestamptz, jsonb, json, bytea"

// parseType parses a column type as written in the configuration.
func parseType(s string) (columnType, error) {
	t := strings.ToLower(strings.Join(strings.Fields(s), " "))
	if k, ok := typeNames[t]; ok {
		return columnType{kind: k}, nil
	}
	for _, pre := range []string{"numeric", "decimal"} {
		rest, ok := strings.CutPrefix(t, pre)
		if !ok {
			continue
		}
		rest = strings.TrimSpace(rest)
		if !strings.HasPrefix(rest, "(") || !strings.HasSuffix(rest, ")") {
			break
		}
		ps := strings.Split(rest[1:len(rest)-1], ",")
		if len(ps) > 2 {
			break
		}
		p, err := strconv.Atoi(strings.TrimSpace(ps[0]))
		if err != nil || p < 1 || p > 1000 {
			return columnType{}, fmt.Errorf("type %q: the precision must be 1 to 1000", s)
		}
		sc := 0
		if len(ps) == 2 {
			sc, err = strconv.Atoi(strings.TrimSpace(ps[1]))
			if err != nil || sc < 0 || sc > p {
				return columnType{}, fmt.Errorf("type %q: the scale must be 0 to the precision", s)
			}
		}
		return columnType{kind: typeNumeric, precision: p, scale: sc}, nil
	}
	return columnType{}, fmt.Errorf("type %q is not one the sink can fill: use one of %s", s, typeList)
}

// sql returns the type as written in CREATE TABLE.
func (t columnType) sql() string {
	switch t.kind {
	case typeText:
		return "text"
	case typeSmallint:
		return "smallint"
	case typeInteger:
		return "integer"
	case typeBigint:
		return "bigint"
	case typeNumeric:
		if t.precision > 0 {
			return fmt.Sprintf("numeric(%d,%d)", t.precision, t.scale)
		}
		return "numeric"
	case typeDouble:
		return "double precision"
	case typeBoolean:
		return "boolean"
	case typeTimestamptz:
		return "timestamptz"
	case typeJSONB:
		return "jsonb"
	case typeJSON:
		return "json"
	case typeBytea:
		return "bytea"
	}
	return "?"
}

// String is the type's SQL name, for messages.
func (t columnType) String() string { return t.sql() }
