package config

import (
	"encoding"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/weir-etl/weir/internal/suggest"
)

var (
	unmarshalerType     = reflect.TypeFor[yaml.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
	durationType        = reflect.TypeFor[time.Duration]()
)

// badValue reports a value that did not decode, and remembers its field: a
// connector's Validate then sees the option's default in its place, and what
// it says about that option is not news.
func (l *loader) badValue(n *yaml.Node, field, format string, args ...any) {
	l.bad = append(l.bad, field)
	l.errorf(n, field, format, args...)
}

// message returns the text of err as a problem's message: without the
// package prefix ("config: ", or yaml's), which the summary line of Errors
// carries.
func message(err error) string {
	return strings.TrimPrefix(strings.TrimPrefix(err.Error(), "yaml: "), "config: ")
}

// decode decodes n into v (addressable) strictly: an option that v has no
// field for is an error naming the valid ones. Every problem is recorded,
// each at its own line; decoding goes on past a bad option.
func (l *loader) decode(n *yaml.Node, v reflect.Value, field string) {
	n = resolve(n)
	if isNull(n) {
		return // ~ or nothing: keep the default
	}
	if v.CanAddr() {
		p := v.Addr()
		if p.Type().Implements(unmarshalerType) || (p.Type().Implements(textUnmarshalerType) && n.Kind == yaml.ScalarNode) {
			if err := n.Decode(p.Interface()); err != nil {
				l.badValue(n, field, "%s", message(err))
			}
			return
		}
	}
	switch {
	case v.Type() == expressionType:
		l.decodeExpression(n, v, field, false)
		return
	case v.Type() == conditionType:
		l.decodeExpression(n, v, field, true)
		return
	case v.Type().Implements(orderedType):
		l.decodePairs(n, v, field)
		return
	}
	if v.Type() == durationType {
		// yaml.v3 reads a bare 5 as 5 nanoseconds; require a unit instead.
		if n.Kind != yaml.ScalarNode {
			l.badValue(n, field, "must be a duration, like 5s or 100ms")
			return
		}
		d, err := ParseDuration(n.Value)
		if err != nil {
			l.badValue(n, field, "%s", message(err))
			return
		}
		v.SetInt(int64(d))
		return
	}
	switch v.Kind() {
	case reflect.Struct:
		l.decodeStruct(n, v, field)
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		l.decode(n, v.Elem(), field)
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			l.badValue(n, field, "must be a list, like [a, b]; got %s", l.describe(n))
			return
		}
		s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
		for i, c := range n.Content {
			l.decode(c, s.Index(i), fmt.Sprintf("%s[%d]", field, i))
		}
		v.Set(s)
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			l.badValue(n, field, "must be a mapping of name: value; got %s", l.describe(n))
			return
		}
		if v.Type().Key().Kind() != reflect.String {
			if err := n.Decode(v.Addr().Interface()); err != nil {
				l.badValue(n, field, "is not valid here")
			}
			return
		}
		if v.IsNil() {
			v.Set(reflect.MakeMap(v.Type()))
		}
		l.eachPair(n, field, func(k, val *yaml.Node) {
			e := reflect.New(v.Type().Elem()).Elem()
			l.decode(val, e, join(field, k.Value))
			v.SetMapIndex(reflect.ValueOf(k.Value).Convert(v.Type().Key()), e)
		})
	case reflect.Interface:
		var x any
		if err := n.Decode(&x); err != nil {
			l.badValue(n, field, "%s", message(err))
			return
		}
		if x != nil {
			v.Set(reflect.ValueOf(x))
		}
	default:
		l.decodeScalar(n, v, field)
	}
}

func (l *loader) decodeScalar(n *yaml.Node, v reflect.Value, field string) {
	want := kindName(v.Type())
	if n.Kind != yaml.ScalarNode {
		l.badValue(n, field, "must be %s; got %s", want, l.describe(n))
		return
	}
	// yaml.v3's own message quotes the value, which may be a secret: say it
	// here instead, with the value shown as the file wrote it.
	if err := n.Decode(v.Addr().Interface()); err != nil {
		l.badValue(n, field, "%s is not %s", l.show(n), want)
	}
}

