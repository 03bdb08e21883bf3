//go:build unsafe_stable_names

package http

import "os"

// stableNames breaks the source on purpose, for the tests only: with
// WEIR_UNSAFE_STABLE_NAMES=1 in a build with -tags unsafe_stable_names, its
// partitions are named by their paths alone, the same in every run, while
// their positions still start at 0. An exactly-once sink that stores
// positions then takes a new run's records for records it holds and skips
// them: data lost. The tests build this variant and must catch it. No
// normal build contains it.
var stableNames = os.Getenv("WEIR_UNSAFE_STABLE_NAMES") == "1"
