package config

import (
	"fmt"
	"strings"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/pipeline"
	"github.com/weir-etl/weir/transform"
)

// report adds a problem pipeline.Validate found with the file's Spec. The
// rules are pipeline's; the loader only says where in the file each problem
// is: at the setting the problem names when the file sets it, else at the
// component or section (line 0 for a section the file lacks).
//
// A problem with a setting the loader has already reported is left out: it
// is the same mistake seen twice (inputs that are not a list also leave a
// sink without inputs).
func (p *pipelineFile) report(pr pipeline.Problem) {
	var at place
	switch pr.Kind {
	case "":
		// A problem of the whole Spec names the section: "sources".
		at = place{key: p.sections[pr.Field].key}
	case "checkpoint", "metrics":
		at = p.sections[pr.Kind]
		at.field = pr.Kind
	default:
		at = p.comps[component{pr.Kind, pr.Name}]
	}
	n, field := at.key, at.field
	if p.namesBroken(pr) || (pr.Field == "" && strings.HasPrefix(pr.Msg, "feeds nothing") && p.unknownNames[pr.Name]) {
		return
	}
	if pr.Field != "" {
		field = join(field, pr.Field)
		if l := locate(at.value, pr.Field); l != nil {
			n = l
		}
		for _, e := range p.errs {
			if e.Field == field {
				return
			}
		}
	}
	p.errorf(n, field, "%s", pr.Msg)
}

// namesBroken reports whether pr is about an input that names a component
// whose own settings the loader already found wrong: a route whose outputs
// were given under a misspelt key has none, so "route r has no output a"
// would be the route's mistake told a second time, at its reader.
func (p *pipelineFile) namesBroken(pr pipeline.Problem) bool {
	var k int
	if _, err := fmt.Sscanf(pr.Field, "inputs[%d]", &k); err != nil || k < 0 {
		return false
	}
	var inputs []string
	switch pr.Kind {
	case "sink":
		for _, sk := range p.spec.Sinks {
			if sk.Name == pr.Name {
				inputs = sk.Inputs
			}
		}
	case "transform":
		for _, ts := range p.spec.Transforms {
			if ts.Name == pr.Name {
				inputs = ts.Inputs
			}
		}
	}
	if k >= len(inputs) {
		return false
	}
	// Only a transform: what an input may name of it (a route's outputs)
	// comes from its settings, while a source's name is valid whatever
	// its settings say.
	base, _, _ := strings.Cut(inputs[k], ".")
	at, ok := p.comps[component{"transform", base}]
	if !ok {
		return false
	}
	for _, e := range p.errs {
		if e.Field == at.field || strings.HasPrefix(e.Field, at.field+".") {
			return true
		}
	}
	return false
}

// The stand-ins take the place of a component that could not be built (its
// type is unknown, its options are wrong), so that pipeline.Validate still
// sees every component and checks the whole graph in the same pass. A Spec
// that holds one is never returned, since the component's own problem was
// reported; their methods are never called (the embedded interfaces are nil).
type (
	standInSource    struct{ connector.Source }
	standInSink      struct{ connector.Sink }
	standInTransform struct{ transform.Transform }
	standInRoute     struct {
		transform.Router
		outputs []string
	}
)

// Outputs returns the output names the file gives the route.
func (r standInRoute) Outputs() []string { return r.outputs }
