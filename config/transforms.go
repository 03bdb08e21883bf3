package config

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/weir-etl/weir/lang"
	"github.com/weir-etl/weir/pipeline"
	"github.com/weir-etl/weir/transform"
)

// Transforms are read as connectors are, from the registry
// (transform.Register): the options into the type's configuration struct,
// strictly, then Build. Options of type transform.Expression and
// transform.Condition are compiled as they are decoded, so that a problem
// is reported at its line and column, with the expression's line and a
// caret under the place; transform.Pairs keep the file's order.

func (p *pipelineFile) readTransform(k, v *yaml.Node, field string) {
	common, rest := p.split(v, field, transformCommon)
	p.spec.Transforms = append(p.spec.Transforms, pipeline.TransformSpec{Name: k.Value, Inputs: p.inputs(common, field), Transform: standInTransform{}})
	idx := len(p.spec.Transforms) - 1
	registered := transform.Types()
	typ, tn, ok := p.typeOf(k, common, field, registered)
	if !ok {
		return
	}
	tt, ok := transform.Lookup(typ)
	if !ok {
		p.unknownType(tn, field, "transform", registered)
		return
	}
	p.spec.Transforms[idx].Type = typ
	cfg := tt.NewConfig()
	decoded := p.decodeOptions(cfg, rest, k, field)
	if tt.Outputs != nil {
		// A route's outputs are known even when a condition is wrong, so
		// that the inputs naming them are not reported too.
		p.spec.Transforms[idx].Transform = nil
		p.spec.Transforms[idx].Router = standInRoute{outputs: append([]string{}, tt.Outputs(cfg)...)}
	}
	if !decoded {
		return
	}
	tr, r, err := tt.Build(k.Value, cfg)
	if err != nil {
		p.transformError(err, rest, k, field)
		return
	}
	if tr != nil {
		p.spec.Transforms[idx].Transform = tr
	} else {
		p.spec.Transforms[idx].Router = r
	}
}

// transformError reports what Build refused: a transform.FieldError at its
// option, an expression at its place, anything else at the transform.
func (p *pipelineFile) transformError(err error, opts, k *yaml.Node, field string) {
	var fe *transform.FieldError
	if errors.As(err, &fe) {
		n := locate(opts, fe.Field)
		if first, rest, ok := strings.Cut(fe.Field, "."); ok {
			// outputs.a.b: a member whose name may have a dot.
			if _, v := keyOf(opts, first); v != nil {
				if m, _ := keyOf(resolve(v), rest); m != nil {
					n = m
				}
			}
		}
		if n == nil {
			n = k
		}
		f := field
		if fe.Field != "" {
			f = join(field, fe.Field)
		}
		p.errorf(n, f, "%s", strings.Replace(fe.Msg, "the transform", field, 1))
		return
	}
	// What the options' own checks passed is a problem of the whole (two
	// renames to one field), reported at the transform.
	p.errorf(k, field, "%s", strings.TrimPrefix(err.Error(), "transform: "))
}

// expression compiles the expression option n (field) as it is decoded,
// reporting a problem where it is and each warning.
func (l *loader) expression(n *yaml.Node, field, src string, cond bool) {
	o := lang.Options{}
	if cond {
		o = lang.Options{Want: lang.TBool, NoDrop: true}
	}
	prog, err := lang.Compile(src, o)
	if err != nil {
		var le *lang.Error
		if !errors.As(err, &le) {
			l.errorf(n, field, "%s", err)
			return
		}
		l.exprProblem(n, field, le, fmt.Sprintf("expression %s does not compile: ", l.show(n)))
		return
	}
	for _, w := range prog.Warnings() {
		l.exprProblem(n, field, w, "")
	}
}

// exprProblem reports e, a problem at a place in the expression of node n:
// at the file's line and column of that place when the file shows the
// expression as it is (plain, quoted on one line, or a literal block), with
// the file's line and a caret under it; else at the node, with the
// expression's line and a caret.
func (l *loader) exprProblem(n *yaml.Node, field string, e *lang.Error, prefix string) {
	line, col := exprPlace(n, e, l.lines)
	msg := prefix + e.Msg
	if flag, ok := l.setBy[n]; ok {
		msg += "\n" + e.Excerpt("    ")
		l.errs = append(l.errs, &Error{File: l.file, Flag: flag, Field: field, Msg: l.redact(msg), Warning: e.Warning})
		return
	}
	if _, substituted := l.original[n]; substituted {
		// The file shows ${NAME}, and the value is not to be shown.
		l.add(n.Line, field, msg)
		return
	}
	if line > 0 && line <= len(l.lines) {
		text := strings.ReplaceAll(l.lines[line-1], "\t", " ")
		msg += "\n    " + text + "\n    " + strings.Repeat(" ", max(col-1, 0)) + "^"
	} else {
		line, col = n.Line, 0
		msg += "\n" + e.Excerpt("    ")
	}
	x := &Error{File: l.file, Line: line, Column: col, Field: field, Msg: l.redact(msg), Warning: e.Warning}
	if e.Warning {
		l.warns = append(l.warns, x)
		return
	}
	l.errs = append(l.errs, x)
}

// exprPlace returns the file's line and column of e's place in the scalar
// n, or 0, 0 when the file does not show the expression character for
// character (a folded block, escapes before the place).
func exprPlace(n *yaml.Node, e *lang.Error, lines []string) (int, int) {
	before := e.Src[:min(e.Pos, len(e.Src))]
	switch n.Style {
	case 0, yaml.SingleQuotedStyle, yaml.DoubleQuotedStyle:
		if e.Line != 1 {
			return 0, 0
		}
		col := n.Column
		if n.Style != 0 {
			col++ // the quote
			if n.Style == yaml.DoubleQuotedStyle && strings.ContainsRune(before, '\\') {
				return 0, 0
			}
			if n.Style == yaml.SingleQuotedStyle {
				col += strings.Count(before, "'") // each written ''
			}
			if n.Style == yaml.DoubleQuotedStyle && strings.ContainsAny(before, "\"\\") {
				return 0, 0
			}
		}
		// The node's line must show the text before the place as it is.
		if n.Line < 1 || n.Line > len(lines) {
			return 0, 0
		}
		return n.Line, col + utf8.RuneCountInString(before)
	case yaml.LiteralStyle:
		line := n.Line + e.Line
		if line > len(lines) {
			return 0, 0
		}
		text := lines[line-1]
		indent := len(text) - len(strings.TrimLeft(text, " "))
		return line, indent + e.Column
	}
	return 0, 0
}

// decodeExpression decodes an Expression or Condition option and compiles it.
func (l *loader) decodeExpression(n *yaml.Node, v reflect.Value, field string, cond bool) {
	if n.Kind != yaml.ScalarNode {
		l.badValue(n, field, "must be an expression; got %s", l.describe(n))
		return
	}
	v.SetString(n.Value)
	l.expression(n, field, n.Value, cond)
}

// decodePairs decodes a mapping into a transform.Pairs, in the file's
// order, each value at its own line.
func (l *loader) decodePairs(n *yaml.Node, v reflect.Value, field string) {
	if n.Kind != yaml.MappingNode {
		l.badValue(n, field, "must be a mapping of name: value, in order; got %s", l.describe(n))
		return
	}
	s := reflect.MakeSlice(v.Type(), 0, len(n.Content)/2)
	l.eachPair(n, field, func(k, val *yaml.Node) {
		e := reflect.New(v.Type().Elem()).Elem()
		e.Field(0).SetString(k.Value)
		l.decode(val, e.Field(1), join(field, k.Value))
		s = reflect.Append(s, e)
	})
	v.Set(s)
}
