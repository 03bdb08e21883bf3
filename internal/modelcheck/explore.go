package modelcheck

import (
	"fmt"
	"math/bits"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Defaults for the zero Config.
const (
	DefaultMaxSchedules = 100_000
	DefaultMaxSteps     = 10_000
)

// Config says how much of a model's schedule space to explore. The zero
// Config explores every schedule without preemptions, up to the default caps.
type Config struct {
	// Preemptions bounds the preemptions of one schedule. Two finds most
	// bugs of small ack-path models in well under a second per model.
	Preemptions int
	// Exhaustive ignores Preemptions and explores every schedule. Only for
	// small models: the count grows exponentially with their length.
	Exhaustive bool
	// MaxSchedules stops the exploration after this many schedules, overriding
	// the default DefaultMaxSchedules; Result.Complete is then false.
	MaxSchedules int
	// MaxSteps fails a schedule with more scheduling points than this,
	// overriding the default DefaultMaxSteps: a model must end.
	MaxSteps int
	// Replay runs only the schedule of a failure's token, with a full trace.
	Replay string
}

// Result is what an exploration did.
type Result struct {
	Schedules int           // schedules run
	Complete  bool          // every schedule within the bound was run
	MaxDepth  int           // most choices in one schedule
	Elapsed   time.Duration // wall time
	Failure   *Failure      // the first failing schedule, or nil
}

// Failure describes a failing schedule.
type Failure struct {
	Msg       string // what went wrong
	Goroutine string // the model goroutine that failed, or "finally"
	Schedule  int    // 1-based index of the schedule
	Token     string // replays the schedule (Config.Replay)
	Trace     string // the schedule's operations, most recent last
}

func (f *Failure) String() string {
	return fmt.Sprintf("schedule %d failed in goroutine %s: %s\nreplay token: %s\ntrace:\n%s",
		f.Schedule, f.Goroutine, f.Msg, f.Token, f.Trace)
}

func (r Result) String() string {
	s := fmt.Sprintf("%d schedules in %v", r.Schedules, r.Elapsed.Round(time.Millisecond))
	if r.Complete {
		s += " (complete)"
	} else if r.Failure == nil {
		s += " (stopped at the schedule cap)"
	}
	return s
}

// frame is one recorded choice of the depth-first search.
type frame struct {
	enabled  uint64 // goroutines that could run
	cur      int    // the goroutine that reached the point, if it could continue; else -1
	chosen   int
	tried    uint64
	preempts int // preemptions before this choice
}

type explorer struct {
	bound    int // -1: unbounded
	maxSteps int
	frames   []frame
	replay   map[int]int // choice index -> goroutine, when replaying a token
}

// decide returns the goroutine to run at ex's next choice.
func (x *explorer) decide(ex *execution, mask uint64, cur, def int) (int, string) {
	i := ex.depth
	if x.replay != nil {
		pick, ok := x.replay[i]
		if !ok {
			return def, ""
		}
		if mask&(1<<pick) == 0 {
			return 0, fmt.Sprintf("replay token does not fit this model: goroutine %d cannot run at choice %d", pick, i)
		}
		return pick, ""
	}
	if i < len(x.frames) {
		f := &x.frames[i]
		if f.enabled != mask || f.cur != cur {
			return 0, fmt.Sprintf("model is not deterministic: choice %d saw runnable set %b (current %d), an earlier run saw %b (current %d)", i, mask, cur, f.enabled, f.cur)
		}
		return f.chosen, ""
	}
	x.frames = append(x.frames, frame{enabled: mask, cur: cur, chosen: def, tried: 1 << def, preempts: ex.preempts})
	return def, ""
}

// backtrack moves to the next schedule: the latest choice with an untried
// alternative within the preemption bound takes it, and later choices are
// forgotten. It returns false when the space is exhausted.
func (x *explorer) backtrack() bool {
	for j := len(x.frames) - 1; j >= 0; j-- {
		f := &x.frames[j]
		for rest := f.enabled &^ f.tried; rest != 0; rest &= rest - 1 {
			t := bits.TrailingZeros64(rest)
			f.tried |= 1 << t
			cost := f.preempts
			if f.cur >= 0 && t != f.cur {
				cost++
			}
			if x.bound >= 0 && cost > x.bound {
				continue
			}
			f.chosen = t
			x.frames = x.frames[:j+1]
			return true
		}
	}
	x.frames = x.frames[:0]
	return false
}

// run runs one schedule of body and returns its failure, if any.
func (x *explorer) run(body func(*Model), tracing bool) (*Failure, int) {
	ex := &execution{x: x, ctl: make(chan struct{}), tracing: tracing}
	m := &Model{ex: ex}
	ex.spawn("main", func() { body(m) })
	active.Store(ex)
	ex.switchTo(ex.threads[0])
	<-ex.ctl
	if ex.aborting {
		ex.teardown()
	}
	active.Store(nil)
	if ex.failure == nil {
		ex.finished = true
		for _, f := range ex.finally {
			if !runFinally(f) {
				break
			}
		}
	}
	if ex.failure == nil && x.replay == nil && ex.depth < len(x.frames) {
		ex.failure = &Failure{Msg: fmt.Sprintf("model is not deterministic: the schedule ended after %d choices, an earlier run made more", ex.depth), Goroutine: "main"}
	}
	if ex.failure != nil {
		ex.failure.Token = encodeToken(ex.deviations)
		ex.failure.Trace = ex.formatTrace()
	}
	return ex.failure, ex.depth
}

func runFinally(f func()) (ok bool) {
	defer func() {
		if r := recover(); r != nil {
			if _, abort := r.(abortSignal); !abort {
				panic(r)
			}
			ok = false
		}
	}()
	f()
	return true
}

// maxTraceLines bounds a failure's trace outside replay, which prints it all.
const maxTraceLines = 60

func (ex *execution) formatTrace() string {
	var b strings.Builder
	events := ex.trace
	if !ex.tracing && len(events) > maxTraceLines {
		fmt.Fprintf(&b, "  ... %d earlier operations (replay the token for all)\n", len(events)-maxTraceLines)
		events = events[len(events)-maxTraceLines:]
	}
	for _, e := range events {
		fmt.Fprintf(&b, "  %-10s %s", ex.threads[e.thread].name, e.op)
		if e.where != "" {
			fmt.Fprintf(&b, "  %s", e.where)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// Explore runs body under every schedule the configuration allows, stopping at
// the first failure, and reports what it did. Explorations never overlap: a
// second one waits for the first.
func Explore(cfg Config, body func(*Model)) Result {
	exploreMu.Lock()
	defer exploreMu.Unlock()
	start := time.Now()
	x := &explorer{bound: cfg.Preemptions, maxSteps: cfg.MaxSteps}
	if cfg.Exhaustive {
		x.bound = -1
	}
	if x.maxSteps <= 0 {
		x.maxSteps = DefaultMaxSteps
	}
	maxSchedules := cfg.MaxSchedules
	if maxSchedules <= 0 {
		maxSchedules = DefaultMaxSchedules
	}
	var res Result
	if cfg.Replay != "" {
		devs, err := decodeToken(cfg.Replay)
		if err != nil {
			res.Failure = &Failure{Msg: err.Error(), Goroutine: "main", Token: cfg.Replay}
			res.Elapsed = time.Since(start)
			return res
		}
		x.replay = make(map[int]int, len(devs))
		for _, d := range devs {
			x.replay[d.at] = d.thread
		}
		res.Failure, res.MaxDepth = x.run(body, true)
		res.Schedules = 1
		if res.Failure != nil {
			res.Failure.Schedule = 1
		}
		res.Elapsed = time.Since(start)
		return res
	}
	for {
		res.Schedules++
		f, depth := x.run(body, false)
		res.MaxDepth = max(res.MaxDepth, depth)
		if f != nil {
			f.Schedule = res.Schedules
			res.Failure = f
			break
		}
		if !x.backtrack() {
			res.Complete = true
			break
		}
		if res.Schedules >= maxSchedules {
			break
		}
	}
	res.Elapsed = time.Since(start)
	return res
}

// ReplayEnv names the environment variable Check reads: "TestName=token" makes
// the test of that name (t.Name(), subtests included) replay the token instead
// of exploring.
const ReplayEnv = "MODELCHECK_REPLAY"

// PreemptionsEnv names an environment variable that, set to a number, overrides
// the preemption bound of every Check (for a deeper search by hand).
const PreemptionsEnv = "MODELCHECK_PREEMPTIONS"

// Check explores body and fails t on a failure, printing the failure, its
// token and the command that replays it. It logs the schedules explored and
// the time taken.
func Check(t testing.TB, cfg Config, body func(*Model)) Result {
	t.Helper()
	if v := os.Getenv(ReplayEnv); v != "" {
		i := strings.LastIndex(v, "=")
		if i < 0 {
			t.Fatalf("modelcheck: %s=%q: want TestName=token", ReplayEnv, v)
		}
		if v[:i] == t.Name() {
			cfg.Replay = v[i+1:]
		}
	}
	if v := os.Getenv(PreemptionsEnv); v != "" && cfg.Replay == "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			t.Fatalf("modelcheck: %s=%q: want a preemption bound such as 3", PreemptionsEnv, v)
		}
		cfg.Preemptions = n
	}
	res := Explore(cfg, body)
	t.Logf("modelcheck: %v, preemption bound %s, deepest schedule %d choices", res, boundString(cfg), res.MaxDepth)
	if f := res.Failure; f != nil {
		t.Errorf("modelcheck: %v\nreplay with: %s='%s=%s' go test -tags modelcheck -run '^%s$' <package>",
			f, ReplayEnv, t.Name(), f.Token, strings.ReplaceAll(t.Name(), "/", "$/^"))
	}
	return res
}

func boundString(cfg Config) string {
	if cfg.Replay != "" {
		return "replay"
	}
	if cfg.Exhaustive {
		return "none (exhaustive)"
	}
	return strconv.Itoa(cfg.Preemptions)
}
