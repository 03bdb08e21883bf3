package config

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/weir-etl/weir/pipeline"
	"github.com/weir-etl/weir/transform"
)

// Kind is the kind of value an option takes, as a pipeline file writes it.
type Kind string

// The kinds of options.
const (
	KindString   Kind = "string"
	KindBool     Kind = "bool"
	KindInt      Kind = "integer"
	KindNumber   Kind = "number"
	KindDuration Kind = "duration" // 5s, 100ms, 1h30m
	KindSize     Kind = "size"     // 64MiB, 8MB, 1024
	KindList     Kind = "list"
	KindMap      Kind = "map" // name: value
	KindObject   Kind = "object"
	KindAny      Kind = "any"
	// KindExpression is a string holding an expression
	// (docs/expressions.md), KindCondition one that must give a bool.
	KindExpression Kind = "expression"
	KindCondition  Kind = "condition"
)

// Option describes one option of a pipeline file for people and editors:
// `weir help TYPE`, `weir schema` and the reference in docs/config.md are
// made from it. It comes from the configuration struct the option is
// decoded into (its `yaml`, `doc`, `unit` and `enum` tags) and from the
// defaults its type's NewConfig fills in, by the same rules the loader
// decodes with, so that it cannot describe an option the loader does not
// take.
type Option struct {
	Name string
	Kind Kind
	// Elem describes the items of a list or the values of a map.
	Elem *Option
	// Options are the members of an object.
	Options []Option
	// Default is the default as a pipeline file would write it ("250ms",
	// "1MiB", "ndjson", "true"); empty when there is none to show.
	Default string
	// DefaultValue is the default as a JSON value, for the schema; nil when
	// Default is empty.
	DefaultValue any
	// Unit is what a number counts: "bytes" for sizes, "duration", or the
	// option's `unit` tag.
	Unit string
	Doc  string
	// Enum lists the values the option takes, when the `enum` tag says.
	Enum []string
}

var (
	expressionType     = reflect.TypeFor[transform.Expression]()
	conditionType      = reflect.TypeFor[transform.Condition]()
	orderedType        = reflect.TypeFor[interface{ OrderedMapping() }]()
	configDurationType = reflect.TypeFor[Duration]()
	configSizeType     = reflect.TypeFor[Size]()
)

// Describe describes the options of configuration struct type t, in the
// order of its fields. defaults is a pointer to a t holding the defaults
// (what the type's NewConfig returns), or nil.
func Describe(t reflect.Type, defaults any) []Option {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	var dv reflect.Value
	if defaults != nil {
		dv = reflect.ValueOf(defaults)
		for dv.Kind() == reflect.Pointer && !dv.IsNil() {
			dv = dv.Elem()
		}
		if dv.Kind() != reflect.Struct || dv.Type() != t {
			dv = reflect.Value{}
		}
	}
	var out []Option
	for _, f := range optionsOf(t) {
		var v reflect.Value
		if dv.IsValid() {
			v = dv.FieldByIndex(f.index)
		}
		o := describeValue(f.field.Type, v, f.size)
		o.Name = f.name
		o.Doc = f.field.Tag.Get("doc")
		if u := f.field.Tag.Get("unit"); u != "" {
			o.Unit = u
		}
		if e := f.field.Tag.Get("enum"); e != "" {
			o.Enum = strings.Split(e, ",")
		}
		out = append(out, o)
	}
	return out
}

