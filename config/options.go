package config

import (
	"reflect"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/weir-etl/weir/connector"
)

// decodeOptions decodes a connector's own options (rest, the keys config
// does not handle itself) into cfg, the struct its NewConfig returned, and
// validates it. It reports whether everything was valid, so that the
// component can be built.
//
// Validate runs even when some options did not decode, so that a file's
// problems come out in one pass. It then sees the defaults of those options,
// so what it says about them is left out (the decoding error already says
// what is wrong), and so are its errors about the component as a whole,
// which may come from such a default.
func (p *pipelineFile) decodeOptions(cfg any, rest, at *yaml.Node, field string) bool {
	before, badBefore := len(p.errs), len(p.bad)
	rv := reflect.ValueOf(cfg)
	switch {
	case cfg == nil:
		for i := 0; i+1 < len(rest.Content); i += 2 {
			p.unknownOption(rest.Content[i], field, nil)
		}
		return len(p.errs) == before
	case rv.Kind() != reflect.Pointer || rv.Elem().Kind() != reflect.Struct:
		// A registry entry that breaks the NewConfig contract is a bug in
		// the connector, not in the file; say so plainly.
		p.errorf(at, field, "the connector's NewConfig returned %T, not a pointer to a struct; this is a bug in the connector", cfg)
		return false
	}
	p.decodeStruct(rest, rv.Elem(), field)
	p.validateConfig(cfg, rest, at, field, p.bad[badBefore:])
	return len(p.errs) == before
}

// validateConfig calls cfg's Validate method, if it has one. It reports each
// *connector.FieldError (one, or several joined with errors.Join) at the line
// of its option, and any other error at the component.
func (p *pipelineFile) validateConfig(cfg any, opts, at *yaml.Node, field string, bad []string) {
	v, ok := cfg.(interface{ Validate() error })
	if !ok {
		return
	}
	fields, others := connector.FieldErrors(v.Validate())
	for _, fe := range fields {
		full := join(field, fe.Field)
		if fe.Field == "" {
			others = append(others, fe)
			continue
		}
		if overlaps(full, bad) {
			continue
		}
		n := locate(opts, fe.Field)
		if n == nil {
			n = at
		}
		p.errorf(n, full, "%s", fe.Msg)
	}
	if len(bad) > 0 {
		return
	}
	for _, e := range others {
		p.errorf(at, field, "%s", e)
	}
}

// overlaps reports whether the option at path is one of paths, inside one of
// them, or holds one of them.
func overlaps(path string, paths []string) bool {
	within := func(a, b string) bool {
		return strings.HasPrefix(a, b) && (len(a) == len(b) || a[len(b)] == '.' || a[len(b)] == '[')
	}
	for _, b := range paths {
		if within(path, b) || within(b, path) {
			return true
		}
	}
	return false
}
