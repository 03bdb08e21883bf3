//go:build linked

package main

// Built with -tags linked, the bench links every connector weir links (and,
// without noiceberg, the Iceberg library), though the bare loop uses none of
// them: the bare loop's RSS then shows what linking them costs a process
// that does the same work, beside weir's.
import _ "github.com/weir-etl/weir/internal/builtin"
