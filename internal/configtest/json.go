package configtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"slices"
	"strconv"

	"go.yaml.in/yaml/v3"

	"github.com/weir-etl/weir/record"
)

// jsonOf appends the JSON of a YAML value to dst, keeping the order of
// mappings and the literals of numbers as written.
func jsonOf(dst []byte, n *yaml.Node) ([]byte, error) {
	for n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	switch n.Kind {
	case yaml.MappingNode:
		dst = append(dst, '{')
		for i := 0; i+1 < len(n.Content); i += 2 {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = record.AppendString(dst, n.Content[i].Value)
			dst = append(dst, ':')
			var err error
			if dst, err = jsonOf(dst, n.Content[i+1]); err != nil {
				return dst, err
			}
		}
		return append(dst, '}'), nil
	case yaml.SequenceNode:
		dst = append(dst, '[')
		for i, c := range n.Content {
			if i > 0 {
				dst = append(dst, ',')
			}
			var err error
			if dst, err = jsonOf(dst, c); err != nil {
				return dst, err
			}
		}
		return append(dst, ']'), nil
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!null":
			return append(dst, "null"...), nil
		case "!!bool":
			b, _ := strconv.ParseBool(n.Value)
			return strconv.AppendBool(dst, b), nil
		case "!!int", "!!float":
			if json.Valid([]byte(n.Value)) {
				return append(dst, n.Value...), nil // the literal as written
			}
			var f float64
			if err := n.Decode(&f); err != nil {
				return dst, fmt.Errorf("%q is not a number JSON can hold", n.Value)
			}
			b, err := json.Marshal(f)
			if err != nil {
				return dst, fmt.Errorf("%q is not a number JSON can hold", n.Value)
			}
			return append(dst, b...), nil
		}
		return record.AppendString(dst, n.Value), nil
	}
	return dst, fmt.Errorf("a value YAML cannot give as JSON")
}

// sameRecord reports whether got is the record want describes: the value
// byte for byte, or as JSON when want's was written as YAML; the key,
// headers and time when want gives them.
func sameRecord(want Rec, got *gotRec) bool {
	if want.Structured {
		if !jsonEqual(want.Value, got.Value) {
			return false
		}
	} else if !bytes.Equal(want.Value, got.Value) {
		return false
	}
	if want.Key != nil && (got.Key == nil || *want.Key != string(got.Key)) {
		return false
	}
	if want.Headers != nil && !slices.Equal(want.Headers, got.Headers) {
		return false
	}
	if !want.Time.IsZero() && !want.Time.Equal(got.Time) {
		return false
	}
	return true
}

// jsonEqual reports whether a and b are the same JSON value: the same
// members (in any order), items in order, numbers of equal value (79.8 and
// 79.80 are equal; 79.8 and 79.80000000000001 are not).
func jsonEqual(a, b []byte) bool {
	va, err := decodeJSON(a)
	if err != nil {
		return false
	}
	vb, err := decodeJSON(b)
	if err != nil {
		return false
	}
	return equalValues(va, vb)
}

func decodeJSON(b []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	if d.More() {
		return nil, fmt.Errorf("more than one value")
	}
	return v, nil
}

func equalValues(a, b any) bool {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !equalValues(v, w) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !equalValues(x[i], y[i]) {
				return false
			}
		}
		return true
	case json.Number:
		y, ok := b.(json.Number)
		if !ok {
			return false
		}
		rx, okx := new(big.Rat).SetString(string(x))
		ry, oky := new(big.Rat).SetString(string(y))
		return okx && oky && rx.Cmp(ry) == 0
	}
	return a == b
}
