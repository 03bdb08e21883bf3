package transform

import (
	"fmt"
	"reflect"
	"sort"
	"sync"
)

// Def declares a transform type for Register, as connector.SourceDef does a
// source type. C is the type's configuration struct: the options under a
// transform of this type (beside type and inputs) are decoded into a *C
// strictly, and C's exported fields, their `yaml` names and `doc` tags,
// and the values Config fills in are what `weir help TYPE`, `weir list`,
// the JSON schema and docs/config.md show. A field of type Expression or
// Condition is compiled when the file is loaded, and its problems are
// reported at its line and column with a caret; Pairs keeps a mapping in
// the file's order.
type Def[C any] struct {
	Name string // the `type:` value in the configuration
	Doc  string // one line, for `weir help` and `weir list`
	// Config returns a fresh configuration with the defaults filled in. Nil
	// means the zero C.
	Config func() *C
	// Build creates the transform from a decoded configuration. Set it, or
	// BuildRouter for a transform with named outputs.
	Build       func(name string, cfg *C) (Transform, error)
	BuildRouter func(name string, cfg *C) (Router, error)
	// Outputs names a router's outputs from its configuration, so that a
	// file whose router has a bad option still checks the inputs that name
	// its outputs. Routers only.
	Outputs func(cfg *C) []string
	// Expands says the transform may emit several records for one (as
	// flat_map does): the run summary then shows no dropped count for it.
	Expands bool
}

// Type is a registered transform type, as the configuration loader sees it:
// the configuration is an opaque pointer made by NewConfig and handed back to
// Build.
type Type struct {
	Name       string
	Doc        string
	ConfigType reflect.Type
	NewConfig  func() any
	// Build creates the transform (exactly one of the two results set).
	Build func(name string, cfg any) (Transform, Router, error)
	// Outputs names a router's outputs; nil for other transforms.
	Outputs func(cfg any) []string
	Expands bool
}

var (
	regMu sync.Mutex
	types = map[string]Type{}
)

// Register makes a transform type available; a transform's package calls
// it from init. Registering a name twice, or without a name or a build
// function, panics: these are programming errors found at start.
func Register[C any](d Def[C]) {
	if d.Name == "" || (d.Build == nil) == (d.BuildRouter == nil) {
		panic("transform: Register needs a Name and one of Build and BuildRouter")
	}
	newConfig := func() any { return new(C) }
	if d.Config != nil {
		newConfig = func() any { return d.Config() }
	}
	t := Type{Name: d.Name, Doc: d.Doc, ConfigType: reflect.TypeFor[C](), NewConfig: newConfig, Expands: d.Expands,
		Build: func(name string, cfg any) (Transform, Router, error) {
			c, ok := cfg.(*C)
			if !ok || c == nil {
				return nil, nil, fmt.Errorf("transform: type %s: configuration is %T, want %T", d.Name, cfg, (*C)(nil))
			}
			if d.Build != nil {
				tr, err := d.Build(name, c)
				return tr, nil, err
			}
			r, err := d.BuildRouter(name, c)
			return nil, r, err
		}}
	if d.BuildRouter != nil {
		t.Outputs = func(cfg any) []string {
			c, ok := cfg.(*C)
			if !ok || d.Outputs == nil {
				return nil
			}
			return d.Outputs(c)
		}
	}
	regMu.Lock()
	defer regMu.Unlock()
	if _, dup := types[t.Name]; dup {
		panic(fmt.Sprintf("transform: type %q registered twice", t.Name))
	}
	types[t.Name] = t
}

// Lookup returns the transform type called name.
func Lookup(name string) (Type, bool) {
	regMu.Lock()
	defer regMu.Unlock()
	t, ok := types[name]
	return t, ok
}

// Types returns the registered transform type names, sorted.
func Types() []string {
	regMu.Lock()
	defer regMu.Unlock()
	out := make([]string, 0, len(types))
	for k := range types {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Expression is an option that holds an expression (docs/expressions.md):
// the loader compiles it, reporting a problem at its line and column.
type Expression string

// Condition is an option that holds an expression that must give a bool.
type Condition string

// Pair is one entry of a Pairs option.
type Pair[V any] struct {
	Key   string
	Value V
}

// Pairs is a mapping option whose order matters (a map's set, a route's
// outputs): the loader keeps the file's order, which a Go map would lose.
type Pairs[V any] []Pair[V]

// OrderedMapping marks Pairs for the loader.
func (Pairs[V]) OrderedMapping() {}
