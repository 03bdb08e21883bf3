package pipeline

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/weir-etl/weir/checkpoint"
	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/pipeline/internal/policy"
)

// sourceRunner runs one source: a polling goroutine (poll), which owns the
// AckIssuer and is the source's connector.Host, and a checkpointer goroutine
// (checkpoint), which owns the Checkpointer and calls Commit.
type sourceRunner struct {
	rt   *runtime
	idx  int
	spec SourceSpec
	src  connector.Source
	// reattach: src was handed on by the run before, open and detached
	// (handover.go); poll reattaches it instead of opening it. Written
	// before the poller starts, read by it.
	reattach bool
	log      *slog.Logger
	cp       *checkpoint.Checkpointer

	// Each runtime goroutine of the source owns one of these; no other
	// goroutine touches it while that goroutine runs (the Report reads them
	// after it returned).
	poller pollerState       // the poller's
	ck     checkpointerState // the checkpointer goroutine's

	// hostMu guards host, so that the Host's methods may be called from any
	// goroutine (a Kafka client's rebalance callbacks run on its own). The
	// poller takes it once per batch, to check and issue it: uncontended,
	// the lock costs about 10 ns of the 0.5-1 µs a batch spends there
	// (BenchmarkIssueLock), where the name lookup it replaced took one lock
	// per batch already.
	hostMu sync.Mutex
	host   hostState

	// What crosses between the goroutines: atomics, channels and mailboxes,
	// each with its writer and reader.

	// committed is every partition's last committed position, by id (-1 for
	// none): written only by the checkpointer goroutine, which publishes a
	// new slice at each commit tick; the sinks load it (partProgress.holds).
	committed atomic.Pointer[[]checkpoint.Position]

	// In-flight accounting. The poller adds when it issues a batch; the
	// checkpointer goroutine subtracts when Drain reports the batch resolved,
	// and then signals credit. Nothing on the ack path touches these.
	inflightBatches atomic.Int64
	inflightBytes   atomic.Int64
	credit          chan struct{} // capacity 1: the checkpointer goroutine to the poller
	// issued carries each batch's bytes and issue time from the poller to
	// the checkpointer goroutine, sent before any reference of the batch can
	// be released; the checkpointer goroutine keeps them in ck.table until
	// the batch resolves.
	issued issuedQueue

	// Rewind requests from the checkpointer goroutine to the poller, which
	// applies them between two polls (doRewinds; see rewindBox).
	rewinds rewindBox

	reqs   chan hostReq  // Revoke and Lost, poller to checkpointer
	notify chan struct{} // capacity 1: the poller reached or left the end of input
	eof    atomic.Bool   // at the end of input: written by the poller, read by the checkpointer goroutine
	opened atomic.Bool   // Open returned nil: written by the poller, read at close
	cpDone chan struct{} // closed when the checkpointer goroutine returns
	// cpw is what the checkpointer goroutine waits on, for the readers that
	// must not depend on its answering (stalls.go).
	cpw cpWatch

	// caughtSent is, per worker, the number of the last caught-up flush
	// request sent through it (caughtup.go): written by the poller, read by
	// the sinks.
	caughtSent []atomic.Uint64

	// The source's metric children, looked up once: issue runs per batch.
	// Set before the goroutines start, then only read.
	mIssued, mRecordsOut prometheus.Counter

	// Skipped records and unread bytes (Host.Skipped, Host.Unread), from
	// any goroutine: skipCounts keeps its own lock.
	skips skipCounts
}

// pollerState is the poller's alone.
type pollerState struct {
	// rewindCtx, the context of the Polls, is replaced when a rewind is
	// requested; an uncancelled one is reused, so polling allocates no
	// context.
	rewindCtx context.Context
	pollCtx   context.Context // set before Open; the poller's stop

	batches batchList

	// Caught-up flush requests (caughtup.go). dispatched marks the workers
	// the poller sent batches to since its last request, and caughtSeq
	// numbers the requests.
	dispatched []bool
	caughtSeq  uint64
	// pressed is set when the poller asked the sinks for a flush because
	// it paused at its in-flight limits (pressed), until it issues a batch
	// again: one request a pause.
	pressed bool

	// read counts the records read, for the Report (read after the poller
	// returned).
	read int64
}

// checkpointerState is the checkpointer goroutine's alone.
type checkpointerState struct {
	pol *policy.Policy
	// reach lists the sinks the source's records can reach (stalls.go).
	reach []int
	// table is where the checkpointer goroutine keeps each batch's bytes
	// and issue time, taken from issued, until the batch resolves.
	table map[checkpoint.BatchID]batchInfo

	// For the Report, written at the final commit and read only after the
	// checkpointer goroutine returned: the partitions and their committed
	// positions, and what the final commit left behind, for
	// IncompleteError: partitions blocked by a failure or not committed to
	// their watermark, and batches still unresolved.
	finalParts   int
	finalPos     int64
	leftBehind   []string
	leftInFlight int64
}

// hostState is what sourceRunner.hostMu guards: the issuer and the
// partition tables.
type hostState struct {
	iss    *checkpoint.AckIssuer
	names  []string // partition names by id
	byName map[string]checkpoint.Partition
	// gens counts the assignments of each partition id (Host.Assign, not a
	// rewind): a sink's progress in a partition belongs to one assignment,
	// since another process may have written the partition in between, and
	// an id forgotten is given to the next new name.
	gens []uint64
	// starts is where each partition's next batch begins: the Assign's
	// start, a rewind's watermark, or the last batch's end. readTo is the
	// furthest end issued in the assignment: what was read, rewinds or not.
	starts []checkpoint.Position
	readTo []checkpoint.Position
	// free lists the ids of forgotten partitions, for reuse: a tail-mode file
	// source retires a partition per rotated file, and the tables must not
	// grow with them.
	free []checkpoint.Partition
}

func newSourceRunner(rt *runtime, idx int, spec SourceSpec) *sourceRunner {
	s := &sourceRunner{
		rt: rt, idx: idx, spec: spec, src: spec.Source,
		log:     rt.log.With("source", spec.Name),
		cp:      checkpoint.New(),
		host:    hostState{byName: map[string]checkpoint.Partition{}},
		ck:      checkpointerState{table: map[checkpoint.BatchID]batchInfo{}},
		credit:  make(chan struct{}, 1),
		issued:  issuedQueue{ch: make(chan issuedBatch, min(spec.MaxInFlightBatches, maxIssuedBuffer))},
		rewinds: rewindBox{sig: make(chan struct{}, 1)},
		reqs:    make(chan hostReq),
		notify:  make(chan struct{}, 1),
		cpDone:  make(chan struct{}),
	}
	s.host.iss = s.cp.NewIssuer()
	s.cpw.now = rt.now
	s.mIssued = rt.m.issued.WithLabelValues(spec.Name)
	s.mRecordsOut = rt.m.recordsOut.WithLabelValues(spec.Name)
	s.poller.batches = make(batchList, freeListSize)
	return s
}
