// Package cdc checks the PostgreSQL change data capture source end to end,
// with the real weir binary and a real PostgreSQL server: a writer commits
// transactions continuously while `weir run` (postgres_cdc → file sink) is
// killed with SIGKILL again and again, and at every kill the slot's
// confirmed position is compared with what the file sink made visible.
//
//	bash .ci/postgres.sh start
//	eval "$(bash .ci/postgres.sh env)"
//	go test -tags integration -count=1 ./test/cdc/
//
// The guarantee checked at every kill: no transaction whose commit lies
// before the slot's confirmed flush LSN is missing (in part or whole) from
// the visible output. At the end every committed transaction is in the
// output.
//
// TestKillLoopUnsafeVariantIsCaught builds the binary with the
// unsafe_confirm tag, whose source confirms the LSN it received instead of
// the committed watermark, and asserts that the same checker reports the
// loss. TestKillDuringSnapshot kills the binary while it reads the initial
// snapshot and checks that the resumed snapshot leaves no row out.
package cdc
