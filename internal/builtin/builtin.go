// Package builtin links every connector weir ships with: importing it
// registers their types. The weir command imports it, and so do the tests
// that must see what the command sees (help, the schema, the reference in
// docs/config.md, the examples in the docs).
//
// The iceberg sink is linked by iceberg.go unless the build tag noiceberg
// is set (noiceberg.go). Its dependency, apache/iceberg-go, initialises a
// Substrait function catalogue at every start of the process, whether a
// pipeline uses Iceberg or not: about 130 ms of CPU and 32 MB allocated,
// and a binary of 127 MB instead of 46 MB, of which much is paged in. A
// build for small machines that need no Iceberg leaves it out:
//
//	go build -tags noiceberg ./cmd/weir
//
// docs/DESIGN.md ("Performance against bare programs") has the figures.
package builtin

import (
	// Each registers its source or sink type in init.
	_ "github.com/weir-etl/weir/sink/blackhole"
	_ "github.com/weir-etl/weir/sink/file"
	_ "github.com/weir-etl/weir/sink/http"
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
