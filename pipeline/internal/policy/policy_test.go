package policy

import (
	"flag"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/weir-etl/weir/checkpoint"
	"github.com/weir-etl/weir/internal/testkit/testscript"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the expected output of the testdata scripts")

// TestPolicyScripts replays every testdata/scripts/*.txt script against the
// commit policy and a real Checkpointer, and compares what each command
// prints with the expected output in the file (-rewrite records it instead;
// review the diff before keeping it).
//
// A script is blocks separated by blank lines: command lines, "----", and
// their output. Lines starting with # outside a block are comments. Times are
// durations from the script's start. Commands:
//
//	config [commit_interval=D] [commit_failure_timeout=D] [stall_warning=D] [prompt=B]  a new policy
//	assign p=P start=POS               AckIssuer.Assign (a new epoch; also a rewind)
//	issue p=P end=POS name=N           issue a batch; N is its one reference
//	release N [status=S]               release N (delivered by default)
//	at T                               the clock reads T
//	eof | inflight N | stopping        the poller's state seen by the next steps
//	step [tick]                        drain, then one policy step (tick: the commit interval elapsed)
//	commit ok | commit fail            the outcome of the commit the last step asked for
//	revoke id=I ps=P,Q deadline=T      Host.Revoke: the issuer stops, the policy waits
//	forget p=P                         the loop forgets P (after a revoke is done)
//	stall p=P                          the stall clock and rewinds of P
//	replaying p=P                      whether P was rewound and has not moved since
//	states                             the Checkpointer's states
func TestPolicyScripts(t *testing.T) {
	testscript.RunAll(t, filepath.Join("testdata", "scripts", "*.txt"), *rewrite, func(t *testing.T, file string) func(string) []string {
		env := newPolicyEnv()
		return func(line string) []string { return env.run(t, file, line) }
	})
}

type policyEnv struct {
	cp       *checkpoint.Checkpointer
	iss      *checkpoint.AckIssuer
	pol      *Policy
	refs     map[string]checkpoint.AckRef
	open     map[checkpoint.BatchID]time.Time // issued, not resolved: when
	start    time.Time
	now      time.Time
	eof      bool
	inflight int64
	stopping bool
	asked    []checkpoint.Commit // the last commit a step asked for
}

func newPolicyEnv() *policyEnv {
	cp := checkpoint.New()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	return &policyEnv{cp: cp, iss: cp.NewIssuer(), refs: map[string]checkpoint.AckRef{}, open: map[checkpoint.BatchID]time.Time{},
		start: start, now: start,
		pol: New(Config{CommitInterval: 5 * time.Second, CommitFailureTimeout: time.Minute, StallWarning: 10 * time.Second})}
}

func (e *policyEnv) run(t *testing.T, file, line string) []string {
	f := strings.Fields(line)
	args := map[string]string{}
	for _, a := range f[1:] {
		if k, v, ok := strings.Cut(a, "="); ok {
			args[k] = v
		}
	}
	num := func(k string) int64 {
		n, err := strconv.ParseInt(args[k], 10, 64)
		if err != nil {
			t.Fatalf("%s: %q: %s: %v", file, line, k, err)
		}
		return n
	}
	dur := func(s string) time.Duration {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("%s: %q: %v", file, line, err)
		}
		return d
	}
	switch f[0] {
	case "config":
		cfg := e.pol.cfg
		if v, ok := args["commit_interval"]; ok {
			cfg.CommitInterval = dur(v)
		}
		if v, ok := args["commit_failure_timeout"]; ok {
			cfg.CommitFailureTimeout = dur(v)
		}
		if v, ok := args["stall_warning"]; ok {
			cfg.StallWarning = dur(v)
		}
		if v, ok := args["prompt"]; ok {
			cfg.Prompt = v == "true"
		}
		e.pol = New(cfg)
	case "assign":
		e.iss.Assign(checkpoint.Partition(num("p")), checkpoint.Position(num("start")))
	case "issue":
		ref := e.iss.Issue(checkpoint.Partition(num("p")), checkpoint.Position(num("end")))
		e.refs[args["name"]] = ref
		e.open[ref.Batch()] = e.now
	case "release":
		ref, ok := e.refs[f[1]]
		if !ok {
			t.Fatalf("%s: %q: no reference %s", file, line, f[1])
		}
		st := checkpoint.Delivered
		switch args["status"] {
		case "failed":
			st = checkpoint.Failed
		case "rejected":
			st = checkpoint.Rejected
		}
		delete(e.refs, f[1])
		ref.Release(st)
	case "at":
		e.now = e.start.Add(dur(f[1]))
	case "eof":
		e.eof = true
	case "inflight":
		n, _ := strconv.ParseInt(f[1], 10, 64)
		e.inflight = n
	case "stopping":
		e.stopping = true
	case "step":
		e.cp.DrainFunc(func(m checkpoint.AckMsg, _ checkpoint.ResolveOutcome) { delete(e.open, m.ID) })
		states := e.cp.States(nil)
		v := &View{Now: e.now, States: states, Committable: e.cp.Committable(nil),
			Pending: e.pending(states), EOF: e.eof, InFlight: e.inflight, Stopping: e.stopping, Tick: len(f) > 1 && f[1] == "tick"}
		rd := e.pol.Step(v)
		e.asked = rd.Commit
		for _, w := range rd.RevokesDone {
			for _, p := range w.Partitions {
				e.cp.Forget(p)
				e.pol.Forget(p)
			}
		}
		return e.describe(rd)
	case "commit":
		ok := f[1] == "ok"
		if ok {
			e.cp.MarkCommitted(e.asked)
		}
		e.pol.CommitDone(ok, e.now)
	case "revoke":
		var ps []checkpoint.Partition
		for s := range strings.SplitSeq(args["ps"], ",") {
			n, _ := strconv.Atoi(s)
			e.iss.Revoke(checkpoint.Partition(n))
			ps = append(ps, checkpoint.Partition(n))
		}
		e.pol.AddRevoke(int(num("id")), ps, e.start.Add(dur(args["deadline"])))
	case "forget":
		e.cp.Forget(checkpoint.Partition(num("p")))
		e.pol.Forget(checkpoint.Partition(num("p")))
	case "replaying":
		return []string{fmt.Sprintf("p%d: replaying %v", num("p"), e.pol.Replaying(checkpoint.Partition(num("p"))))}
	case "stall":
		age, rw := e.pol.Stall(checkpoint.Partition(num("p")), e.now)
		return []string{fmt.Sprintf("p%d: stalled %v, %d rewinds", num("p"), age, rw)}
	case "states":
		var out []string
		for _, s := range e.cp.States(nil) {
			out = append(out, fmt.Sprintf("p%d e%d: watermark=%d committed=%d blocked=%v", s.Partition, s.Epoch, s.Watermark, s.Committed, s.Blocked))
		}
		return out
	default:
		t.Fatalf("%s: unknown command %q", file, line)
	}
	return nil
}

