package modelcheck

import (
	"fmt"
	"math/bits"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
)

// maxThreads is how many goroutines one schedule may start; the enabled set
// of a choice is a bit mask.
const maxThreads = 64

// active is the execution in progress, nil between schedules. Model goroutines
// read it at every scheduling point; the explorer sets it only while none runs.
var active atomic.Pointer[execution]

// exploreMu serialises explorations, and lets Outside wait for their end.
var exploreMu sync.Mutex

// Active reports whether an exploration is running a schedule. Code under the
// modelcheck tag uses it to fall back to plain operations outside models.
func Active() bool { return active.Load() != nil }

// Outside runs f once no exploration is in progress, and keeps explorations
// from starting until it returns. Code that may run on a goroutine the
// scheduler does not own (a runtime cleanup, say) and reaches scheduling
// points must run inside Outside, or it would take a model goroutine's turn.
func Outside(f func()) {
	exploreMu.Lock()
	defer exploreMu.Unlock()
	f()
}

// Yield is a scheduling point: the operation named op is about to touch
// shared memory. Outside an exploration it does nothing. Inside one it must be
// called from a model goroutine; the scheduler may let another goroutine run
// first.
func Yield(op string) {
	ex := active.Load()
	if ex == nil {
		return
	}
	ex.yield(op)
}

// WaitQueue is a set of model goroutines parked until Notify: the scheduler's
// counterpart of a blocking receive. The zero value is ready. A WaitQueue must
// only be used from model goroutines of the execution that created its owner.
type WaitQueue struct {
	waiters []*thread
}

// Park stops the calling model goroutine until another one calls Notify; what
// is a scheduling point. Park must only be called inside an exploration. If no
// other goroutine can run, the schedule fails as a deadlock.
func (w *WaitQueue) Park(what string) {
	ex := active.Load()
	if ex == nil {
		panic("modelcheck: Park outside an exploration")
	}
	ex.park(w, what)
}

// Notify makes every goroutine parked on w runnable again. It is not a
// scheduling point: callers yield before the operation it belongs to.
func (w *WaitQueue) Notify() {
	ex := active.Load()
	for _, t := range w.waiters {
		if t.ex == ex && t.state == blocked {
			t.state = runnable
			t.parkedOn = ""
		}
	}
	clear(w.waiters)
	w.waiters = w.waiters[:0]
}

type threadState uint8

const (
	runnable threadState = iota
	blocked
	done
)

type thread struct {
	ex       *execution
	id       int
	name     string
	run      chan struct{} // its turn; capacity 1
	state    threadState
	fresh    bool   // switched to, and has not performed its next operation yet
	parkedOn string // what it waits for, while blocked
}

// abortSignal is the panic value that unwinds model goroutines of a stopped
// schedule.
type abortSignal struct{}

// event is one scheduling point of a schedule, kept for the failure trace.
type event struct {
	thread int
	op     string
	where  string // caller, only when tracing
}

// execution is one schedule being run.
type execution struct {
	x       *explorer
	threads []*thread
	cur     *thread
	ctl     chan struct{} // to the explorer: the schedule stopped, or a goroutine unwound
	steps   int
	trace   []event
	tracing bool

	// Choices. depth counts choices with more than one runnable goroutine;
	// deviations lists those where the default was not taken (the token).
	depth      int
	preempts   int
	deviations []deviation

	aborting bool
	failure  *Failure
	finally  []func()
	finished bool // every goroutine ended; Finally callbacks run
}

type deviation struct {
	at     int // choice index
	thread int
}

func (ex *execution) spawn(name string, f func()) {
	if len(ex.threads) == maxThreads {
		panic(fmt.Sprintf("modelcheck: more than %d goroutines in one schedule", maxThreads))
	}
	t := &thread{ex: ex, id: len(ex.threads), name: name, run: make(chan struct{}, 1)}
	ex.threads = append(ex.threads, t)
	go ex.main(t, f)
}

func (ex *execution) main(t *thread, f func()) {
	<-t.run
	if ex.aborting { // torn down before it ever ran
		t.state = done
		ex.ctl <- struct{}{}
		return
	}
	defer ex.exit(t)
	f()
}

// exit ends a model goroutine, normally or by a panic, and passes the turn on.
func (ex *execution) exit(t *thread) {
	r := recover()
	t.state = done
	if r != nil && !ex.aborting {
		if _, ok := r.(abortSignal); !ok {
			ex.fail(t, fmt.Sprintf("goroutine %s panicked: %v\n%s", t.name, r, debug.Stack()))
		}
	}
	if ex.aborting {
		ex.ctl <- struct{}{}
		return
	}
	next := ex.choose(t, false)
	if ex.failure != nil {
		ex.ctl <- struct{}{}
		return
	}
	if next == nil {
		if msg := ex.deadlock(); msg != "" {
			ex.fail(t, msg)
		}
		ex.ctl <- struct{}{} // the schedule is over, or failed
		return
	}
	ex.switchTo(next)
}

func (ex *execution) yield(op string) {
	t := ex.cur
	if ex.aborting {
		return // unwinding during teardown: nobody else runs
	}
	if t.fresh {
		// It was switched to in order to perform this operation: choosing
		// again before it would only repeat the choice just made.
		t.fresh = false
		ex.record(t, op)
		return
	}
	if ex.steps++; ex.steps > ex.x.maxSteps {
		ex.fail(t, fmt.Sprintf("schedule exceeded %d scheduling points: a goroutine spins or the model does not end", ex.x.maxSteps))
		panic(abortSignal{})
	}
	next := ex.choose(t, true)
	if ex.failure != nil {
		panic(abortSignal{})
	}
	if next != t {
		ex.switchTo(next)
		ex.waitTurn(t)
	}
	t.fresh = false
	ex.record(t, op) // now it happens
}

