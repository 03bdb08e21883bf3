package sinkstep

import (
	"flag"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/weir-etl/weir/internal/testkit/testscript"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the expected output of the testdata scripts")

var settings = Settings{MaxAttempts: 5, MaxElapsed: time.Minute, MaxBackoff: 8 * time.Second}

func TestRetry(t *testing.T) {
	for _, tc := range []struct {
		name string
		v    RetryView
		want RetryReady
	}{
		{"first failure waits half to all of the step", RetryView{Attempt: 1, Backoff: time.Second, Records: 10, Rand: 0},
			RetryReady{Wait: 500 * time.Millisecond, NextBackoff: 2 * time.Second}},
		{"the jitter adds up to the other half", RetryView{Attempt: 1, Backoff: time.Second, Records: 10, Rand: uint64(500 * time.Millisecond)},
			RetryReady{Wait: time.Second, NextBackoff: 2 * time.Second}},
		{"the step is bounded by MaxBackoff", RetryView{Attempt: 3, Backoff: 6 * time.Second, Records: 10},
			RetryReady{Wait: 3 * time.Second, NextBackoff: 8 * time.Second}},
		{"MaxAttempts gives up", RetryView{Attempt: 5, Backoff: time.Second, Records: 10},
			RetryReady{GiveUp: true}},
		{"a wait that ends at MaxElapsed is waited", RetryView{Attempt: 2, Elapsed: 59500 * time.Millisecond, Backoff: time.Second, Records: 10},
			RetryReady{Wait: 500 * time.Millisecond, NextBackoff: 2 * time.Second}},
		{"a wait past MaxElapsed gives up", RetryView{Attempt: 2, Elapsed: 59 * time.Second, Backoff: 4 * time.Second, Records: 10},
			RetryReady{GiveUp: true}},
		{"a stopping sink gives up", RetryView{Attempt: 1, Backoff: time.Second, Records: 10, Stopping: true},
			RetryReady{GiveUp: true}},
		{"too large: written in parts first", RetryView{Attempt: 5, Backoff: time.Second, Records: 10, TooLarge: true},
			RetryReady{WriteInParts: true}},
		{"too large, once per retry", RetryView{Attempt: 1, Backoff: time.Second, Records: 10, TooLarge: true, Split: true},
			RetryReady{Wait: 500 * time.Millisecond, NextBackoff: 2 * time.Second}},
		{"too large, one record: no parts", RetryView{Attempt: 1, Backoff: time.Second, Records: 1, TooLarge: true},
			RetryReady{Wait: 500 * time.Millisecond, NextBackoff: 2 * time.Second}},
	} {
		if got := Retry(settings, tc.v); got != tc.want {
			t.Errorf("%s: Retry(%+v) = %+v, want %+v", tc.name, tc.v, got, tc.want)
		}
	}
}

func TestGiveUp(t *testing.T) {
	for _, tc := range []struct {
		name string
		v    GiveUpView
		want GiveUpReady
	}{
		{"rewind, first give-up: logged", GiveUpView{OnFailure: Rewind, Records: 10},
			GiveUpReady{Policy: Rewind, Log: true, GiveUps: 1}},
		{"rewind, third give-up: not logged", GiveUpView{OnFailure: Rewind, Records: 10, GiveUps: 2},
			GiveUpReady{Policy: Rewind, GiveUps: 3}},
		{"rewind, fourth give-up: logged", GiveUpView{OnFailure: Rewind, Records: 10, GiveUps: 3},
			GiveUpReady{Policy: Rewind, Log: true, GiveUps: 4}},
		{"rewind before give_up_after", GiveUpView{OnFailure: Rewind, GiveUpAfter: time.Minute, OnGiveUp: DeadLetter, FailingFor: 59 * time.Second, Records: 10, GiveUps: 2},
			GiveUpReady{Policy: Rewind, GiveUps: 3}},
		{"give_up_after passed: halt", GiveUpView{OnFailure: Rewind, GiveUpAfter: time.Minute, OnGiveUp: Halt, FailingFor: time.Minute, Records: 10, GiveUps: 2},
			GiveUpReady{Policy: Halt, GaveUp: true, Log: true, GiveUps: 3}},
		{"give_up_after passed: dead letter, isolated", GiveUpView{OnFailure: Rewind, GiveUpAfter: time.Minute, OnGiveUp: DeadLetter, FailingFor: time.Hour, Records: 10, GiveUps: 2},
			GiveUpReady{Policy: DeadLetter, GaveUp: true, Isolate: true, Log: true, GiveUps: 3}},
		{"give_up_after applies to rewind only", GiveUpView{OnFailure: Halt, GiveUpAfter: time.Minute, OnGiveUp: DeadLetter, FailingFor: time.Hour, Records: 10},
			GiveUpReady{Policy: Halt, Log: true, GiveUps: 1}},
		{"dead letter isolates", GiveUpView{OnFailure: DeadLetter, Records: 2},
			GiveUpReady{Policy: DeadLetter, Isolate: true, Log: true, GiveUps: 1}},
		{"dead letter, one record: nothing to isolate", GiveUpView{OnFailure: DeadLetter, Records: 1},
			GiveUpReady{Policy: DeadLetter, Log: true, GiveUps: 1}},
		{"dead letter while stopping: whole", GiveUpView{OnFailure: DeadLetter, Records: 10, Stopping: true},
			GiveUpReady{Policy: DeadLetter, Log: true, GiveUps: 1}},
		{"the broken variant keeps it whole", GiveUpView{OnFailure: DeadLetter, Records: 10, NoIsolation: true},
			GiveUpReady{Policy: DeadLetter, Log: true, GiveUps: 1}},
	} {
		if got := GiveUp(tc.v); got != tc.want {
			t.Errorf("%s: GiveUp(%+v) = %+v, want %+v", tc.name, tc.v, got, tc.want)
		}
	}
}

