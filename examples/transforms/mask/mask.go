// Package mask is the worked example of a transform of one's own: a type
// "mask" that hides all but the last characters of string fields (card
// numbers, phone numbers). Adding a transform is this one package and the
// one transform.Register call in its init; a binary (or a test) that
// imports the package has the type in its pipeline files, `weir help`,
// `weir list` and the schema, from the Options struct's tags.
//
//	transforms:
//	  masked:
//	    type: mask
//	    inputs: [payments]
//	    fields: [card, phone]
//	    keep: 4
package mask

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/weir-etl/weir/record"
	"github.com/weir-etl/weir/transform"
)

// Options are the transform's options; the loader decodes a component's
// keys into them strictly, and the tags are its documentation.
type Options struct {
	Fields []string `yaml:"fields" doc:"Top-level fields to mask; a missing or null one is left alone, any other non-string is a record error. Required."`
	Keep   int      `yaml:"keep" doc:"Characters left visible at the end of each value."`
	With   string   `yaml:"with" doc:"The character that replaces the others."`
}

func init() {
	transform.Register(transform.Def[Options]{
		Name:   "mask",
		Doc:    "hides all but the last characters of string fields",
		Config: func() *Options { return &Options{Keep: 4, With: "*"} },
		Build:  build,
	})
}

// build checks the options, each problem naming its option (the loader
// reports it at that option's line).
func build(_ string, o *Options) (transform.Transform, error) {
	switch {
	case len(o.Fields) == 0:
		return nil, &transform.FieldError{Field: "fields", Msg: "missing: name the fields to mask, as in fields: [card]"}
	case o.Keep < 0:
		return nil, &transform.FieldError{Field: "keep", Msg: fmt.Sprintf("must be 0 or more, not %d", o.Keep)}
	case utf8.RuneCountInString(o.With) != 1:
		return nil, &transform.FieldError{Field: "with", Msg: fmt.Sprintf("must be one character, not %q", o.With)}
	}
	return &Mask{opts: *o}, nil
}

// Mask is the transform. It keeps no state per record, so one value serves
// every goroutine of the runtime, as transform.Transform requires.
type Mask struct{ opts Options }

// Process masks the fields of in and appends it to out. The runtime owns
// the record's acknowledgement: a transform only changes fields (or drops
// a record by appending nothing, or fails it with an error).
func (m *Mask) Process(in *record.Record, out []record.Record) ([]record.Record, error) {
	o, err := in.Object()
	if err != nil {
		return out, fmt.Errorf("mask: %w", err)
	}
	for _, name := range m.opts.Fields {
		v, ok := o.Get(name)
		if !ok || v.IsNull() {
			continue
		}
		if v.Kind() != record.String {
			return out, fmt.Errorf("mask: field %s is %s, not a string", name, v.Kind())
		}
		s := v.Text()
		if !utf8.ValidString(s) {
			return out, fmt.Errorf("mask: field %s holds bytes that are not UTF-8, which masking by characters would replace", name)
		}
		n := utf8.RuneCountInString(s)
		if n <= m.opts.Keep {
			continue
		}
		tail := string([]rune(s)[n-m.opts.Keep:])
		o.Set(name, record.StringValue(strings.Repeat(m.opts.With, n-m.opts.Keep)+tail))
	}
	if o.Changed() {
		// Every other member is written as it was read (record.Obj).
		in.Replace(o.AppendJSON(nil), true)
	}
	return append(out, *in), nil
}
