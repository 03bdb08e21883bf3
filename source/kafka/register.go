package kafka

import (
	"github.com/weir-etl/weir/connector"
)

func init() {
	connector.RegisterSource(connector.SourceDef[Config]{
		Name:   "kafka",
		Doc:    "consumes Kafka topics as a consumer group, committing only contiguous delivered offsets",
		Config: NewConfig,
		Build:  func(name string, c *Config) (connector.Source, error) { return New(name, c) },
	})
}
