// Package builtin links every connector weir ships with: importing it
// registers their types. The weir command imports it, and so do the tests
// that must see what the command sees (help, the schema, the reference in
// docs/config.md, the examples in the docs).
package builtin

import (
	// Each registers its source or sink type in init.
	_ "github.com/weir-etl/weir/sink/blackhole"
	_ "github.com/weir-etl/weir/sink/file"
	_ "github.com/weir-etl/weir/sink/http"
	_ "github.com/weir-etl/weir/sink/iceberg"
	_ "github.com/weir-etl/weir/sink/kafka"
	_ "github.com/weir-etl/weir/sink/postgres"
	_ "github.com/weir-etl/weir/sink/s3"
	_ "github.com/weir-etl/weir/sink/stdout"
	_ "github.com/weir-etl/weir/source/file"
	_ "github.com/weir-etl/weir/source/generate"
	_ "github.com/weir-etl/weir/source/http"
	_ "github.com/weir-etl/weir/source/kafka"
	_ "github.com/weir-etl/weir/source/pgcdc"
	_ "github.com/weir-etl/weir/source/s3"
)