// TestIsolationScripts replays every testdata/scripts/*.txt script: each
// runs an Isolation against a simulated sink and prints what it does
// (-rewrite records the output; review the diff before keeping it).
//
// Commands:
//
//	group n=N [fail=I,J] [reject=K] [all] [unbounded] [stop_after=T]
//	    a group of N records (numbered from 0); a part fails when it holds a
//	    record of fail (or any record, with all); record K is rejected by
//	    the sink the first time it is written, and leaves the group; after
//	    T tries the sink is stopping
//	run
//	    step until Stop, printing each action and its outcome, then the
//	    records left (which go to the dead letter as they are) and the tries
func TestIsolationScripts(t *testing.T) {
	testscript.RunAll(t, filepath.Join("testdata", "scripts", "*.txt"), *rewrite, func(t *testing.T, file string) func(string) []string {
		e := &isoEnv{}
		return func(line string) []string { return e.run(t, file, line) }
	})
}

type isoEnv struct {
	recs      []int // the records left, by number
	fail      map[int]bool
	all       bool
	reject    int
	bounded   bool
	stopAfter int
}

func (e *isoEnv) run(t *testing.T, file, line string) []string {
	f := strings.Fields(line)
	args := map[string]string{}
	for _, a := range f[1:] {
		k, v, _ := strings.Cut(a, "=")
		args[k] = v
	}
	atoi := func(s string) int {
		n, err := strconv.Atoi(s)
		if err != nil {
			t.Fatalf("%s: %q: %v", file, line, err)
		}
		return n
	}
	switch f[0] {
	case "group":
		n := atoi(args["n"])
		*e = isoEnv{fail: map[int]bool{}, reject: -1, bounded: true, stopAfter: -1}
		for i := range n {
			e.recs = append(e.recs, i)
		}
		if v, ok := args["fail"]; ok {
			for s := range strings.SplitSeq(v, ",") {
				e.fail[atoi(s)] = true
			}
		}
		if v, ok := args["reject"]; ok {
			e.reject = atoi(v)
		}
		if v, ok := args["stop_after"]; ok {
			e.stopAfter = atoi(v)
		}
		_, e.all = args["all"]
		_, unbounded := args["unbounded"]
		e.bounded = !unbounded
		return nil
	case "run":
		return e.isolate()
	}
	t.Fatalf("%s: unknown command %q", file, line)
	return nil
}

func (e *isoEnv) isolate() []string {
	var out []string
	iso := NewIsolation(len(e.recs), e.bounded)
	var v IsoView
	tries := 0
	// Halving n records down to the failing ones takes at most 2n-1 tries;
	// a step that never ends (a wrong comparison) is a failure at once, not
	// a test that runs until it times out.
	limit := 4*len(e.recs) + 16
	for {
		v.Left, v.Stopping = len(e.recs), e.stopAfter >= 0 && tries >= e.stopAfter
		rd := iso.Step(v)
		v = IsoView{}
		switch rd.Action {
		case Stop:
			return append(out, fmt.Sprintf("stop: %d left %v, %d tries", len(e.recs), e.recs, tries))
		case DeadLetterOne:
			out = append(out, fmt.Sprintf("dead-letter %d alone", e.recs[0]))
			e.recs = e.recs[1:]
			continue
		}
		tries++
		if tries > limit {
			return append(out, fmt.Sprintf("no end after %d tries of %d records", limit, len(e.recs)))
		}
		part := slices.Clone(e.recs[:rd.N])
		if i := slices.Index(part, e.reject); i >= 0 {
			part = slices.Delete(part, i, i+1)
			out = append(out, fmt.Sprintf("  (%d rejected)", e.reject))
			e.reject = -1
		}
		// With all, the sink fails even a part left empty by a rejection
		// (its flush fails).
		ok := !e.all && !slices.ContainsFunc(part, func(r int) bool { return e.fail[r] })
		e.recs = append(part, e.recs[rd.N:]...)
		v.OK, v.Kept = ok, len(part)
		if ok {
			out = append(out, fmt.Sprintf("try %v: written", part))
			e.recs = e.recs[len(part):]
		} else {
			out = append(out, fmt.Sprintf("try %v: failed", part))
		}
	}
}
