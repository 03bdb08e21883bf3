package kafka

import (
	"fmt"

	"github.com/weir-etl/weir/connector"
)

func init() {
	connector.RegisterSource(connector.SourceType{
		Name:      "kafka",
		Doc:       "consume Kafka topics as a consumer group, committing only contiguous delivered offsets",
		NewConfig: func() any { return NewConfig() },
		Build: func(name string, cfg any) (connector.Source, error) {
			c, ok := cfg.(*Config)
			if !ok {
				return nil, fmt.Errorf("kafka: source %s: configuration is %T, not *kafka.Config", name, cfg)
			}
			return New(name, c)
		},
	})
}
