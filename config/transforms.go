package config

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/weir-etl/weir/pipeline"
	"github.com/weir-etl/weir/transform"
)

func (p *pipelineFile) readTransform(k, v *yaml.Node, field string) {
	common, rest := p.split(v, field, transformCommon)
	p.spec.Transforms = append(p.spec.Transforms, pipeline.TransformSpec{Name: k.Value, Inputs: p.inputs(common, field), Transform: standInTransform{}})
	spec := &p.spec.Transforms[len(p.spec.Transforms)-1]
	typ, tn, ok := p.typeOf(k, common, field, transformTypeNames)
	if !ok {
		return
	}
	valid, ok := transformTypes[typ]
	if !ok {
		p.unknownType(tn, field, "transform", transformTypeNames)
		return
	}
	opts := make(map[string]*yaml.Node)
	for i := 0; i+1 < len(rest.Content); i += 2 {
		key, val := rest.Content[i], rest.Content[i+1]
		if !slices.Contains(valid, key.Value) {
			p.unknownOption(key, field, valid)
			continue
		}
		opts[key.Value] = resolve(val)
	}
	before := len(p.errs)
	construct := p.transformOf(typ, k, opts, field, spec)
	if construct == nil || len(p.errs) > before {
		return
	}
	// The options were checked one by one, each at its own line; what is
	// left for the constructor is a problem of the whole (two renames to one
	// field), reported at the transform.
	if err := construct(); err != nil {
		p.errorf(k, field, "%s", strings.TrimPrefix(err.Error(), "transform: "))
	}
}

// transformOf checks the options of a transform of type typ, and returns
// the function that constructs it into spec, or nil when an option is
// missing. A route's spec holds a stand-in with its output names until then.
func (p *pipelineFile) transformOf(typ string, k *yaml.Node, opts map[string]*yaml.Node, field string, spec *pipeline.TransformSpec) func() error {
	// set keeps the stand-in when the constructor fails.
	set := func(t transform.Transform, err error) error {
		if err == nil {
			spec.Transform = t
		}
		return err
	}
	switch typ {
	case "filter":
		cond, ok := p.expression(k, opts, "condition", field, true)
		if !ok {
			return nil
		}
		return func() error { return set(transform.NewFilter(cond)) }
	case "map":
		cfg := p.mapConfig(k, opts, field)
		return func() error { return set(transform.NewMap(cfg)) }
	case "flat_map":
		explode, ok := p.expression(k, opts, "explode", field, false)
		if !ok {
			return nil
		}
		cfg := transform.FlatMapConfig{Explode: explode}
		if n, ok := opts["as"]; ok {
			cfg.As, _ = p.scalar(n, field+".as", "a field name")
		}
		return func() error { return set(transform.NewFlatMap(cfg)) }
	case "route":
		outs := p.routeOutputs(k, opts, field)
		stand := standInRoute{outputs: []string{}}
		for _, o := range outs {
			stand.outputs = append(stand.outputs, o.Name)
		}
		spec.Transform, spec.Router = nil, stand
		return func() error {
			r, err := transform.NewRoute(outs)
			if err == nil {
				spec.Router = r
			}
			return err
		}
	}
	return nil
}

// expression reads a required expression option and compiles it, so that an
// error points at the expression's own line.
func (p *pipelineFile) expression(k *yaml.Node, opts map[string]*yaml.Node, key, field string, cond bool) (string, bool) {
	n, ok := opts[key]
	if !ok || isNull(n) {
		p.errorf(k, field+"."+key, "missing: %s needs %s", field, exampleOf(key))
		return "", false
	}
	src, ok := p.scalar(n, field+"."+key, "an expression")
	return src, ok && p.compile(n, field+"."+key, src, cond)
}

func exampleOf(key string) string {
	switch key {
	case "condition":
		return `a condition, like condition: "amount > 100"`
	case "explode":
		return "an array expression, like explode: items"
	}
	return key
}

