// Package view is the read model of a running pipeline and what renders it.
//
// The runtime (package pipeline) publishes one immutable Model: every
// component with its registered type, totals, rates and state, every
// source's partitions (watermark, committed position, lag, stall), the
// stalls with their reasons, readiness, and the recent events. The
// operator's views are functions of that one value: Render gives the
// document of GET /api/v1/status, the same Model's Readiness answers
// /readyz and its Stalls /debug/stalls, and the progress line, the run
// summary and `weir top` read the same fields. Nothing here reads the
// runtime's internals, takes a lock or starts a goroutine: a Model is
// never changed once published, so any number of readers may share it.
package view
