// Command weir runs stream ETL pipelines described in YAML.
//
// Exit codes: 0 success; 1 configuration error; 2 usage error; 3 runtime
// failure or halt; 130 a second interrupt, which exits at once.
package main

import (
	"os"

	"github.com/weir-etl/weir/internal/cli"

	// Connectors register themselves with the configuration.
	_ "github.com/weir-etl/weir/sink/blackhole"
	_ "github.com/weir-etl/weir/sink/file"
	_ "github.com/weir-etl/weir/sink/kafka"
	_ "github.com/weir-etl/weir/sink/postgres"
	_ "github.com/weir-etl/weir/sink/stdout"
	_ "github.com/weir-etl/weir/source/file"
	_ "github.com/weir-etl/weir/source/generate"
	_ "github.com/weir-etl/weir/source/kafka"
	_ "github.com/weir-etl/weir/source/pgcdc"
)

func main() { os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr)) }
