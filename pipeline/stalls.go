package pipeline

import (
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/weir-etl/weir/checkpoint"
)

// Stall is one partition whose watermark waits for an unresolved or failed
// batch.
type Stall struct {
	Source    string `json:"source"`
	Partition string `json:"partition"`
	Batch     string `json:"batch"` // the oldest unresolved batch
	// AgeMillis is the age of the watermark: how long it has not moved
	// while data was pending. Rewinds and new epochs do not reset it.
	AgeMillis int64    `json:"age_ms"`
	Rewinds   int      `json:"rewinds"`           // rewinds of the partition so far
	Status    string   `json:"status"`            // "pending", or the failure that blocks it
	HeldBy    []string `json:"held_by,omitempty"` // sinks whose current group, or a sealed group, holds references of it
	// FailingSinks are the sinks the partition's records go to that are
	// failing now: the error, how often and for how long.
	FailingSinks []SinkFailure `json:"failing_sinks,omitempty"`
	Note         string        `json:"note,omitempty"`

	// since is when the stall began and at when the checkpointer goroutine
	// took the snapshot: AgeMillis is counted to the time of the read.
	since, at time.Time
}

// stalls appends every partition whose watermark waits for a batch. It reads
// the Checkpointer and the policy, so only the checkpointer goroutine calls
// it; /debug/stalls gets a snapshot.
func (s *sourceRunner) stalls(dst []Stall, states []checkpoint.PartitionState) []Stall {
	now := s.rt.now()
	for _, ps := range states {
		id := checkpoint.BatchID{Partition: ps.Partition, Epoch: ps.Epoch, Seq: ps.Next}
		if _, pending := s.ck.table[id]; !ps.Blocked && !pending {
			continue // nothing unresolved in this partition
		}
		age, rewinds := s.ck.pol.Stall(ps.Partition, now)
		st := Stall{Source: s.spec.Name, Partition: s.partName(ps.Partition), Batch: id.String(), AgeMillis: age.Milliseconds(), Rewinds: rewinds, Status: "pending"}
		if ps.Blocked {
			st.Status = ps.FailedStatus.String()
		}
		var held []checkpoint.BatchID
		for _, sk := range s.rt.sinks {
			held = sk.heldBatches(held[:0])
			for _, h := range held {
				if h == id {
					st.HeldBy = append(st.HeldBy, sk.spec.Name)
					break
				}
			}
		}
		for _, k := range s.reachable() {
			if f, failing := s.rt.sinks[k].failure(now); failing {
				st.FailingSinks = append(st.FailingSinks, f)
			}
		}
		switch {
		case len(st.HeldBy) == 0 && len(st.FailingSinks) > 0:
			st.Note = "waiting for a failing sink: its records are replayed or retried until it recovers or gives up"
		case len(st.HeldBy) == 0:
			st.Note = "no sink's current group holds it: it is queued before a transform or sink"
		}
		dst = append(dst, st)
	}
	return dst
}

// refreshStalls refreshes the /debug/stalls snapshot and logs a warning for
// each partition in newly, whose stall just passed StallWarning (once per
// stall: the policy says when).
func (s *sourceRunner) refreshStalls(l *cpLoop, newly []checkpoint.Partition) {
	l.states = s.cp.States(l.states[:0])
	list := s.stalls(nil, l.states)
	s.rt.setStalls(s.idx, list)
	now := s.rt.now()
	for _, ps := range l.states {
		age, _ := s.ck.pol.Stall(ps.Partition, now)
		s.rt.m.stalled.WithLabelValues(s.spec.Name, s.partName(ps.Partition)).Set(age.Seconds())
	}
	for _, p := range newly {
		name := s.partName(p)
		for _, st := range list {
			if st.Partition == name {
				args := []any{"partition", st.Partition, "batch", st.Batch,
					"age", time.Duration(st.AgeMillis) * time.Millisecond, "status", st.Status, "rewinds", st.Rewinds, "held_by", st.HeldBy}
				for _, f := range st.FailingSinks {
					args = append(args, "failing_sink", f.Sink, "sink_error", f.Error)
				}
				s.log.Warn("partition stalled: its watermark has not moved", args...)
			}
		}
	}
}

func (rt *runtime) setStalls(src int, list []Stall) {
	now := rt.now()
	for i := range list {
		list[i].at = now
		if list[i].AgeMillis > 0 {
			list[i].since = now.Add(-time.Duration(list[i].AgeMillis) * time.Millisecond)
		}
	}
	rt.stallBy[src].Store(&list)
}

// snapshotStalls returns the latest stall snapshot of every source, each
// stall aged to now: a snapshot the checkpointer goroutine has not refreshed
// for a while (it waits in a commit) still shows how long the watermark has
// not moved.
func (rt *runtime) snapshotStalls() []Stall {
	now := rt.now()
	out := []Stall{}
	for i := range rt.stallBy {
		l := rt.stallBy[i].Load()
		if l == nil {
			continue
		}
		for _, st := range *l {
			if !st.since.IsZero() {
				st.AgeMillis = now.Sub(st.since).Milliseconds()
			}
			out = append(out, st)
		}
	}
	return out
}

