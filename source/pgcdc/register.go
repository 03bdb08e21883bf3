package pgcdc

import "github.com/weir-etl/weir/connector"

func init() {
	connector.RegisterSource(connector.SourceDef[Config]{
		Name:   "postgres_cdc",
		Doc:    "captures PostgreSQL changes from a logical replication slot (pgoutput), after an initial snapshot; the slot confirms only the committed watermark",
		Config: NewConfig,
		Build:  func(name string, c *Config) (connector.Source, error) { return New(name, c) },
	})
}
