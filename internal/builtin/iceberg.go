//go:build !noiceberg

package builtin

// The iceberg sink registers its type in init; see the package comment for
// the build that leaves it out.
import _ "github.com/weir-etl/weir/sink/iceberg"