// A commit that does not answer is a stall too, and so is a checkpointer
// goroutine that waits in anything else: nothing is committed meanwhile, and
// that goroutine cannot report it, since it refreshes the stall snapshot
// itself. So it notes here when it leaves its select and when it calls
// Source.Commit; /readyz, /debug/stalls and the watcher (watch) read these
// notes against the clock, whatever the goroutine is waiting on. Times are
// the wall clock: the waits are real ones.

// cpWatch is what a source's checkpointer goroutine is waiting on. The
// checkpointer goroutine writes both fields; the HTTP handlers and the
// watcher read them.
type cpWatch struct {
	busy   atomic.Int64              // UnixNano when it left its select; 0 while it waits for work
	commit atomic.Pointer[cpCommits] // the commits' state, replaced whole at each commit
	// warned is the since of the stall last logged: the watcher's alone.
	warned time.Time
	// now is the runtime's clock (runtime.now), set before the goroutines
	// start: the writers stamp busy and commit with it, the readers age
	// them with the same clock.
	now func() time.Time
}

// cpCommits is the state of a source's commits, never changed once
// published.
type cpCommits struct {
	// since is when the first of the commits that have not succeeded
	// since began (zero once one succeeded); attempt when the
	// Source.Commit in progress began (zero when none), committing its
	// positions (the first committingNames of them; more counts the rest).
	since, attempt time.Time
	committing     []checkpoint.Commit
	more           int
	fails          int    // failed commits in a row
	lastErr        string // the last one's error
}

func (w *cpWatch) stepBegin() { w.busy.Store(w.now().UnixNano()) }
func (w *cpWatch) stepEnd()   { w.busy.Store(0) }

func (w *cpWatch) load() cpCommits {
	if c := w.commit.Load(); c != nil {
		return *c
	}
	return cpCommits{}
}

func (w *cpWatch) commitBegin(cs []checkpoint.Commit) {
	now := w.now()
	c := w.load()
	if c.since.IsZero() {
		c.since = now
	}
	n := min(len(cs), committingNames)
	c.attempt, c.committing, c.more = now, slices.Clone(cs[:n]), len(cs)-n
	w.commit.Store(&c)
}

func (w *cpWatch) commitEnd(err error) {
	c := w.load()
	c.attempt, c.committing, c.more = time.Time{}, nil, 0
	if err == nil {
		c.since, c.fails, c.lastErr = time.Time{}, 0, ""
	} else {
		c.fails++
		c.lastErr = err.Error()
	}
	w.commit.Store(&c)
}

// cpWait is a wait of the checkpointer goroutine.
type cpWait struct {
	since     time.Time // when the commits stopped succeeding, or the step began
	commit    bool      // a commit is waited for (not only a step)
	attempt   time.Time // the Commit in progress began; zero when none
	positions []string  // what it commits, "name@position", the first few
	more      int       // positions left out of them
	fails     int
	lastErr   string
	busySince time.Time // the step in progress began; zero when none
}

// committingNames is how many positions of a commit a report names.
const committingNames = 5

// wait returns what the checkpointer goroutine of s waits on, if anything.
func (s *sourceRunner) cpWait() (cpWait, bool) {
	if unsafeBlindCheckpointer {
		return cpWait{}, false
	}
	w := &s.cpw
	var c cpWait
	if b := w.busy.Load(); b != 0 {
		c.busySince = time.Unix(0, b)
	}
	cc := w.load()
	c.since, c.attempt, c.fails, c.lastErr, c.more = cc.since, cc.attempt, cc.fails, cc.lastErr, cc.more
	for _, x := range cc.committing {
		c.positions = append(c.positions, fmt.Sprintf("%s@%d", s.partName(x.Partition), x.Position))
	}
	c.commit = !c.since.IsZero()
	if !c.commit {
		c.since = c.busySince
	}
	return c, !c.since.IsZero()
}

// message says what the wait is, for /readyz, /debug/stalls and the log.
func (c cpWait) message(now time.Time, timeout time.Duration) string {
	d := now.Sub(c.since).Round(time.Millisecond)
	var b strings.Builder
	switch {
	case !c.commit:
		fmt.Fprintf(&b, "the checkpointer has waited %v in one step: nothing is committed meanwhile", d)
		return b.String()
	case c.fails == 0:
		fmt.Fprintf(&b, "a commit has not answered for %v (commit_timeout %v)", d, timeout)
	default:
		fmt.Fprintf(&b, "commits have not succeeded for %v: %d failed, retried with backoff (last error: %s)", d, c.fails, c.lastErr)
		if !c.attempt.IsZero() {
			fmt.Fprintf(&b, "; the retry in progress has not answered for %v (commit_timeout %v)", now.Sub(c.attempt).Round(time.Millisecond), timeout)
		}
	}
	if len(c.positions) > 0 {
		fmt.Fprintf(&b, "; committing %s", strings.Join(c.positions, ", "))
		if c.more > 0 {
			fmt.Fprintf(&b, " and %d more", c.more)
		}
	}
	b.WriteString("; the committed positions do not move")
	return b.String()
}

