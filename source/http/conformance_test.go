package http_test

import (
	"bytes"
	"context"
	"fmt"
	nethttp "net/http"
	"sync"
	"testing"
	"time"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/connector/conformance"
	"github.com/weir-etl/weir/pipeline/pipelinetest"
	httpsrc "github.com/weir-etl/weir/source/http"
)

// TestConformance runs the source suite. The input is one request of 12
// records (batches of 2), sent by a client that sends it again, to the
// newest instance of the test, until it is answered 200: the replay of an
// HTTP source is its client's.
func TestConformance(t *testing.T) {
	var mu sync.Mutex
	feeders := map[string]*feeder{}
	conformance.TestSource(t, conformance.SourceHarness{Runtime: pipelinetest.Runtime{},
		Ephemeral: true,
		New: func(t *testing.T) connector.Source {
			c := httpsrc.NewConfig()
			c.Address = "127.0.0.1:0"
			c.BatchSize = 2
			s, err := httpsrc.New("src", c)
			if err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			defer mu.Unlock()
			f, ok := feeders[t.Name()]
			if !ok {
				var body bytes.Buffer
				for i := range 12 {
					fmt.Fprintf(&body, "{\"n\":%d}\n", i)
				}
				f = newFeeder(t, "/", "application/x-ndjson", body.Bytes())
				feeders[t.Name()] = f
			}
			f.target(s)
			return s
		},
	})
}

// feeder is a client that sends one request until it is answered 200, to
// the newest source it was given.
type feeder struct {
	mu   sync.Mutex
	cur  *httpsrc.Source
	stop context.CancelFunc
	done chan struct{}
}

func newFeeder(t *testing.T, path, ct string, body []byte) *feeder {
	ctx, cancel := context.WithCancel(context.Background())
	f := &feeder{stop: cancel, done: make(chan struct{})}
	cl := &nethttp.Client{Timeout: time.Minute}
	go func() {
		defer close(f.done)
		defer cl.CloseIdleConnections()
		for ctx.Err() == nil {
			f.mu.Lock()
			s := f.cur
			f.mu.Unlock()
			if addr := addrOf(s); addr != "" {
				req, _ := nethttp.NewRequestWithContext(ctx, "POST", "http://"+addr+path, bytes.NewReader(body))
				req.Header.Set("Content-Type", ct)
				if resp, err := cl.Do(req); err == nil {
					resp.Body.Close()
					if resp.StatusCode == 200 {
						return
					}
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(func() { f.stop(); <-f.done })
	return f
}

func (f *feeder) target(s *httpsrc.Source) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cur = s
}

// addrOf is s's address; "" before it listens, or when no source is
// targeted yet.
func addrOf(s *httpsrc.Source) string {
	if s == nil {
		return ""
	}
	return s.Addr()
}
