package connector

import (
	"fmt"
	"sort"
	"sync"
)

// SourceType describes a kind of source for the configuration ("file", "kafka").
type SourceType struct {
	Name string // the `type:` value in the configuration
	Doc  string // one line, for `weir help`
	// NewConfig returns a pointer to a fresh configuration struct with its
	// defaults filled in. The configuration loader decodes the component's YAML
	// options into it strictly (unknown options are errors naming the line), then
	// calls its Validate() error method if it has one.
	NewConfig func() any
	// Build creates the source from a decoded, validated configuration.
	Build func(name string, cfg any) (Source, error)
}

// SinkType describes a kind of sink for the configuration.
type SinkType struct {
	Name      string
	Doc       string
	NewConfig func() any
	Build     func(name string, cfg any) (Sink, error)
}

var (
	regMu   sync.Mutex
	sources = map[string]SourceType{}
	sinks   = map[string]SinkType{}
)

// RegisterSource makes a source type available; connector packages call it from
// init. Registering a name twice panics.
func RegisterSource(t SourceType) {
	regMu.Lock()
	defer regMu.Unlock()
	if _, dup := sources[t.Name]; dup {
		panic(fmt.Sprintf("connector: source type %q registered twice", t.Name))
	}
	sources[t.Name] = t
}

// RegisterSink makes a sink type available; connector packages call it from init.
func RegisterSink(t SinkType) {
	regMu.Lock()
	defer regMu.Unlock()
	if _, dup := sinks[t.Name]; dup {
		panic(fmt.Sprintf("connector: sink type %q registered twice", t.Name))
	}
	sinks[t.Name] = t
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
