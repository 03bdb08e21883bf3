package modelcheck

import (
	"reflect"
	"strings"
	"testing"
)

// racyCounter is the textbook lost update: two goroutines increment a shared
// counter with a load and a store that are separate scheduling points.
func racyCounter(m *Model) {
	var n int
	inc := func() {
		Yield("load")
		v := n
		Yield("store")
		n = v + 1
	}
	m.Go("a", inc)
	m.Go("b", inc)
	m.Finally(func() { m.Assert(n == 2, "counter is %d after two increments", n) })
}

func TestLostUpdateNeedsOnePreemption(t *testing.T) {
	res := Explore(Config{Preemptions: 0}, racyCounter)
	if res.Failure != nil || !res.Complete {
		t.Fatalf("without preemptions the increments cannot interleave, got %v %v", res, res.Failure)
	}
	res = Explore(Config{Preemptions: 1}, racyCounter)
	if res.Failure == nil {
		t.Fatalf("one preemption between load and store loses an update; explorer missed it: %v", res)
	}
	if !strings.Contains(res.Failure.Msg, "counter is 1") {
		t.Fatalf("unexpected failure: %v", res.Failure)
	}
}

// steps returns a model of two goroutines with k scheduling points each.
func steps(k int, order *[]string) func(*Model) {
	return func(m *Model) {
		var seen []string
		for _, name := range []string{"a", "b"} {
			m.Go(name, func() {
				for range k {
					Yield(name)
					seen = append(seen, name)
				}
			})
		}
		m.Finally(func() {
			if order != nil {
				*order = append(*order, strings.Join(seen, ""))
			}
		})
	}
}

func TestScheduleCountsMatchInterleavings(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want int
	}{
		// Every interleaving of aaa with bbb: C(6,3).
		{Config{Exhaustive: true}, 20},
		// Each goroutine runs to its end: aaabbb, bbbaaa.
		{Config{Preemptions: 0}, 2},
		// One preemption: the first goroutine is cut once, the other runs to
		// its end, the first finishes: 2 + 2*2.
		{Config{Preemptions: 1}, 6},
	} {
		var orders []string
		res := Explore(tc.cfg, steps(3, &orders))
		if res.Failure != nil || !res.Complete || res.Schedules != tc.want {
			t.Errorf("%+v: got %v, want %d complete schedules", tc.cfg, res, tc.want)
		}
		distinct := map[string]bool{}
		for _, o := range orders {
			distinct[o] = true
		}
		if len(distinct) != len(orders) {
			t.Errorf("%+v: explored the same interleaving twice: %v", tc.cfg, orders)
		}
	}
}

func TestScheduleCapStopsExploration(t *testing.T) {
	res := Explore(Config{Exhaustive: true, MaxSchedules: 5}, steps(3, nil))
	if res.Schedules != 5 || res.Complete || res.Failure != nil {
		t.Fatalf("got %v, want 5 schedules, incomplete", res)
	}
}

func TestReplayTokenReproducesTheSchedule(t *testing.T) {
	res := Explore(Config{Preemptions: 2}, racyCounter)
	if res.Failure == nil {
		t.Fatal("explorer missed the lost update")
	}
	tok := res.Failure.Token
	rep := Explore(Config{Replay: tok}, racyCounter)
	if rep.Schedules != 1 || rep.Failure == nil {
		t.Fatalf("replay of %s: got %v, want the failure again", tok, rep)
	}
	if rep.Failure.Msg != res.Failure.Msg || rep.Failure.Token != tok {
		t.Fatalf("replay differs:\nfound:  %v\nreplay: %v", res.Failure, rep.Failure)
	}
	if !strings.Contains(rep.Failure.Trace, "modelcheck_test.go:") {
		t.Fatalf("a replay trace names where each operation was called:\n%s", rep.Failure.Trace)
	}
	// The default schedule (empty token) runs without preemption and passes.
	if rep := Explore(Config{Replay: encodeToken(nil)}, racyCounter); rep.Failure != nil {
		t.Fatalf("default schedule failed: %v", rep.Failure)
	}
}

func TestTokenRoundTripAndErrors(t *testing.T) {
	devs := []deviation{{0, 1}, {3, 2}, {300, 63}}
	got, err := decodeToken(encodeToken(devs))
	if err != nil || !reflect.DeepEqual(got, devs) {
		t.Fatalf("round trip: got %v, %v", got, err)
	}
	for _, bad := range []string{"", "xyz", tokenPrefix + "!!", tokenPrefix + "gA"} {
		if _, err := decodeToken(bad); err == nil || !strings.HasPrefix(err.Error(), "modelcheck: ") {
			t.Errorf("decodeToken(%q): got %v, want a modelcheck error", bad, err)
		}
	}
	res := Explore(Config{Replay: "nonsense"}, racyCounter)
	if res.Failure == nil || !strings.Contains(res.Failure.Msg, "replay token") {
		t.Fatalf("bad token: got %v", res.Failure)
	}
}