// compile compiles src, reporting a problem at n.
func (p *pipelineFile) compile(n *yaml.Node, field, src string, cond bool) bool {
	var err error
	if cond {
		_, err = transform.CompileCondition(field, src)
	} else {
		_, err = transform.Compile(field, src)
	}
	if err == nil {
		return true
	}
	var xe *transform.ExprError
	if errors.As(err, &xe) {
		msg := fmt.Sprintf("expression %s does not compile: %s", p.show(n), xe.Msg)
		if xe.Line > 1 {
			msg += fmt.Sprintf(" (line %d, column %d of the expression)", xe.Line, xe.Column)
		} else if xe.Column > 0 {
			msg += fmt.Sprintf(" (column %d)", xe.Column)
		}
		p.errorf(n, field, "%s", msg)
	} else {
		p.errorf(n, field, "%s", err)
	}
	return false
}

// scalar returns a scalar option's text, reporting anything else.
func (p *pipelineFile) scalar(n *yaml.Node, field, what string) (string, bool) {
	n = resolve(n)
	if n.Kind != yaml.ScalarNode {
		p.errorf(n, field, "must be %s; got %s", what, p.describe(n))
		return "", false
	}
	return n.Value, true
}

func (p *pipelineFile) mapConfig(k *yaml.Node, opts map[string]*yaml.Node, field string) transform.MapConfig {
	var cfg transform.MapConfig
	if n, ok := opts["set"]; ok && !isNull(n) {
		if n.Kind != yaml.MappingNode {
			p.errorf(n, field+".set", "must be a mapping of field: expression; got %s", p.describe(n))
		} else {
			// The order of set matters (each sees the ones before), so it is
			// read from the nodes, which keep the file's order.
			p.eachPair(n, field+".set", func(fk, fv *yaml.Node) {
				f := fmt.Sprintf("%s.set[%s]", field, fk.Value)
				src, ok := p.scalar(fv, f, "an expression")
				if ok && p.compile(resolve(fv), f, src, false) {
					cfg.Set = append(cfg.Set, transform.Assignment{Field: fk.Value, Expr: src})
				}
			})
		}
	}
	if n, ok := opts["rename"]; ok && !isNull(n) {
		if n.Kind != yaml.MappingNode {
			p.errorf(n, field+".rename", "must be a mapping of old_name: new_name; got %s", p.describe(n))
		} else {
			p.eachPair(n, field+".rename", func(fk, fv *yaml.Node) {
				to, _ := p.scalar(fv, fmt.Sprintf("%s.rename[%s]", field, fk.Value), "the new field name")
				cfg.Rename = append(cfg.Rename, transform.Rename{From: fk.Value, To: to})
			})
		}
	}
	if n, ok := opts["delete"]; ok && !isNull(n) {
		if n.Kind != yaml.SequenceNode {
			p.errorf(n, field+".delete", "must be a list of field names, like [a, b.c]; got %s", p.describe(n))
		} else {
			for i, c := range n.Content {
				d, _ := p.scalar(c, fmt.Sprintf("%s.delete[%d]", field, i), "a field name")
				cfg.Delete = append(cfg.Delete, d)
			}
		}
	}
	if len(cfg.Set)+len(cfg.Rename)+len(cfg.Delete) == 0 && len(opts) == 0 {
		p.errorf(k, field, "missing: a map needs set, rename or delete")
	}
	return cfg
}

func (p *pipelineFile) routeOutputs(k *yaml.Node, opts map[string]*yaml.Node, field string) []transform.RouteOutput {
	n, ok := opts["outputs"]
	if !ok || isNull(n) {
		p.errorf(k, field+".outputs", "missing: a route needs outputs, a mapping of output name: condition")
		return nil
	}
	if n.Kind != yaml.MappingNode {
		p.errorf(n, field+".outputs", "must be a mapping of output name: condition; got %s", p.describe(n))
		return nil
	}
	var outs []transform.RouteOutput
	p.eachPair(n, field+".outputs", func(on, ov *yaml.Node) {
		f := field + ".outputs." + on.Value
		if err := transform.CheckOutputName(on.Value); err != nil {
			p.errorf(on, f, "%s", strings.TrimPrefix(err.Error(), "transform: "))
			return
		}
		src, sok := p.scalar(ov, f, "a condition")
		if sok && p.compile(resolve(ov), f, src, true) {
			outs = append(outs, transform.RouteOutput{Name: on.Value, Condition: src})
		} else {
			// Keep the name, so that inputs naming it are not reported too.
			outs = append(outs, transform.RouteOutput{Name: on.Value})
		}
	})
	if len(n.Content) == 0 {
		p.errorf(n, field+".outputs", "is empty: a route needs at least one output")
	}
	return outs
}
