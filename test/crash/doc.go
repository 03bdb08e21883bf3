// Package crash checks weir's delivery guarantee end to end, against the real
// binary: it runs file → filter → flat_map → two file sinks over about a
// million NDJSON lines, kills the process with SIGKILL at random moments,
// restarts it, and at every kill compares the positions persisted in the
// file source's state store with what the sinks have made visible.
//
//	go test -tags e2e ./test/crash/                    # a random seed, printed
//	go test -tags e2e ./test/crash/ -crash.seed=42     # replay one
//
// The guarantee checked at every kill: every input line before a persisted
// position has all its expected outputs in every sink's visible chunks. At
// the end every expected output is present in each sink, and each sink's
// duplicates are at most what was visible but not yet committed at the kills.
// The killed runs leave hidden temporary chunk files; after the final run none
// is left (its sinks' Open removed them) and no run lock file either.
//
// TestCrashUnsafeVariantIsCaught builds the binary with the unsafe_ack tag,
// whose file sink acknowledges a group before its chunks are visible, and
// asserts that the same checker reports the loss.
//
// TestCrashLiveWriterRotation follows a log that a live writer appends to and
// rotates (renamed, sometimes with an unfinished last line; or copied and
// truncated) while weir is killed at random 20 times. At every kill each
// position in the state store is a record boundary of its file, and every
// line before it is in the output; at the end every line written is in the
// output, except the few a copytruncate appends between its copy and its
// truncation (in neither file, by design). TestCrashRotationUnsafeVariantIsCaught
// builds the unsafe_rotate variant, which forgets rotated files at a restart,
// and asserts that the checker finds lines missing.
package crash