func (e *policyEnv) pending(states []checkpoint.PartitionState) []Pending {
	var out []Pending
	for _, st := range states {
		at, in := e.open[checkpoint.BatchID{Partition: st.Partition, Epoch: st.Epoch, Seq: st.Next}]
		out = append(out, Pending{Issued: at, Pending: in})
	}
	return out
}

func (e *policyEnv) describe(rd Ready) []string {
	var out []string
	for _, w := range rd.RevokesDone {
		out = append(out, fmt.Sprintf("revoke %d done: %v", w.ID, w.Partitions))
	}
	if rd.Halt != nil {
		out = append(out, "halt at "+rd.Halt.String())
	}
	if rd.HaltCommits {
		out = append(out, "halt: commits failing too long")
	}
	for _, r := range rd.Rewinds {
		out = append(out, fmt.Sprintf("rewind p%d (epoch %d) to %d", r.Partition, r.Epoch, r.Position))
	}
	if len(rd.Commit) > 0 {
		var cs []string
		for _, c := range rd.Commit {
			cs = append(cs, fmt.Sprintf("p%d@%d", c.Partition, c.Position))
		}
		out = append(out, "commit "+strings.Join(cs, " "))
	}
	for _, p := range rd.Stalled {
		out = append(out, fmt.Sprintf("stalled p%d", p))
	}
	if rd.Finished {
		out = append(out, "finished")
	}
	if !rd.WakeAt.IsZero() {
		out = append(out, fmt.Sprintf("wake at %v", rd.WakeAt.Sub(e.start)))
	}
	if len(out) == 0 {
		out = append(out, "nothing")
	}
	return out
}

// A view whose Pending is shorter than its States (nil, say) has nothing
// pending for the partitions past its end: the policy reads no further than
// it, and a partition with no pending batch has no stall.
func TestPendingShorterThanStates(t *testing.T) {
	cp := checkpoint.New()
	iss := cp.NewIssuer()
	iss.Assign(0, 0)
	iss.Assign(1, 0)
	iss.Issue(0, 10)
	iss.Issue(1, 10)
	start := time.Unix(1000, 0)
	pol := New(Config{CommitInterval: time.Second, StallWarning: time.Minute})
	cp.DrainFunc(func(checkpoint.AckMsg, checkpoint.ResolveOutcome) {})
	states := cp.States(nil)
	if len(states) != 2 {
		t.Fatalf("%d partitions, want 2", len(states))
	}
	pend := []Pending{{Issued: start, Pending: true}}
	pol.Step(&View{Now: start, States: states, Pending: pend})
	pol.Step(&View{Now: start.Add(time.Hour), States: states, Pending: pend})
	if age, _ := pol.Stall(0, start.Add(time.Hour)); age != time.Hour {
		t.Errorf("partition 0, pending: stalled %v, want 1h", age)
	}
	if age, _ := pol.Stall(1, start.Add(time.Hour)); age != 0 {
		t.Errorf("partition 1, past the end of Pending: stalled %v, want 0", age)
	}
}
