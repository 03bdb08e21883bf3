//go:build e2e

package http_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	nethttp "net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/weir-etl/weir/internal/testkit/weirtest"
)

// The size of the kill loop: WEIR_HTTP_E2E_RECORDS records (default
// 200,000) from 8 connections, weir SIGKILLed WEIR_HTTP_E2E_KILLS times
// (default 12). WEIR_HTTP_E2E_FULL=1 runs the full size: 500,000 records
// and 20 kills.
func loopSize(t *testing.T) (records, kills int) {
	records, kills = 200_000, 12
	if os.Getenv("WEIR_HTTP_E2E_FULL") == "1" {
		records, kills = 500_000, 20
	}
	for _, v := range []struct {
		env string
		n   *int
	}{{"WEIR_HTTP_E2E_RECORDS", &records}, {"WEIR_HTTP_E2E_KILLS", &kills}} {
		if s := os.Getenv(v.env); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil || n < 1 {
				t.Fatalf("%s=%q: want a positive number", v.env, s)
			}
			*v.n = n
		}
	}
	return records, kills
}

const clients = 8

const killLoopYAML = `
sources:
  in:
    type: http_server
    address: %[2]s
    paths: [/ingest]
sinks:
  out:
    type: file
    inputs: [in]
    path: %[1]s/out
    template: part
    batch: { max_records: 5000, max_age: 20ms }
checkpoint:
  commit_interval: 1s
metrics: { address: "off" }
`

// Guarantee: a client that sends each request until it is answered 2xx
// loses nothing while weir is SIGKILLed and restarted again and again:
// every record of every request answered 2xx is in the sink, and a record
// is there twice only if its request was sent more than once.
func TestKillLoop(t *testing.T) {
	records, minKills := loopSize(t)
	missing, badDups := killLoop(t, weirtest.BuildTemp(t, ""), nil, records, minKills, true)
	if missing > 0 || badDups > 0 {
		t.Fatalf("%d acknowledged records missing, %d duplicates of requests sent once", missing, badDups)
	}
}

// The same loop must catch a source that answers 200 as soon as it has
// read a request, before its records are durable (built with -tags
// unsafe_early_answer): records acknowledged and then lost to a kill.
func TestKillLoopCatchesEarlyAnswers(t *testing.T) {
	bin := weirtest.BuildTemp(t, "unsafe_early_answer")
	missing, _ := killLoop(t, bin, []string{"WEIR_UNSAFE_EARLY_ANSWER=1"}, 100_000, 8, false)
	if missing == 0 {
		t.Fatal("no acknowledged record was missing although the source answered before its records were durable: the kill loop cannot catch the loss it is for")
	}
	t.Logf("the broken source lost %d acknowledged records, and the loop saw it", missing)
}

