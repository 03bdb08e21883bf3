package reference

import (
	// Every type weir ships, as the command has them.
	_ "github.com/weir-etl/weir/internal/builtin"
)
