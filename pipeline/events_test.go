package pipeline

import (
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// Guarantee: the event ring keeps the last 100 events, newest first; the
// same event repeated within a second is one event with a count and the
// first few partitions; a sink's give-up is recorded once; a long message is
// cut at a character boundary.
func TestEventRing(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	r := &eventRing{now: func() time.Time { return now }}

	for i := range 20 {
		r.add(Event{Kind: EventAssigned, Source: "k", Partitions: []string{fmt.Sprintf("t/%d", i)}, Message: "assigned"})
		now = now.Add(10 * time.Millisecond)
	}
	ev := r.snapshot()
	if len(ev) != 1 || ev[0].Count != 20 || len(ev[0].Partitions) != eventPartitions || ev[0].Partitions[0] != "t/0" {
		t.Fatalf("20 assignments within a second: %+v, want one event counting 20 and naming the first %d", ev, eventPartitions)
	}
	now = now.Add(time.Second)
	r.add(Event{Kind: EventAssigned, Source: "k", Partitions: []string{"t/20"}, Message: "assigned"})
	r.add(Event{Kind: EventAssigned, Source: "other", Partitions: []string{"t/0"}, Message: "assigned"})
	if ev := r.snapshot(); len(ev) != 3 || ev[0].Source != "other" || ev[1].Count != 1 {
		t.Fatalf("after a second, and from another source: %+v, want new events, newest first", ev)
	}

	for range 2 {
		r.add(Event{Kind: EventGaveUp, Sink: "lake", Message: "gave up"})
		now = now.Add(2 * time.Second)
	}
	gaveUp := 0
	for _, e := range r.snapshot() {
		if e.Kind == EventGaveUp {
			gaveUp += e.Count
		}
	}
	if gaveUp != 1 {
		t.Errorf("a sink that gave up twice has %d give-up events, want 1", gaveUp)
	}

	for i := range 150 {
		r.add(Event{Kind: EventRewind, Source: "k", Message: fmt.Sprintf("rewind %d", i)})
	}
	ev = r.snapshot()
	if len(ev) != eventRingSize || ev[0].Message != "rewind 149" || ev[eventRingSize-1].Message != "rewind 50" {
		t.Fatalf("after 150 more events: %d kept, newest %q, oldest %q; want %d, rewind 149 to rewind 50",
			len(ev), ev[0].Message, ev[len(ev)-1].Message, eventRingSize)
	}
	for i := 1; i < len(ev); i++ {
		if ev[i].Time.After(ev[i-1].Time) {
			t.Fatalf("events out of order at %d", i)
		}
	}

	r.add(Event{Kind: EventSinkFailing, Sink: "lake", Message: "a" + strings.Repeat("é", eventMsgMax)}) // byte eventMsgMax falls inside a character
	if m := r.snapshot()[0].Message; !utf8.ValidString(m) || len(m) > eventMsgMax+len("…") {
		t.Errorf("a long message kept as %d bytes, valid UTF-8 %v", len(m), utf8.ValidString(m))
	}
}
