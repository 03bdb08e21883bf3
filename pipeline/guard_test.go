package pipeline_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weir-etl/weir/pipeline"
	"github.com/weir-etl/weir/sink/blackhole"
)

// guardRun runs an endless pipeline that listens on addr with token, calls
// probe with the address to reach it by and returns what was logged.
func guardRun(t *testing.T, addr, token string, probe func(base string)) string {
	t.Helper()
	sp := fastSpec(gen(t, 0, 1, 10), pipeline.SinkSpec{Name: "out", Inputs: []string{"gen"}, Sink: blackhole.New()})
	sp.Metrics = pipeline.MetricsSettings{Address: addr, Token: token, Pprof: true}
	var log bytes.Buffer
	var mu atomic.Bool
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	done := make(chan struct{})
	listening := pipeline.WithListening(func(a string) {
		go func() {
			defer close(done)
			defer cancel()
			_, port, _ := net.SplitHostPort(a)
			probe("http://127.0.0.1:" + port)
			mu.Store(true)
		}()
	})
	lg := slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelInfo}))
	if err := pipeline.Run(ctx, sp, pipeline.WithLogger(lg), listening); err != nil {
		t.Fatal(err)
	}
	<-done
	if !mu.Load() {
		t.Fatal("the probe did not finish")
	}
	return log.String()
}

func get(t *testing.T, url, token string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := (&http.Client{Timeout: 20 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	// A tap streams until its count: read a bounded part.
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	return resp.StatusCode, string(b)
}

// dataPaths are the endpoints that show records or the program's insides.
var dataPaths = []string{"/api/v1/tap/gen?count=1", "/api/v1/status", "/debug/pprof/cmdline"}

// openPaths are served to anyone who reaches the listener.
var openPaths = []string{"/metrics", "/healthz", "/debug/stalls", "/", "/weir/status.js"}

// Guarantee: on an address beyond loopback and without a token, the taps,
// the status document and the profiles are refused with what to do, the
// probes and /metrics answer, and a WARN says what is exposed.
func TestBeyondLoopbackWithoutTokenServesNoRecords(t *testing.T) {
	log := guardRun(t, "0.0.0.0:0", "", func(base string) {
		for _, p := range dataPaths {
			code, body := get(t, base+p, "")
			if code != http.StatusForbidden || !strings.Contains(body, "metrics.token_env") || !strings.Contains(body, "beyond loopback") {
				t.Errorf("GET %s beyond loopback without a token: %d %q, want 403 naming metrics.token_env", p, code, body)
			}
		}
		for _, p := range openPaths {
			if code, body := get(t, base+p, ""); code != http.StatusOK {
				t.Errorf("GET %s: %d %q, want 200", p, code, body)
			}
		}
	})
	if !strings.Contains(log, `level=WARN msg="metrics listening beyond loopback"`) || !strings.Contains(log, "taps, /api/v1/status and profiles are refused there") {
		t.Errorf("no WARN saying what is exposed beyond loopback:\n%s", log)
	}
}

// Guarantee: with a token, the data endpoints answer only a request that
// carries it (401 and WWW-Authenticate otherwise), on loopback too; the
// token never reaches the log.
func TestTokenGuardsTheData(t *testing.T) {
	const token = "s3cr3t-weir-token"
	for _, addr := range []string{"127.0.0.1:0", "0.0.0.0:0"} {
		log := guardRun(t, addr, token, func(base string) {
			for _, p := range dataPaths {
				for _, bad := range []string{"", "wrong", token + "x"} {
					code, body := get(t, base+p, bad)
					if code != http.StatusUnauthorized || !strings.Contains(body, "metrics token") {
						t.Errorf("%s: GET %s with token %q: %d %q, want 401", addr, p, bad, code, body)
					}
				}
				if code, body := get(t, base+p, token); code != http.StatusOK {
					t.Errorf("%s: GET %s with the token: %d %q, want 200", addr, p, code, body)
				}
			}
			for _, p := range openPaths {
				if code, _ := get(t, base+p, ""); code != http.StatusOK {
					t.Errorf("%s: GET %s without a token: %d, want 200", addr, p, code)
				}
			}
		})
		if strings.Contains(log, token) {
			t.Errorf("the token reached the log:\n%s", log)
		}
		if beyond := strings.Contains(log, "metrics listening beyond loopback"); beyond != (addr == "0.0.0.0:0") {
			t.Errorf("%s: WARN beyond loopback logged %v:\n%s", addr, beyond, log)
		}
	}
}

// Guarantee: on loopback without a token everything is served, as before.
func TestLoopbackWithoutTokenServesAll(t *testing.T) {
	log := guardRun(t, "127.0.0.1:0", "", func(base string) {
		for _, p := range append(dataPaths, openPaths...) {
			if code, body := get(t, base+p, ""); code != http.StatusOK {
				t.Errorf("GET %s on loopback: %d %q, want 200", p, code, body)
			}
		}
	})
	if strings.Contains(log, "beyond loopback") {
		t.Errorf("a loopback listener warned:\n%s", log)
	}
}
