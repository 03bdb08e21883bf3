package config

import (
	"context"
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
			p.noteNames(rest.Content[i+1])
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
	if p.check {
		p.checkEnv(rv.Elem(), rest, at, field, "", p.bad[badBefore:])
	}
	return len(p.errs) == before
}

// checkEnv reports every option named *_env (an environment variable that
// holds a secret, such as password_env) whose variable is not set, at the
// option's line, or at the component's when the value is the connector's
// default: `weir validate` catches what `weir run` would only find when it
// connects. An empty value names no variable and is the connector's to
// judge.
func (p *pipelineFile) checkEnv(v reflect.Value, opts, at *yaml.Node, field, prefix string, bad []string) {
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if !f.IsExported() || name == "-" || name == "" {
			continue
		}
		path := prefix + name
		fv := v.Field(i)
		switch {
		case fv.Kind() == reflect.Struct:
			p.checkEnv(fv, opts, at, field, path+".", bad)
		case fv.Kind() == reflect.String && strings.HasSuffix(name, "_env") && fv.String() != "":
			full := join(field, path)
			if overlaps(full, bad) {
				continue
			}
			if _, ok := p.lookup(fv.String()); ok {
				continue
			}
			n := locate(opts, path)
			how := "its value"
			if n == nil {
				n, how = at, "the default"
			}
			p.errorf(n, full, "names the environment variable %s (%s), which is not set: export it before starting weir, or set %s to the variable that holds the secret", fv.String(), how, name)
		}
	}
}

// validateConfig calls cfg's Validate method, if it has one. It reports each
// *connector.FieldError (one, or several joined with errors.Join) at the line
// of its option, and any other error at the component.
func (p *pipelineFile) validateConfig(cfg any, opts, at *yaml.Node, field string, bad []string) {
	v, ok := cfg.(interface{ Validate() error })
	if !ok {
		return
	}
	p.reportFieldErrors(v.Validate(), opts, at, field, bad)
}

// checkComponent calls Check of a built component that is a
// connector.Checker, unless the load is offline, and reports its problems
// as validateConfig does. A component whose options were wrong is not
// built, so it is not checked: its options' own problems come first.
func (p *pipelineFile) checkComponent(c any, opts, at *yaml.Node, field string) {
	chk, ok := c.(connector.Checker)
	if !ok || !p.check {
		return
	}
	p.reportFieldErrors(chk.Check(context.Background()), opts, at, field, nil)
}

// reportFieldErrors reports each *connector.FieldError of err at the line of
// its option, and any other error at the component (unless bad names
// options that did not decode, which such an error may come from).
func (p *pipelineFile) reportFieldErrors(err error, opts, at *yaml.Node, field string, bad []string) {
	fields, others := connector.FieldErrors(err)
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
