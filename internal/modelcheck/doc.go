// Package modelcheck is a small deterministic scheduler that explores the
// interleavings of concurrent Go code, for tests only. It plays the part loom
// plays for Rust: weir's ack path routes every atomic operation and its wake
// channel through internal/acksync, and under the modelcheck build tag those
// operations call Yield, so a test can run the real checkpoint code under this
// scheduler and see every schedule within a bound.
//
// # How it runs a model
//
// A model is a function that Explore calls once per schedule. It builds fresh
// state, starts goroutines with Model.Go and checks what it must with
// Model.Failf and Model.Finally. Every model goroutine is a real goroutine, but
// exactly one runs at a time: the others wait on their own channel. At each
// scheduling point (Yield, or a goroutine that parks or ends) the scheduler
// chooses who runs next, records the choice, and hands over. Code between two
// scheduling points therefore runs as one atomic step.
//
// Because Go's sync/atomic operations are sequentially consistent (the Go
// memory model says so), every execution of code whose only shared-memory
// communication goes through such operations is equivalent to some interleaving
// of them. No weaker orderings exist to explore, unlike C++ or Rust relaxed
// atomics, so the interleavings are the whole state space. Plain memory that
// two goroutines touch without synchronisation is a data race, which this
// scheduler does not look for (it serialises everything): the race detector in
// the ordinary tests does.
//
// # Exploration
//
// Schedules are explored depth first. After each one the explorer backtracks
// to the latest choice that still has an untried alternative and replays the
// prefix up to it, so a model must be deterministic apart from the schedule
// (a mismatch is reported). A preemption is a switch away from a goroutine
// that could have continued; switches when a goroutine parks or ends are free.
// Config.Preemptions bounds the preemptions per schedule, as CHESS and loom do:
// most concurrency bugs need very few, and the number of schedules grows
// polynomially with the length of the run instead of exponentially.
// Config.Exhaustive lifts the bound for small models. Config.MaxSchedules caps
// the run so CI time stays bounded; Result.Complete says whether the bound's
// space was finished.
//
// A goroutine that is switched to always performs its next operation before
// the next choice, and a goroutine's exit is not itself a choice, so two
// explored schedules always differ in the order of some pair of operations.
//
// # Failures and replay
//
// A failure (Failf, a panic in a model goroutine, a deadlock where every live
// goroutine is parked, a run longer than Config.MaxSteps) stops the schedule.
// The failing goroutine unwinds with a private panic value; the others are
// woken one at a time and unwind the same way, so nothing stays parked and no
// model goroutine ever calls testing.T.FailNow. The failure carries a compact
// token that encodes the schedule; Config.Replay (or the MODELCHECK_REPLAY
// environment variable read by Check) runs exactly that schedule again, with a
// trace of every operation and where it was called.
//
// Only one exploration runs at a time in a process (Explore holds a lock), and
// code that runs outside any model goroutine while an exploration is active
// must not reach a scheduling point: use Outside for such code.
package modelcheck
