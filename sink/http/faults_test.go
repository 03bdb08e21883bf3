package http_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	nethttp "net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weir-etl/weir/connector/conformance"
	"github.com/weir-etl/weir/internal/deadletter"
	"github.com/weir-etl/weir/pipeline"
	httpsink "github.com/weir-etl/weir/sink/http"
	"github.com/weir-etl/weir/source/generate"
)

var idRE = regexp.MustCompile(`"id":(\d+)`)

// badID says which records the receiver refuses, whatever request they are in.
func badID(id int) bool { return id%97 == 13 }

// Guarantee: against a receiver that answers 500, 429 with Retry-After,
// 400 for some records, hangs and resets connections, in phases, the sink
// loses nothing: every record the receiver does not refuse reaches it, once
// for a receiver that deduplicates by the idempotency key;
// each refused record is in the dead letter with its status; no request
// leaves before the Retry-After it was told; a request sent again carries
// the same idempotency key, and different records never share one.
func TestFaultyReceiver(t *testing.T) {
	const total = 3000
	rc := newReceiver(t)
	// A request the receiver took but answered after the sink's timeout is
	// sent again: a receiver that deduplicates by key takes it once.
	rc.dedupe = true
	var mu sync.Mutex
	n := 0
	var after429 time.Time // when the 429 was answered
	// The requests that came after it. With concurrency 2 one other request
	// may have been on its way before the sink read the 429; it is not
	// bound by it. Every one after that is.
	var arrivals []time.Time
	phase := func(i int) string {
		switch {
		case i <= 4:
			return "500"
		case i == 5:
			return "429"
		case i <= 8:
			return "hang"
		case i <= 11:
			return "reset"
		case i%10 == 0 && i < 60:
			return "500"
		}
		return ""
	}
	rc.answer = func(r *nethttp.Request, body []byte) int {
		mu.Lock()
		n++
		i := n
		if !after429.IsZero() && len(arrivals) < 2 {
			arrivals = append(arrivals, time.Now())
		}
		mu.Unlock()
		switch phase(i) {
		case "500":
			return 500
		case "429":
			mu.Lock()
			after429 = time.Now()
			mu.Unlock()
			return 429
		case "hang":
			<-r.Context().Done()
			return 503
		case "reset":
			return -1
		}
		for _, m := range idRE.FindAllSubmatch(body, -1) {
			if id, _ := strconv.Atoi(string(m[1])); badID(id) {
				return 400
			}
		}
		return 0
	}
	// The receiver's handler writes 429 with Retry-After and resets by
	// hijacking; the plain receiver does the rest.
	plain := rc.srv.Config.Handler
	rc.srv.Config.Handler = nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		w2 := &answering{ResponseWriter: w}
		plain.ServeHTTP(w2, r)
	})

	c := httpsink.NewConfig()
	c.URL = rc.srv.URL + "/ingest?tenant=a"
	c.MaxRequestRecords = 50
	c.Concurrency = 2
	c.Timeout = 300 * time.Millisecond
	c.Retry.InitialBackoff = 5 * time.Millisecond
	c.Retry.MaxBackoff = 20 * time.Millisecond
	c.Retry.MaxAttempts = 6
	sk, err := httpsink.New("out", c)
	if err != nil {
		t.Fatal(err)
	}
	src, err := generate.New("gen", generate.Config{Count: total, Partitions: 1, BatchSize: 100, Template: `{"id":{{id}}}`})
	if err != nil {
		t.Fatal(err)
	}
	dlq := &conformance.MemSink{}
	sp := &pipeline.Spec{
		Sources: []pipeline.SourceSpec{{Name: "gen", Source: src}},
		Sinks: []pipeline.SinkSpec{
			{Name: "out", Inputs: []string{"gen"}, Sink: sk, OnFailure: pipeline.DeadLetter, DeadLetter: "dlq",
				Batch: pipeline.BatchSettings{MaxRecords: 500, MaxAge: 20 * time.Millisecond},
				Retry: pipeline.RetrySettings{MaxAttempts: 5, InitialBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond}},
			{Name: "dlq", Sink: dlq, Batch: pipeline.BatchSettings{MaxAge: 20 * time.Millisecond}},
		},
		Checkpoint: pipeline.CheckpointSettings{CommitInterval: 10 * time.Millisecond},
		Metrics:    pipeline.MetricsSettings{Address: "off"},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := pipeline.Run(ctx, sp, pipeline.WithLogger(slog.New(slog.DiscardHandler))); err != nil {
		t.Fatal(err)
	}

	// 0 missing, none twice, none refused at the receiver.
	got := map[int]int{}
	for _, v := range rc.written() {
		m := idRE.FindSubmatch(v)
		id, _ := strconv.Atoi(string(m[1]))
		got[id]++
	}
	wantBad := 0
	for id := range total {
		switch {
		case badID(id):
			wantBad++
			if got[id] > 0 {
				t.Errorf("record %d, refused by the receiver, is in it", id)
			}
		case got[id] == 0:
			t.Errorf("record %d is missing at the receiver", id)
		case got[id] > 1:
			t.Errorf("record %d reached the receiver %d times", id, got[id])
		}
	}
	// The refused records, in the dead letter with their status.
	dead := map[int]bool{}
	for _, v := range dlq.Values() {
		e, err := deadletter.Decode(v)
		if err != nil {
			t.Fatal(err)
		}
		m := idRE.FindSubmatch(e.Value)
		id, _ := strconv.Atoi(string(m[1]))
		if !badID(id) {
			t.Errorf("record %d is in the dead letter, but the receiver takes it: %s", id, e.Error)
		}
		if !strings.Contains(e.Error, "400 Bad Request") {
			t.Errorf("the dead letter of record %d does not give the status: %s", id, e.Error)
		}
		dead[id] = true
	}
	if len(dead) != wantBad {
		t.Errorf("%d records in the dead letter, want the %d the receiver refuses", len(dead), wantBad)
	}
	// Retry-After: 1 was honoured by every request after it.
	if after429.IsZero() || len(arrivals) < 2 {
		t.Fatal("the receiver never answered 429, or too little came after it")
	}
	// arrivals[0] may be the request that was in flight beside the one
	// answered 429; arrivals[1] left after the sink read the 429.
	if gap := arrivals[1].Sub(after429); gap < time.Second {
		t.Errorf("a request sent after the 429 came %v after it, within its Retry-After: 1", gap)
	}
	// Keys: a request sent again carries its key; different records never
	// share one.
	rc.mu.Lock()
	defer rc.mu.Unlock()
	byKey := map[string][]byte{}
	retried := 0
	for i, r := range rc.reqs {
		if r.key == "" {
			t.Fatalf("request %d carried no idempotency key", i)
		}
		body := bytes.Join(r.records, []byte("\n"))
		if prev, ok := byKey[r.key]; ok {
			if !bytes.Equal(prev, body) {
				t.Fatalf("two requests with different records share the key %s", r.key)
			}
			retried++
		}
		byKey[r.key] = body
	}
	failed := 0
	for i := range rc.reqs {
		// 500 and 429, a hang (answered 503 once the client gave up) and a
		// reset (-1): each must come again, with its key.
		if st := rc.reqs[i].status; st == 500 || st == 429 || st == 503 || st == -1 {
			failed++
			// The same records came again, with the same key.
			r := rc.reqs[i]
			found := false
			for _, later := range rc.reqs[i+1:] {
				if bytes.Equal(bytes.Join(later.records, []byte("\n")), bytes.Join(r.records, []byte("\n"))) {
					found = true
					if later.key != r.key {
						t.Errorf("request %d was sent again with the key %s, first %s", i, later.key, r.key)
					}
					break
				}
			}
			if !found {
				t.Errorf("request %d (answered %d) was never sent again", i, st)
			}
		}
	}
	if retried < failed {
		t.Errorf("%d requests came again under their key, fewer than the %d that failed", retried, failed)
	}
	t.Logf("%d requests, %d came again under their key, %d records refused to the dead letter", len(rc.reqs), retried, len(dead))
}

// answering turns the receiver's status codes into the faults: 429 with
// Retry-After, and -1 a connection reset.
type answering struct {
	nethttp.ResponseWriter
}

func (a *answering) WriteHeader(code int) {
	switch code {
	case 429:
		a.Header().Set("Retry-After", "1")
	case 400:
		a.ResponseWriter.WriteHeader(code)
		fmt.Fprint(a.ResponseWriter, "a record of this request is bad")
		return
	case -1:
		conn, _, err := a.ResponseWriter.(nethttp.Hijacker).Hijack()
		if err == nil {
			if tc, ok := conn.(*net.TCPConn); ok {
				tc.SetLinger(0)
			}
			conn.Close()
		}
		return
	}
	a.ResponseWriter.WriteHeader(code)
}