func kindName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "a whole number"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number, 0 or more"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	}
	return "a " + t.String()
}

// structField is one option of a configuration struct.
type structField struct {
	name  string
	index []int
	field reflect.StructField
	// size marks an integer option that is a number of bytes, written as a
	// size (64MiB, 8MB, 1024): see isSize.
	size bool
}

// isSize reports whether the option of struct field f, called name, is a
// number of bytes: an integer (not a duration) whose name ends in _bytes, or
// that carries the tag unit:"bytes". Such options take every unit a size
// takes (ParseSize), like the Size type.
func isSize(name string, f reflect.StructField) bool {
	t := f.Type
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == durationType || t == reflect.TypeFor[Duration]() || t == reflect.TypeFor[Size]() {
		return false
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return strings.HasSuffix(name, "_bytes") || f.Tag.Get("unit") == "bytes"
	}
	return false
}

// optionsOf lists the options of struct type t by their YAML names, following
// inline and embedded structs as yaml.v3 does.
func optionsOf(t reflect.Type) []structField {
	var out []structField
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("yaml")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" {
			continue
		}
		inline := strings.Contains(","+opts+",", ",inline,")
		if (inline || (f.Anonymous && tag == "")) && f.Type.Kind() == reflect.Struct {
			for _, sub := range optionsOf(f.Type) {
				sub.index = append([]int{i}, sub.index...)
				out = append(out, sub)
			}
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		out = append(out, structField{name: name, index: []int{i}, field: f, size: isSize(name, f)})
	}
	return out
}

func optionNames(fs []structField) []string {
	names := make([]string, len(fs))
	for i, f := range fs {
		names[i] = f.name
	}
	sort.Strings(names)
	return names
}

func (l *loader) decodeStruct(n *yaml.Node, v reflect.Value, field string) {
	if n.Kind != yaml.MappingNode {
		l.badValue(n, field, "must be a mapping of options; got %s", l.describe(n))
		return
	}
	fs := optionsOf(v.Type())
	byName := make(map[string]structField, len(fs))
	for _, f := range fs {
		byName[f.name] = f
	}
	l.eachPair(n, field, func(k, val *yaml.Node) {
		f, ok := byName[k.Value]
		if !ok {
			l.unknownOption(k, field, optionNames(fs))
			l.noteNames(val)
			return
		}
		fv := v.FieldByIndex(f.index)
		if f.size {
			l.decodeSize(val, fv, join(field, k.Value))
			return
		}
		l.decode(val, fv, join(field, k.Value))
	})
}

// decodeSize decodes a size option (see isSize) into the integer v.
func (l *loader) decodeSize(n *yaml.Node, v reflect.Value, field string) {
	n = resolve(n)
	if isNull(n) {
		return
	}
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		v = v.Elem()
	}
	if n.Kind != yaml.ScalarNode {
		l.badValue(n, field, "must be a size, like 8MiB or 1024; got %s", l.describe(n))
		return
	}
	b, err := ParseSize(n.Value)
	if err != nil {
		// errorf shows a substituted value as the file wrote it.
		l.badValue(n, field, "%s", message(err))
		return
	}
	switch {
	case v.CanInt() && !v.OverflowInt(b):
		v.SetInt(b)
	case v.CanUint() && !v.OverflowUint(uint64(b)):
		v.SetUint(uint64(b))
	default:
		l.badValue(n, field, "%s is too large for this option", l.show(n))
	}
}

// noteNames keeps the plain words in the value of an unknown option (the
// names in `from: [in]`): a source it names is not reported as feeding
// nothing, which would be the same mistake told twice.
func (l *loader) noteNames(val *yaml.Node) {
	switch val.Kind {
	case yaml.ScalarNode:
		if l.unknownNames == nil {
			l.unknownNames = map[string]bool{}
		}
		base, _, _ := strings.Cut(val.Value, ".")
		l.unknownNames[base] = true
	case yaml.SequenceNode:
		for _, c := range val.Content {
			if c.Kind == yaml.ScalarNode {
				l.noteNames(c)
			}
		}
	}
}

