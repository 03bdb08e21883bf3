package checkpoint

import (
	"flag"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/weir-etl/weir/internal/testkit/testscript"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the expected output of the testdata scripts")

// TestScripts replays every testdata/*.txt script against a real Checkpointer
// and its issuer, and compares what each command prints with the expected
// output recorded in the file. With -rewrite it records the output instead;
// review the diff before keeping it.
//
// A script is a sequence of blocks separated by blank lines. A block is one or
// more command lines, a line "----", and the output of those commands. Lines
// starting with # outside a block are comments. Commands:
//
//	assign p=P start=POS              start a new epoch of P (also a rewind)
//	revoke p=P                        the issuer stops issuing for P
//	issue p=P end=POS name=N          issue a batch; its first reference is N
//	clone N name=M                    M is a new reference to N's batch
//	release N [status=S]              release N (delivered by default)
//	hold SET N...                     move references into an AckSet
//	merge SET OTHER                   AckSet.Merge: OTHER's references into SET
//	ack SET | fail SET [status=S]     give an AckSet its outcome
//	drain                             Checkpointer.Drain, printing its counters
//	apply p=P epoch=E seq=Q end=POS [status=S]  Checkpointer.Apply of a raw message
//	committable                       Checkpointer.Committable
//	mark-committed [p=P epoch=E pos=POS]  confirm the last committable (or one commit)
//	forget p=P                        Checkpointer.Forget
//	state p=P | states                Checkpointer.State, States
//	drained p=P                       Checkpointer.Drained
//	epoch p=P                         AckIssuer.Epoch
//
// A command that panics prints "panic: " and the message.
func TestScripts(t *testing.T) {
	testscript.RunAll(t, filepath.Join("testdata", "*.txt"), *rewrite, func(*testing.T, string) func(string) []string {
		return newScriptEnv().run
	})
}

// scriptEnv is the state a script acts on: a Checkpointer, one issuer, and
// named references and sets.
type scriptEnv struct {
	c    *Checkpointer
	is   *AckIssuer
	refs map[string]*AckRef
	sets map[string]*AckSet
	last []Commit // the last Committable result
}

func newScriptEnv() *scriptEnv {
	c := New()
	return &scriptEnv{c: c, is: c.NewIssuer(), refs: map[string]*AckRef{}, sets: map[string]*AckSet{}}
}

// scriptArgs is a parsed command line: positional words and key=value pairs.
type scriptArgs struct {
	pos []string
	kv  map[string]string
}

func parseScriptArgs(fields []string) scriptArgs {
	a := scriptArgs{kv: map[string]string{}}
	for _, f := range fields {
		if k, v, ok := strings.Cut(f, "="); ok {
			a.kv[k] = v
		} else {
			a.pos = append(a.pos, f)
		}
	}
	return a
}

func (a scriptArgs) str(key string) string {
	v, ok := a.kv[key]
	if !ok {
		panic(fmt.Sprintf("script: missing %s=", key))
	}
	return v
}

func (a scriptArgs) int(key string) int64 {
	n, err := strconv.ParseInt(a.str(key), 10, 64)
	if err != nil {
		panic(fmt.Sprintf("script: %s: %v", key, err))
	}
	return n
}

func (a scriptArgs) status() AckStatus {
	v, ok := a.kv["status"]
	if !ok {
		return Delivered
	}
	for s := range AckStatus(numStatuses) {
		if s.String() == v {
			return s
		}
	}
	n, err := strconv.ParseUint(v, 10, 8)
	if err != nil {
		panic(fmt.Sprintf("script: unknown status %q", v))
	}
	return AckStatus(n) // lets a script try an invalid status
}

func (e *scriptEnv) ref(name string) *AckRef {
	r, ok := e.refs[name]
	if !ok {
		panic(fmt.Sprintf("script: no reference %q", name))
	}
	return r
}

func (e *scriptEnv) set(name string) *AckSet {
	s, ok := e.sets[name]
	if !ok {
		s = new(AckSet)
		e.sets[name] = s
	}
	return s
}