// killLoop runs the loop against the binary bin with env added, and returns
// the acknowledged records missing from the sink and the duplicates of
// requests sent once; report says whether each is an error.
func killLoop(t *testing.T, bin string, env []string, records, minKills int, report bool) (missing, badDups int) {
	dir := t.TempDir()
	addr := freeAddr(t)
	if err := os.WriteFile(filepath.Join(dir, "weir.yaml"), []byte(fmt.Sprintf(killLoopYAML, dir, addr)), 0o644); err != nil {
		t.Fatal(err)
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d, %d records, at least %d kills", seed, records, minKills)
	rng := rand.New(rand.NewPCG(seed, 1))

	ld := newLoad(records, clients, "http://"+addr+"/ingest", seed)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	for c := range clients {
		wg.Go(func() { ld.client(ctx, c) })
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()

	logPath := filepath.Join(dir, "weir.log")
	kills := 0
	for {
		cmd, exited := start(t, bin, dir, logPath, env)
		waitListening(t, addr, exited, logPath)
		if kills < minKills {
			// Kill i comes once i/(kills+1) of the records are
			// acknowledged: the kills are spread over the load whatever the
			// machine's speed. An even kill lands the moment the answer
			// that crossed the mark reaches its client, when the records
			// just acknowledged are the likeliest not to be durable if the
			// source answered too soon; an odd one a random 0-100 ms later,
			// while other requests are in flight.
			at := int64((kills + 1) * records / (minKills + 1))
			reached := ld.armKill(at)
			select {
			case <-reached:
			case err := <-exited:
				t.Fatalf("weir exited by itself with %v; log:\n%s", err, tail(logPath))
			}
			if kills%2 == 1 {
				time.Sleep(time.Duration(rng.IntN(100)) * time.Millisecond)
			}
			cmd.Process.Signal(syscall.SIGKILL)
			<-exited
			kills++
			continue
		}
		// Enough kills: this one runs until every record is acknowledged,
		// and stops gracefully.
		select {
		case <-done:
		case err := <-exited:
			t.Fatalf("weir exited by itself with %v; log:\n%s", err, tail(logPath))
		case <-time.After(20 * time.Minute):
			t.Fatalf("not done after 20 minutes: %d of %d records acknowledged; log %s:\n%s", ld.acked.Load(), records, logPath, tail(logPath))
		}
		cmd.Process.Signal(syscall.SIGTERM)
		if err := <-exited; err != nil {
			t.Fatalf("the last weir exited with %v; log:\n%s", err, tail(logPath))
		}
		break
	}
	cancel()

	counts := readOutput(t, filepath.Join(dir, "out"))
	dups := 0
	for id := range records {
		n := counts[id]
		switch {
		case n == 0 && ld.wasAcked(id):
			if missing++; missing <= 10 && report {
				t.Errorf("record %d was acknowledged (its request answered 2xx) but is not in the sink", id)
			}
		case n > 1:
			dups += n - 1
			if !ld.wasRetried(id) {
				if badDups++; badDups <= 10 && report {
					t.Errorf("record %d is in the sink %d times, but its request was sent once", id, n)
				}
			}
		}
	}
	st := ld.stats()
	t.Logf("%d kills; %d records in %d requests (%d sent more than once, %d attempts answered non-2xx or cut off); in the sink: %d missing, %d duplicates (%d from requests sent once)",
		kills, records, st.requests, st.retried, st.failedAttempts, missing, dups, badDups)
	return missing, badDups
}

// load is the client side: each of its clients sends requests of 1 to 500
// records of its own share of the ids, each until it is answered 2xx, using
// nothing but net/http.
type load struct {
	records, clients int
	url              string
	seed             uint64
	acked            atomic.Int64

	// The kill mark: the first client whose answer takes acked to its at
	// or past it closes its channel (see armKill).
	mark atomic.Pointer[killMark]

	mu       sync.Mutex
	ackedIDs []bool
	retried  []bool // the id's request was sent more than once
	st       loadStats
}

type loadStats struct{ requests, retried, failedAttempts int }

func newLoad(records, clients int, url string, seed uint64) *load {
	return &load{records: records, clients: clients, url: url, seed: seed,
		ackedIDs: make([]bool, records), retried: make([]bool, records)}
}

func (l *load) client(ctx context.Context, c int) {
	rng := rand.New(rand.NewPCG(l.seed, uint64(c)+2))
	tr := &nethttp.Transport{MaxIdleConnsPerHost: 1}
	defer tr.CloseIdleConnections()
	cl := &nethttp.Client{Transport: tr, Timeout: time.Minute}
	// Client c owns the ids c, c+clients, c+2*clients, ...
	var ids []int
	for id := c; id < l.records; id += l.clients {
		ids = append(ids, id)
	}
	var body bytes.Buffer
	for len(ids) > 0 {
		n := min(len(ids), 1+rng.IntN(500))
		req := ids[:n]
		ids = ids[n:]
		body.Reset()
		for _, id := range req {
			fmt.Fprintf(&body, `{"id":%d,"client":%d,"pad":"%s"}`+"\n", id, c, strings.Repeat("x", id%40))
		}
		for attempt := 1; ; attempt++ {
			if ctx.Err() != nil {
				return
			}
			resp, err := cl.Post(l.url, "application/x-ndjson", bytes.NewReader(body.Bytes()))
			ok := false
			if err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				ok = resp.StatusCode/100 == 2
			}
			if ok {
				l.mu.Lock()
				for _, id := range req {
					l.ackedIDs[id] = true
					l.retried[id] = attempt > 1
				}
				l.st.requests++
				if attempt > 1 {
					l.st.retried++
				}
				l.mu.Unlock()
				l.passed(l.acked.Add(int64(len(req))))
				break
			}
			l.mu.Lock()
			l.st.failedAttempts++
			l.mu.Unlock()
			time.Sleep(time.Duration(5+rng.IntN(20)) * time.Millisecond)
		}
	}
}

// armKill returns a channel closed as soon as at least at records are
// acknowledged: by the client whose answer takes the count there, before
// it sends its next request.
func (l *load) armKill(at int64) <-chan struct{} {
	m := &killMark{at: at, ch: make(chan struct{})}
	l.mark.Store(m)
	l.passed(l.acked.Load())
	return m.ch
}

type killMark struct {
	at int64
	ch chan struct{}
}

// passed closes the kill mark's channel, once, when n records acknowledged
// reach it.
func (l *load) passed(n int64) {
	if m := l.mark.Load(); m != nil && n >= m.at && l.mark.CompareAndSwap(m, nil) {
		close(m.ch)
	}
}

func (l *load) wasAcked(id int) bool   { l.mu.Lock(); defer l.mu.Unlock(); return l.ackedIDs[id] }
func (l *load) wasRetried(id int) bool { l.mu.Lock(); defer l.mu.Unlock(); return l.retried[id] }
func (l *load) stats() loadStats       { l.mu.Lock(); defer l.mu.Unlock(); return l.st }

// readOutput counts the records of each id in the visible files of dir.
func readOutput(t *testing.T, dir string) map[int]int {
	t.Helper()
	counts := map[int]int{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasPrefix(d.Name(), ".") {
			return err
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var r struct{ ID int }
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				return fmt.Errorf("%s: %q: %v", p, sc.Text(), err)
			}
			counts[r.ID]++
		}
		return sc.Err()
	})
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return counts
}
