// Command weir runs stream ETL pipelines described in YAML.
//
// Exit codes: 0 success; 1 configuration error; 2 usage error; 3 runtime
// failure or halt; 4 input left unread; 5 a config test failed; 130 a
// second interrupt, which exits at once.
package main

import (
	"os"

	"github.com/weir-etl/weir/internal/cli"

	// Every connector weir ships with registers itself.
	_ "github.com/weir-etl/weir/internal/builtin"
)

func main() { os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr)) }
