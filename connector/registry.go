package connector

import (
	"fmt"
	"reflect"
	"sort"
	"sync"
)

// SourceDef declares a source type for RegisterSource. C is the type's
// configuration struct: the YAML options under a component of this type are
// decoded into a *C strictly (an unknown option is an error naming its line),
// and C's exported fields, their `yaml` names and `doc` tags, and the values
// Config fills in are what `weir help TYPE` and the JSON schema show.
type SourceDef[C any] struct {
	Name string // the `type:` value in the configuration
	Doc  string // one line, for `weir help`
	// Config returns a fresh configuration with the defaults filled in. Nil
	// means the zero C.
	Config func() *C
	// Build creates the source from a decoded configuration whose Validate
	// method (if *C has one) returned nil.
	Build func(name string, cfg *C) (Source, error)
}

// SinkDef declares a sink type for RegisterSink; see SourceDef.
type SinkDef[C any] struct {
	Name   string
	Doc    string
	Config func() *C
	Build  func(name string, cfg *C) (Sink, error)
}

// SourceType is a registered source type, as the configuration loader sees
// it: the configuration is an opaque pointer made by NewConfig and handed back
// to Build.
type SourceType struct {
	Name string
	Doc  string
	// ConfigType is the configuration struct's type (C of the SourceDef).
	ConfigType reflect.Type
	// NewConfig returns a *C with its defaults filled in.
	NewConfig func() any
	// Build creates the source from what NewConfig returned, once decoded
	// and validated.
	Build func(name string, cfg any) (Source, error)
}

// SinkType is a registered sink type; see SourceType.
type SinkType struct {
	Name       string
	Doc        string
	ConfigType reflect.Type
	NewConfig  func() any
	Build      func(name string, cfg any) (Sink, error)
}

var (
	regMu   sync.Mutex
	sources = map[string]SourceType{}
	sinks   = map[string]SinkType{}
)

// RegisterSource makes a source type available; connector packages call it
// from init. Registering a name twice, or an empty name or nil Build, panics:
// these are programming errors found at start.
func RegisterSource[C any](d SourceDef[C]) {
	if d.Name == "" || d.Build == nil {
		panic("connector: RegisterSource needs a Name and a Build function")
	}
	build := d.Build
	t := SourceType{Name: d.Name, Doc: d.Doc, ConfigType: reflect.TypeFor[C](), NewConfig: newConfig(d.Config),
		Build: func(name string, cfg any) (Source, error) {
			c, err := configOf[C](d.Name, cfg)
			if err != nil {
				return nil, err
			}
			return build(name, c)
		}}
	regMu.Lock()
	defer regMu.Unlock()
	if _, dup := sources[t.Name]; dup {
		panic(fmt.Sprintf("connector: source type %q registered twice", t.Name))
	}
	sources[t.Name] = t
}

// RegisterSink makes a sink type available; see RegisterSource.
func RegisterSink[C any](d SinkDef[C]) {
	if d.Name == "" || d.Build == nil {
		panic("connector: RegisterSink needs a Name and a Build function")
	}
	build := d.Build
	t := SinkType{Name: d.Name, Doc: d.Doc, ConfigType: reflect.TypeFor[C](), NewConfig: newConfig(d.Config),
		Build: func(name string, cfg any) (Sink, error) {
			c, err := configOf[C](d.Name, cfg)
			if err != nil {
				return nil, err
			}
			return build(name, c)
		}}
	regMu.Lock()
	defer regMu.Unlock()
	if _, dup := sinks[t.Name]; dup {
		panic(fmt.Sprintf("connector: sink type %q registered twice", t.Name))
	}
	sinks[t.Name] = t
}

func newConfig[C any](f func() *C) func() any {
	if f == nil {
		return func() any { return new(C) }
	}
	return func() any { return f() }
}

// configOf is the one type assertion of the registry: the loader hands Build
// what NewConfig made, so a mismatch is a bug in the caller.
func configOf[C any](typ string, cfg any) (*C, error) {
	c, ok := cfg.(*C)
	if !ok || c == nil {
		return nil, fmt.Errorf("connector: type %s: configuration is %T, want %T", typ, cfg, (*C)(nil))
	}
	return c, nil
}

// LookupSource returns the source type called name.
func LookupSource(name string) (SourceType, bool) {
	regMu.Lock()
	defer regMu.Unlock()
	t, ok := sources[name]
	return t, ok
}

// LookupSink returns the sink type called name.
func LookupSink(name string) (SinkType, bool) {
	regMu.Lock()
	defer regMu.Unlock()
	t, ok := sinks[name]
	return t, ok
}

// SourceTypes returns the registered source type names, sorted.
func SourceTypes() []string { return names(sources) }

// SinkTypes returns the registered sink type names, sorted.
func SinkTypes() []string { return names(sinks) }

func names[T any](m map[string]T) []string {
	regMu.Lock()
	defer regMu.Unlock()
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// leftOut holds the types a build of weir leaves out on purpose (a build
// tag), with how to get them, so that a configuration naming one is told
// why rather than that the type does not exist.
var leftOut = map[string]string{}

// LeaveOut notes that this build leaves out the type called name of kind
// ("source" or "sink"), and what to do for it (how to build a weir that has
// it). It is consulted only for a type that is not registered.
func LeaveOut(kind, name, fix string) {
	regMu.Lock()
	defer regMu.Unlock()
	leftOut[kind+"/"+name] = fix
}

// LeftOut returns what LeaveOut noted for the type called name of kind.
func LeftOut(kind, name string) (string, bool) {
	regMu.Lock()
	defer regMu.Unlock()
	fix, ok := leftOut[kind+"/"+name]
	return fix, ok
}