// describeValue describes a value of type t whose default is v (invalid for
// none); size says the option is a number of bytes (isSize).
func describeValue(t reflect.Type, v reflect.Value, size bool) Option {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
		if v.IsValid() {
			if v.IsNil() {
				v = reflect.Value{}
			} else {
				v = v.Elem()
			}
		}
	}
	var o Option
	switch {
	case t == expressionType:
		o.Kind = KindExpression
		return o
	case t == conditionType:
		o.Kind = KindCondition
		return o
	case t.Implements(orderedType):
		// Pairs: a mapping in the file, of its elements' Value.
		o.Kind = KindMap
		e := describeValue(t.Elem().Field(1).Type, reflect.Value{}, false)
		o.Elem = &e
		return o
	case t == durationType || t == configDurationType:
		o.Kind, o.Unit = KindDuration, "duration"
		if v.IsValid() {
			d := time.Duration(v.Int())
			o.Default, o.DefaultValue = FormatDuration(d), FormatDuration(d)
		}
		return o
	case t == configSizeType || size:
		o.Kind, o.Unit = KindSize, "bytes"
		if v.IsValid() {
			var n int64
			if v.CanInt() {
				n = v.Int()
			} else {
				n = int64(v.Uint())
			}
			o.Default, o.DefaultValue = FormatSize(n), FormatSize(n)
		}
		return o
	case t.Kind() == reflect.Struct && !reflect.PointerTo(t).Implements(unmarshalerType) && !reflect.PointerTo(t).Implements(textUnmarshalerType):
		o.Kind = KindObject
		var def any
		if v.IsValid() {
			c := reflect.New(t)
			c.Elem().Set(v)
			def = c.Interface()
		}
		o.Options = Describe(t, def)
		return o
	}
	switch t.Kind() {
	case reflect.String:
		o.Kind = KindString
		if v.IsValid() && v.String() != "" {
			o.Default, o.DefaultValue = v.String(), v.String()
		}
	case reflect.Bool:
		o.Kind = KindBool
		if v.IsValid() {
			o.Default, o.DefaultValue = strconv.FormatBool(v.Bool()), v.Bool()
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		o.Kind = KindInt
		if v.IsValid() {
			o.Default, o.DefaultValue = strconv.FormatInt(v.Int(), 10), v.Int()
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		o.Kind = KindInt
		if v.IsValid() {
			o.Default, o.DefaultValue = strconv.FormatUint(v.Uint(), 10), v.Uint()
		}
	case reflect.Float32, reflect.Float64:
		o.Kind = KindNumber
		if v.IsValid() {
			o.Default, o.DefaultValue = strconv.FormatFloat(v.Float(), 'g', -1, 64), v.Float()
		}
	case reflect.Slice, reflect.Array:
		o.Kind = KindList
		e := describeValue(t.Elem(), reflect.Value{}, false)
		o.Elem = &e
		if v.IsValid() && v.Len() > 0 {
			o.Default, o.DefaultValue = yamlFlow(v), jsonOf(v)
		}
	case reflect.Map:
		o.Kind = KindMap
		e := describeValue(t.Elem(), reflect.Value{}, false)
		o.Elem = &e
		if v.IsValid() && v.Len() > 0 {
			o.Default, o.DefaultValue = yamlFlow(v), jsonOf(v)
		}
	default:
		o.Kind = KindAny
	}
	return o
}

// yamlFlow writes a list or map default in YAML's flow style.
func yamlFlow(v reflect.Value) string {
	var parts []string
	switch v.Kind() {
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			parts = append(parts, fmt.Sprint(v.Index(i).Interface()))
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case reflect.Map:
		iter := v.MapRange()
		for iter.Next() {
			parts = append(parts, fmt.Sprintf("%v: %v", iter.Key().Interface(), iter.Value().Interface()))
		}
		return "{" + strings.Join(parts, ", ") + "}"
	}
	return fmt.Sprint(v.Interface())
}

// jsonOf returns a list or map default as a value encoding/json writes.
func jsonOf(v reflect.Value) any {
	switch v.Kind() {
	case reflect.Slice, reflect.Array:
		out := make([]any, v.Len())
		for i := range out {
			out[i] = v.Index(i).Interface()
		}
		return out
	case reflect.Map:
		out := map[string]any{}
		iter := v.MapRange()
		for iter.Next() {
			out[fmt.Sprint(iter.Key().Interface())] = iter.Value().Interface()
		}
		return out
	}
	return v.Interface()
}

// FormatDuration writes d as a pipeline file would: 250ms, 5s, 1m30s, 1h,
// 0.
func FormatDuration(d time.Duration) string {
	if d == 0 {
		return "0"
	}
	s := d.String()
	// time.Duration writes 1m0s and 1h0m0s; a person writes 1m and 1h.
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// FormatSize writes n bytes as a pipeline file would: in the largest
// power-of-1024 unit that holds it whole (1MiB, 256KiB), else in bytes.
func FormatSize(n int64) string {
	for _, u := range []struct {
		name string
		mult int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n != 0 && n%u.mult == 0 {
			return strconv.FormatInt(n/u.mult, 10) + u.name
		}
	}
	return strconv.FormatInt(n, 10)
}

// TransformType describes a transform type: its name, one line of doc, and
// its own options (beside type and inputs).
type TransformType struct {
	Name, Doc string
	Options   []Option
}

// Sections describes the keys of a pipeline file outside the connectors'
// own options, with the runtime's defaults (pipeline.FillDefaults).
type Sections struct {
	Source     []Option // keys of every source
	Transform  []Option // keys of every transform
	Transforms []TransformType
	Sink       []Option // keys of every sink
	Checkpoint []Option
	Metrics    []Option
}

// DescribeSections describes the file's own keys.
func DescribeSections() Sections {
	sp := pipeline.Spec{Sources: []pipeline.SourceSpec{{}}, Sinks: []pipeline.SinkSpec{{}}}
	pipeline.FillDefaults(&sp)
	sk, cp := sp.Sinks[0], sp.Checkpoint
	sinkDef := &sinkOptions{
		Acknowledgements: true,
		Batch: batchOptions{MaxRecords: sk.Batch.MaxRecords, MaxBytes: Size(sk.Batch.MaxBytes), MaxAge: Duration(sk.Batch.MaxAge),
			Linger: Duration(sk.Batch.Linger), Overlap: sk.Batch.Overlap},
		Retry: retryOptions{MaxAttempts: sk.Retry.MaxAttempts, InitialBackoff: Duration(sk.Retry.InitialBackoff),
			MaxBackoff: Duration(sk.Retry.MaxBackoff), MaxElapsed: Duration(sk.Retry.MaxElapsed)},
		OnFailure: "rewind", GiveUpAfter: Duration(sk.GiveUpAfter), OnGiveUp: "halt",
	}
	cpDef := &checkpointOptions{
		CommitInterval: Duration(cp.CommitInterval), ShutdownTimeout: Duration(cp.ShutdownTimeout),
		DrainTimeout: Duration(cp.DrainTimeout), StallWarning: Duration(cp.StallWarning),
		CommitFailureTimeout: Duration(cp.CommitFailureTimeout), CommitTimeout: Duration(cp.CommitTimeout),
		MaxInFlightBatches: sp.Sources[0].MaxInFlightBatches, MaxInFlightBytes: Size(sp.Sources[0].MaxInFlightBytes),
	}
	addr := pipeline.DefaultMetricsAddress
	s := Sections{
		Source:     Describe(reflect.TypeFor[sourceOptions](), nil),
		Transform:  Describe(reflect.TypeFor[transformOptions](), nil),
		Sink:       Describe(reflect.TypeFor[sinkOptions](), sinkDef),
		Checkpoint: Describe(reflect.TypeFor[checkpointOptions](), cpDef),
		Metrics:    Describe(reflect.TypeFor[metricsOptions](), &metricsOptions{Address: &addr}),
	}
	for _, name := range transform.Types() {
		t, _ := transform.Lookup(name)
		s.Transforms = append(s.Transforms, TransformType{Name: name, Doc: t.Doc, Options: Describe(t.ConfigType, t.NewConfig())})
	}
	return s
}