// flagAndWait is a consumer that checks a flag and parks as two steps, and a
// producer that sets it and notifies: the classic lost wake-up.
func flagAndWait(atomicCheck bool) func(*Model) {
	return func(m *Model) {
		var ready bool
		var q WaitQueue
		m.Go("producer", func() {
			Yield("set")
			ready = true
			q.Notify()
		})
		m.Go("consumer", func() {
			for {
				Yield("check")
				if ready {
					return
				}
				if !atomicCheck {
					Yield("about to park")
				}
				q.Park("ready")
			}
		})
	}
}

func TestLostWakeupIsADeadlock(t *testing.T) {
	if res := Explore(Config{Exhaustive: true}, flagAndWait(true)); res.Failure != nil || !res.Complete {
		t.Fatalf("check-and-park as one step cannot lose the wake-up: %v %v", res, res.Failure)
	}
	res := Explore(Config{Exhaustive: true}, flagAndWait(false))
	if res.Failure == nil || !strings.Contains(res.Failure.Msg, "deadlock") || !strings.Contains(res.Failure.Msg, "consumer (on ready)") {
		t.Fatalf("got %v %v, want a deadlock naming the parked consumer", res, res.Failure)
	}
}

func TestFailureUnwindsEveryGoroutine(t *testing.T) {
	var unwound int
	var q WaitQueue
	res := Explore(Config{}, func(m *Model) {
		for range 3 {
			m.Go("parked", func() {
				defer func() { unwound++ }()
				Yield("before park")
				q.Park("nothing")
			})
		}
		m.Go("failing", func() {
			defer func() { unwound++ }()
			Yield("check")
			m.Failf("boom")
		})
		m.Go("never ran", func() {
			defer func() { unwound++ }()
			Yield("x")
		})
	})
	if res.Failure == nil || res.Failure.Msg != "boom" || res.Failure.Goroutine != "failing" {
		t.Fatalf("got %v", res.Failure)
	}
	// Three parked, the failing one, and one that may or may not have run:
	// every one that started ran its deferred calls.
	if unwound < 4 {
		t.Fatalf("%d goroutines unwound, want at least 4", unwound)
	}
	if Active() {
		t.Fatal("exploration still active after Explore returned")
	}
}

func TestPanicInModelGoroutineIsAFailure(t *testing.T) {
	res := Explore(Config{}, func(m *Model) {
		m.Go("bad", func() {
			Yield("x")
			var p *int
			_ = *p
		})
	})
	if res.Failure == nil || !strings.Contains(res.Failure.Msg, "goroutine bad panicked") {
		t.Fatalf("got %v", res.Failure)
	}
}

func TestStepLimit(t *testing.T) {
	res := Explore(Config{MaxSteps: 50}, func(m *Model) {
		m.Go("spin", func() {
			for {
				Yield("spin")
			}
		})
		m.Go("other", func() { Yield("x") })
	})
	if res.Failure == nil || !strings.Contains(res.Failure.Msg, "exceeded 50") {
		t.Fatalf("got %v", res.Failure)
	}
}

func TestNondeterministicModelIsReported(t *testing.T) {
	runs := 0
	res := Explore(Config{Exhaustive: true}, func(m *Model) {
		runs++
		k := 1
		if runs > 1 {
			k = 2 // a model that remembers earlier schedules
		}
		for _, name := range []string{"a", "b"} {
			m.Go(name, func() {
				for range k {
					Yield(name)
				}
			})
		}
		if runs > 1 {
			m.Go("c", func() { Yield("c") })
		}
	})
	if res.Failure == nil || !strings.Contains(res.Failure.Msg, "not deterministic") {
		t.Fatalf("got %v %v", res, res.Failure)
	}
}

func TestYieldOutsideExplorationIsPlain(t *testing.T) {
	Yield("nothing happens")
	ran := false
	Outside(func() { ran = true })
	if !ran || Active() {
		t.Fatal("Outside did not run its function, or an exploration is active")
	}
}

func TestFinallyFailure(t *testing.T) {
	res := Explore(Config{}, func(m *Model) {
		m.Finally(func() { m.Failf("checked at the end") })
		m.Finally(func() { t.Error("callbacks after a failing one must not run") })
	})
	if res.Failure == nil || res.Failure.Goroutine != "finally" {
		t.Fatalf("got %v", res.Failure)
	}
}