// unknownOption reports key k, which is not among valid.
func (l *loader) unknownOption(k *yaml.Node, field string, valid []string) {
	own := len(valid) > 0
	if c := l.common[field]; len(c) > 0 {
		valid = slices.Sorted(slices.Values(slices.Concat(valid, c)))
	}
	msg := fmt.Sprintf("unknown option %q", k.Value)
	meant := suggest.Closest(k.Value, valid)
	if meant != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", meant)
	}
	switch {
	case len(valid) == 0:
		msg += "; this component takes no options"
	case !own:
		msg += "; this component takes no options of its own; valid options: " + strings.Join(valid, ", ")
	default:
		msg += "; valid options: " + strings.Join(valid, ", ")
	}
	l.errorf(k, field, "%s", msg)
	if meant != "" {
		// "paths: is empty" would be the same mistake told again.
		l.explain(join(field, meant))
	} else if len(l.errs) > 0 {
		l.errs[len(l.errs)-1].unknown = k.Value
	}
}

// eachPair calls f for each key and value of mapping n, reporting keys that
// are not plain strings or that appear twice (yaml.v3 reports duplicates only
// when decoding into a map, and this loader walks nodes itself).
func (l *loader) eachPair(n *yaml.Node, field string, f func(k, v *yaml.Node)) {
	seen := make(map[string]int)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := resolve(n.Content[i]), n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			l.errorf(k, field, "a key must be a plain name, not %s", l.describe(k))
			continue
		}
		if k.Value == "<<" {
			l.errorf(k, field, "merge keys (<<) are not supported: write the options out, or use an alias for a whole value")
			continue
		}
		if prev, dup := seen[k.Value]; dup {
			l.errorf(k, join(field, k.Value), "is set twice (first on line %d); remove one", prev)
			continue
		}
		seen[k.Value] = k.Line
		f(k, v)
	}
}

// resolve follows an alias (*name) to the node it names.
func resolve(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool {
	return n == nil || (n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null")
}

// describe names the kind of n for an error, showing a scalar's value as the
// file wrote it.
func (l *loader) describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return l.show(n)
	}
	return "something else"
}

// show returns a scalar as the file wrote it: a value that came from the
// environment shows as its ${NAME} reference, never as the value.
func (l *loader) show(n *yaml.Node) string {
	if orig, ok := l.original[n]; ok {
		return fmt.Sprintf("%q", orig)
	}
	return fmt.Sprintf("%q", n.Value)
}

// locate returns the node of the setting at path below mapping n, where path
// is in the form of a Problem's or FieldError's field: "batch.max_age",
// "inputs[1]", "tls.ca_file", "paths[2]". It is a scalar's value node (where
// an error shows the value as the file wrote it), or else the key or list
// item. When the file does not set the whole path, it is the node of the
// deepest part the file sets, or nil.
func locate(n *yaml.Node, path string) *yaml.Node {
	var at *yaml.Node
	for _, part := range strings.Split(path, ".") {
		name, rest, _ := strings.Cut(part, "[")
		if name != "" {
			k, v := keyOf(resolve(n), name)
			if k == nil {
				return at
			}
			at, n = k, v
		}
		for rest != "" {
			num, after, _ := strings.Cut(rest, "]")
			i, err := strconv.Atoi(num)
			s := resolve(n)
			if err != nil || s == nil || s.Kind != yaml.SequenceNode || i < 0 || i >= len(s.Content) {
				return at
			}
			at, n = s.Content[i], s.Content[i]
			rest = strings.TrimPrefix(after, "[")
		}
	}
	if v := resolve(n); v != nil && v.Kind == yaml.ScalarNode {
		return v
	}
	return at
}

// keyOf returns the key and value of option name in mapping n.
func keyOf(n *yaml.Node, name string) (*yaml.Node, *yaml.Node) {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil, nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == name {
			return n.Content[i], n.Content[i+1]
		}
	}
	return nil, nil
}

func join(field, name string) string {
	if field == "" {
		return name
	}
	return field + "." + name
}
