package config

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/weir-etl/weir/checkpoint"
	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/record"
)

// testSourceConfig is a connector configuration as a real source would have:
// its own options, nested ones, and the config helper types.
type testSourceConfig struct {
	Path         string   `yaml:"path"`
	PollInterval Duration `yaml:"poll_interval"`
	ReadBuffer   Size     `yaml:"read_buffer"`
	Password     string   `yaml:"password"`
	Port         int      `yaml:"port"`
	MaxLineBytes int32    `yaml:"max_line_bytes"`
	Limit        uint64   `yaml:"limit" unit:"bytes"`
	Topics       []string `yaml:"topics"`
	TLS          struct {
		CAFile string `yaml:"ca_file"`
		Verify bool   `yaml:"verify"`
	} `yaml:"tls"`
}

// Validate reports every problem as a connector.FieldError at its option
// (nested and list items too), except the password, which it reports the old
// way, as an error of the whole component.
func (c *testSourceConfig) Validate() error {
	var errs []error
	if c.Path == "" {
		errs = append(errs, connector.Fieldf("path", "missing: set the file to read, like path: /data/in.jsonl"))
	}
	if c.TLS.CAFile == "/bad" {
		errs = append(errs, connector.Fieldf("tls.ca_file", "cannot be /bad"))
	}
	for i, t := range c.Topics {
		if strings.Contains(t, " ") {
			errs = append(errs, connector.Fieldf(fmt.Sprintf("topics[%d]", i), "%q has a space: topic names have none", t))
		}
	}
	if c.Port < 0 {
		errs = append(errs, connector.Fieldf("port", "must not be negative"))
	}
	if c.Password == "reject-me" {
		errs = append(errs, fmt.Errorf("password %s is not accepted", c.Password))
	}
	return errors.Join(errs...)
}

type testSource struct {
	name string
	cfg  *testSourceConfig
}

func (*testSource) Open(context.Context, connector.Host) error                            { return nil }
func (*testSource) Poll(context.Context, *connector.Batch) error                          { return connector.ErrEndOfInput }
func (*testSource) Commit(context.Context, []connector.Commit) error                      { return nil }
func (*testSource) Close(context.Context) error                                           { return nil }
func (*testSource) Seek(context.Context, checkpoint.Partition, checkpoint.Position) error { return nil }

type testSinkConfig struct {
	Dir string `yaml:"dir"`
}

type testSink struct {
	name string
	cfg  *testSinkConfig
}

func (*testSink) Open(context.Context) error                   { return nil }
func (*testSink) Write(context.Context, []record.Record) error { return nil }
func (*testSink) Flush(context.Context) error                  { return nil }
func (*testSink) Abort(context.Context) error                  { return nil }
func (*testSink) Close(context.Context) error                  { return nil }

func init() {
	connector.RegisterSource(connector.SourceDef[testSourceConfig]{
		Name:   "test_source",
		Doc:    "a source for the configuration tests",
		Config: func() *testSourceConfig { return &testSourceConfig{PollInterval: Duration(1e9)} },
		Build: func(name string, c *testSourceConfig) (connector.Source, error) {
			if c.Path == "/fail-build" {
				return nil, fmt.Errorf("test_source: cannot open %s", c.Path)
			}
			return &testSource{name: name, cfg: c}, nil
		},
	})
	connector.RegisterSink(connector.SinkDef[testSinkConfig]{
		Name: "test_sink",
		Doc:  "a sink for the configuration tests",
		Build: func(name string, c *testSinkConfig) (connector.Sink, error) {
			return &testSink{name: name, cfg: c}, nil
		},
	})
	connector.RegisterSink(connector.SinkDef[struct{}]{
		Name: "test_optionless",
		Doc:  "a sink without options",
		Build: func(name string, _ *struct{}) (connector.Sink, error) {
			return &testSink{name: name}, nil
		},
	})
}