// status names the wait in /debug/stalls.
func (c cpWait) status() string {
	switch {
	case !c.commit:
		return "checkpointer_busy"
	case !c.attempt.IsZero():
		return "commit_waiting"
	}
	return "commit_failing"
}

// cpWaitListed is how long a wait lasts before /debug/stalls lists it: a
// commit takes milliseconds, and one in progress is no stall.
func cpWaitListed(warn time.Duration) time.Duration { return min(warn/2, time.Second) }

// checkpointerStalls appends the waits of the checkpointer goroutines that
// have lasted long enough to be listed, after the partitions' stalls.
func (rt *runtime) checkpointerStalls(dst []Stall) []Stall {
	now := rt.now()
	warn := rt.g.spec.Checkpoint.StallWarning
	for _, s := range rt.sources {
		if c, ok := s.cpWait(); ok && (c.fails > 0 || now.Sub(c.since) >= cpWaitListed(warn)) {
			dst = append(dst, Stall{Source: s.spec.Name, AgeMillis: now.Sub(c.since).Milliseconds(), Status: c.status(),
				Note: c.message(now, rt.g.spec.Checkpoint.CommitTimeout)})
		}
	}
	return dst
}

// stale reports whether the checkpointer goroutine of s has not refreshed
// its stall snapshot for longer than it does when it is free: it waits in a
// step, so the snapshot's ages count to now.
func (s *sourceRunner) stale(now time.Time) bool {
	b := s.cpw.busy.Load()
	return b != 0 && !unsafeBlindCheckpointer && now.Sub(time.Unix(0, b)) >= stallRefresh(s.rt.g.spec.Checkpoint.StallWarning)
}

// stallRefresh is how often a free checkpointer goroutine refreshes its
// stall snapshot.
func stallRefresh(warn time.Duration) time.Duration { return min(warn/2, 5*time.Second) }

// watch logs, once per stall, every wait of a checkpointer goroutine and
// every sink failure that has lasted StallWarning, until stop is closed. It
// runs on its own goroutine, so that a goroutine stuck in a commit or a
// write is logged too; it sleeps until the next stall could pass
// StallWarning, and at most StallWarning/2, so a stall that begins while it
// sleeps is seen on time.
func (rt *runtime) watch(stop <-chan struct{}) {
	warn := rt.g.spec.Checkpoint.StallWarning
	t := time.NewTimer(warn / 2)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		next := warn / 2
		for _, s := range rt.sources {
			if d := s.watchCheckpointer(warn); d > 0 {
				next = min(next, d)
			}
		}
		now := rt.now()
		for _, sk := range rt.sinks {
			if d := sk.watchHealth(now, warn); d > 0 {
				next = min(next, d)
			}
			if d := sk.watchCall(now, warn); d > 0 {
				next = min(next, d)
			}
		}
		t.Reset(max(next, time.Millisecond))
	}
}

// watchCheckpointer logs the wait of s's checkpointer goroutine once it has
// lasted warn, once per wait; it returns how long until a wait in progress
// lasts warn (0 for none).
func (s *sourceRunner) watchCheckpointer(warn time.Duration) time.Duration {
	c, ok := s.cpWait()
	if !ok {
		return 0
	}
	now := s.rt.now()
	if d := now.Sub(c.since); d < warn {
		return warn - d
	}
	logged := s.cpw.warned.Equal(c.since)
	s.cpw.warned = c.since
	if logged {
		return 0
	}
	if !c.commit {
		s.log.Warn("checkpointer stalled: it has waited in one step for stall_warning", "for", now.Sub(c.since).Round(time.Millisecond))
		return 0
	}
	msg := c.message(now, s.rt.g.spec.Checkpoint.CommitTimeout)
	s.log.Warn("commit stalled: the source has not confirmed a commit for stall_warning", "for", now.Sub(c.since).Round(time.Millisecond),
		"waiting", !c.attempt.IsZero(), "failures", c.fails, "commit_timeout", s.rt.g.spec.Checkpoint.CommitTimeout, "detail", msg)
	s.rt.events.add(Event{Kind: EventCommitFailed, Source: s.spec.Name, Message: "stalled: " + msg})
	return 0
}

// reachable returns the sinks that s's records can reach, through any
// transform, and their dead letter sinks. It is computed once.
func (s *sourceRunner) reachable() []int {
	if s.ck.reach != nil {
		return s.ck.reach
	}
	g := s.rt.g
	seen := make([]bool, len(g.transforms))
	reach := make([]bool, len(g.sinks))
	for _, t := range g.sourceOut[s.idx] {
		if t.sink {
			reach[t.idx] = true
		} else {
			g.downstream(t.idx, seen, reach)
		}
	}
	s.ck.reach = []int{}
	for k, ok := range reach {
		if ok {
			s.ck.reach = append(s.ck.reach, k)
			if d := g.deadLetter[k]; d >= 0 && !reach[d] {
				s.ck.reach = append(s.ck.reach, d)
			}
		}
	}
	return s.ck.reach
}