// run executes one command line and returns what it prints. A panic in the
// code under test is printed, so scripts can show misuse being caught.
func (e *scriptEnv) run(line string) (out []string) {
	defer func() {
		if r := recover(); r != nil {
			if msg := fmt.Sprint(r); strings.HasPrefix(msg, "script:") {
				panic(msg) // a broken script, not a result
			}
			out = append(out, fmt.Sprintf("panic: %v", r))
		}
	}()
	fields := strings.Fields(line)
	a := parseScriptArgs(fields[1:])
	p := func() Partition { return Partition(a.int("p")) }
	switch fields[0] {
	case "assign":
		ep := e.is.Assign(p(), Position(a.int("start")))
		return []string{fmt.Sprintf("p%d: epoch %d from %d", p(), ep, a.int("start"))}
	case "revoke":
		e.is.Revoke(p())
		return []string{fmt.Sprintf("p%d: revoked", p())}
	case "issue":
		name := a.str("name")
		r := e.is.Issue(p(), Position(a.int("end")))
		e.refs[name] = &r
		return []string{fmt.Sprintf("%s: %v end %d", name, r.Batch(), a.int("end"))}
	case "clone":
		r := e.ref(a.pos[0]).Clone()
		e.refs[a.str("name")] = &r
		return []string{fmt.Sprintf("%s: %v refs=%d", a.str("name"), r.Batch(), r.h.refs.Load())}
	case "release":
		name := a.pos[0]
		r := e.ref(name)
		h := r.h
		st := a.status()
		r.Release(st)
		return []string{fmt.Sprintf("%s: released %v; %s", name, st, describeHandle(h))}
	case "hold":
		s := e.set(a.pos[0])
		for _, name := range a.pos[1:] {
			s.Add(e.ref(name))
		}
		return []string{fmt.Sprintf("%s: %d entries, %d refs", a.pos[0], s.Len(), s.Refs())}
	case "merge":
		s, o := e.set(a.pos[0]), e.set(a.pos[1])
		s.Merge(o)
		return []string{fmt.Sprintf("%s: %d entries, %d refs; %s: %d entries", a.pos[0], s.Len(), s.Refs(), a.pos[1], o.Len())}
	case "ack", "fail":
		s := e.set(a.pos[0])
		var hs []*handle
		for _, en := range s.entries {
			if !slices.Contains(hs, en.h) {
				hs = append(hs, en.h)
			}
		}
		n := s.Refs()
		st := Delivered
		if fields[0] == "ack" {
			s.Ack()
		} else {
			st = a.status()
			s.Fail(st)
		}
		out = []string{fmt.Sprintf("%s: released %d refs %v", a.pos[0], n, st)}
		for _, h := range hs {
			out = append(out, "  "+describeHandle(h))
		}
		return out
	case "drain":
		return []string{formatDrainStats(e.c.Drain())}
	case "apply":
		m := AckMsg{
			ID:       BatchID{Partition: p(), Epoch: Epoch(a.int("epoch")), Seq: uint64(a.int("seq"))},
			Position: Position(a.int("end")),
			Status:   a.status(),
		}
		return []string{fmt.Sprintf("%v: %v", m.ID, e.c.Apply(m))}
	case "committable":
		e.last = e.c.Committable(e.last[:0])
		if len(e.last) == 0 {
			return []string{"none"}
		}
		for _, cm := range e.last {
			out = append(out, fmt.Sprintf("p%d e%d @%d", cm.Partition, cm.Epoch, cm.Position))
		}
		return out
	case "mark-committed":
		cs := e.last
		if _, ok := a.kv["p"]; ok {
			cs = []Commit{{Partition: p(), Epoch: Epoch(a.int("epoch")), Position: Position(a.int("pos"))}}
		}
		e.c.MarkCommitted(cs)
		if len(cs) == 0 {
			return []string{"nothing to mark"}
		}
		for _, cm := range cs {
			out = append(out, fmt.Sprintf("marked p%d e%d @%d", cm.Partition, cm.Epoch, cm.Position))
		}
		return out
	case "forget":
		e.c.Forget(p())
		return []string{fmt.Sprintf("p%d: forgotten", p())}
	case "state":
		s, ok := e.c.State(p())
		if !ok {
			return []string{fmt.Sprintf("p%d: not assigned", p())}
		}
		return []string{formatState(s)}
	case "drained":
		return []string{fmt.Sprintf("p%d: drained %v", p(), e.c.Drained(p()))}
	case "epoch":
		return []string{fmt.Sprintf("p%d: issuer epoch %d", p(), e.is.Epoch(p()))}
	case "states":
		for _, s := range e.c.States(nil) {
			out = append(out, formatState(s))
		}
		if len(out) == 0 {
			return []string{"none"}
		}
		return out
	}
	panic(fmt.Sprintf("script: unknown command %q", fields[0]))
}

// describeHandle says how many references a batch has left or, once it has
// none, what it resolved with.
func describeHandle(h *handle) string {
	if s := h.n.state.Load(); s >= stateResolved {
		return fmt.Sprintf("%v resolved %v", h.n.id, AckStatus(s-stateResolved))
	}
	return fmt.Sprintf("%v refs=%d", h.n.id, h.refs.Load())
}

func formatDrainStats(st DrainStats) string {
	if st == (DrainStats{}) {
		return "nothing"
	}
	var b strings.Builder
	add := func(name string, n int) {
		if n != 0 {
			fmt.Fprintf(&b, " %s=%d", name, n)
		}
	}
	add("assigned", st.Assigned)
	add("revoked", st.Revoked)
	add("messages", st.Messages)
	for o := range ResolveOutcome(numOutcomes) {
		add(o.String(), st.Outcome(o))
	}
	if st.Statuses != [numStatuses]int{} {
		b.WriteString(" |")
		for s := range AckStatus(numStatuses) {
			add(s.String(), st.Statuses[s])
		}
	}
	add("leaked", st.Leaked)
	return strings.TrimPrefix(b.String(), " ")
}

func formatState(s PartitionState) string {
	var b strings.Builder
	fmt.Fprintf(&b, "p%d e%d: watermark=%d committed=%d next=%d buffered=%d",
		s.Partition, s.Epoch, s.Watermark, s.Committed, s.Next, s.Buffered)
	if s.Closing {
		b.WriteString(" closing")
	}
	if s.Drained {
		b.WriteString(" drained")
	}
	if s.Failed {
		fmt.Fprintf(&b, " failed=s%d/%v", s.FailedSeq, s.FailedStatus)
	}
	if s.Blocked {
		b.WriteString(" blocked")
	}
	return b.String()
}
