package jsonlsink

import (
	"errors"
	"strings"

	"github.com/weir-etl/weir/connector"
)

// Config is the sink's configuration: the options under a sink of
// `type: jsonl`. See linesource.Config for the tags.
type Config struct {
	Dir    string `yaml:"dir" doc:"The output directory, created if missing; each flushed group becomes one file in it. One sink owns it."`
	Prefix string `yaml:"prefix" doc:"The start of the files' names, PREFIX-NNNNNNNN.jsonl, numbered in the order they became visible; default part."`
}

// NewConfig returns a Config with the defaults filled in.
func NewConfig() *Config { return &Config{Prefix: "part"} }

// Validate reports every invalid option at once, each naming the option and
// the fix.
func (c *Config) Validate() error {
	var errs []error
	if c.Dir == "" {
		errs = append(errs, connector.Fieldf("dir", "is empty: set the output directory, e.g. dir: ./out"))
	}
	switch {
	case c.Prefix == "":
		errs = append(errs, connector.Fieldf("prefix", "is empty: set the start of the files' names, e.g. prefix: part"))
	case strings.ContainsAny(c.Prefix, `/\`):
		errs = append(errs, connector.Fieldf("prefix", "%q holds a path separator: it is a file name's start; put the directory in dir", c.Prefix))
	case strings.HasPrefix(c.Prefix, "."):
		errs = append(errs, connector.Fieldf("prefix", "%q starts with a dot, which marks the sink's temporary files: remove the dot", c.Prefix))
	}
	return errors.Join(errs...)
}

func init() {
	connector.RegisterSink(connector.SinkDef[Config]{
		Name:   "jsonl",
		Doc:    "writes record values as JSON lines, a file per flushed group, visible once durable (an example sink; see docs/connectors.md)",
		Config: NewConfig,
		Build:  func(name string, c *Config) (connector.Sink, error) { return New(name, c) },
	})
}