func (ex *execution) park(w *WaitQueue, what string) {
	t := ex.cur
	if ex.aborting {
		panic(abortSignal{})
	}
	ex.record(t, "park on "+what)
	t.state = blocked
	t.parkedOn = what
	w.waiters = append(w.waiters, t)
	next := ex.choose(t, false)
	if ex.failure != nil {
		panic(abortSignal{})
	}
	if next == nil {
		ex.fail(t, ex.deadlock())
		panic(abortSignal{})
	}
	ex.switchTo(next)
	ex.waitTurn(t)
	t.fresh = false
}

func (ex *execution) switchTo(next *thread) {
	ex.cur = next
	next.fresh = true
	next.run <- struct{}{}
}

func (ex *execution) waitTurn(t *thread) {
	<-t.run
	if ex.aborting {
		panic(abortSignal{})
	}
}

func (ex *execution) record(t *thread, op string) {
	e := event{thread: t.id, op: op}
	if ex.tracing {
		e.where = caller()
	}
	ex.trace = append(ex.trace, e)
}

// caller returns the file and line of the code that reached the scheduling
// point: the first frame outside this package and internal/acksync.
func caller() string {
	pcs := make([]uintptr, 16)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(3, pcs)])
	for {
		f, more := frames.Next()
		internal := strings.Contains(f.Function, "/internal/modelcheck.") || strings.Contains(f.Function, "/internal/acksync.")
		if !internal || strings.HasSuffix(f.File, "_test.go") {
			return fmt.Sprintf("%s:%d", trimPath(f.File), f.Line)
		}
		if !more {
			return ""
		}
	}
}

func trimPath(file string) string {
	if i := strings.LastIndex(file, "/"); i >= 0 {
		if j := strings.LastIndex(file[:i], "/"); j >= 0 {
			return file[j+1:]
		}
	}
	return file
}

// choose picks the goroutine to run after cur reached a scheduling point;
// canContinue says whether cur itself may go on. It returns nil when no
// goroutine can run. Only choices among two or more goroutines are recorded.
func (ex *execution) choose(cur *thread, canContinue bool) *thread {
	var mask uint64
	for _, t := range ex.threads {
		if t.state == runnable && (t != cur || canContinue) {
			mask |= 1 << t.id
		}
	}
	if mask == 0 {
		return nil
	}
	if bits.OnesCount64(mask) == 1 {
		return ex.threads[bits.TrailingZeros64(mask)]
	}
	curID := -1
	if canContinue {
		curID = cur.id
	}
	def := bits.TrailingZeros64(mask)
	if curID >= 0 {
		def = curID
	}
	pick, err := ex.x.decide(ex, mask, curID, def)
	if err != "" {
		ex.fail(cur, err)
		return cur
	}
	if pick != def {
		ex.deviations = append(ex.deviations, deviation{at: ex.depth, thread: pick})
	}
	if curID >= 0 && pick != curID {
		ex.preempts++
	}
	ex.depth++
	return ex.threads[pick]
}

// deadlock describes the goroutines that are parked when none can run, or
// returns "" when every goroutine ended.
func (ex *execution) deadlock() string {
	var parked []string
	for _, t := range ex.threads {
		if t.state == blocked {
			parked = append(parked, fmt.Sprintf("%s (on %s)", t.name, t.parkedOn))
		}
	}
	if len(parked) == 0 {
		return ""
	}
	return "deadlock: every live goroutine is parked forever: " + strings.Join(parked, ", ")
}

// fail records the schedule's first failure and starts its teardown.
func (ex *execution) fail(t *thread, msg string) {
	if ex.failure == nil {
		name := "finally"
		if t != nil {
			name = t.name
		}
		ex.failure = &Failure{Msg: msg, Goroutine: name}
	}
	ex.aborting = true
}

// teardown unwinds every goroutine that has not ended, one at a time, so no
// two ever run together and none stays parked.
func (ex *execution) teardown() {
	for i := 0; i < len(ex.threads); i++ {
		t := ex.threads[i]
		if t.state == done {
			continue
		}
		t.run <- struct{}{}
		<-ex.ctl
	}
}

// Model is the handle a model function gets for one schedule.
type Model struct {
	ex *execution
}

// Go starts f as a model goroutine named name (names appear in failures and
// traces). It may be called from any model goroutine.
func (m *Model) Go(name string, f func()) {
	if m.ex.finished {
		panic("modelcheck: Model.Go after the schedule ended")
	}
	m.ex.spawn(name, f)
}

// Failf fails the schedule with a formatted message and stops the calling
// goroutine; the others are unwound. Call it from model goroutines or from a
// Finally callback, never testing.T.Fatal.
func (m *Model) Failf(format string, args ...any) {
	ex := m.ex
	msg := fmt.Sprintf(format, args...)
	if ex.finished {
		if ex.failure == nil {
			ex.failure = &Failure{Msg: msg, Goroutine: "finally"}
		}
		panic(abortSignal{})
	}
	ex.fail(ex.cur, msg)
	panic(abortSignal{})
}

// Assert calls Failf when ok is false.
func (m *Model) Assert(ok bool, format string, args ...any) {
	if !ok {
		m.Failf(format, args...)
	}
}

// Finally registers f to run after every goroutine of the schedule ended
// normally, outside the scheduler: scheduling points in f are plain
// operations. It is where end-of-schedule checks go.
func (m *Model) Finally(f func()) {
	m.ex.finally = append(m.ex.finally, f)
}
