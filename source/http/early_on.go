//go:build unsafe_early_answer

package http

import "os"

// earlyAnswer breaks the source on purpose, for the kill loop only: with
// WEIR_UNSAFE_EARLY_ANSWER=1 in a build with -tags unsafe_early_answer, a
// request is answered 200 as soon as its records are queued, before they
// are durable, as a source that acknowledged on receipt would. A crash then
// loses records the client was told were safe; test/http's kill loop must
// catch it. No normal build contains it.
var earlyAnswer = os.Getenv("WEIR_UNSAFE_EARLY_ANSWER") == "1"
