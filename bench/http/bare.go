package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"net"
	nethttp "net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/weir-etl/weir/record"
)

// The bare server: what a hand-written Go program does to get the in case's
// result with weir's durability, and nothing else. A plain net/http server
// takes POSTs of NDJSON at /ingest (a body of at most weir's max_body_bytes,
// 16 MiB), cuts each body into lines and checks that each is one JSON value
// with the scanner weir uses (record.Valid, the fastest validating scanner
// at hand), refusing the body with 400 otherwise, and appends its lines to
// the group being gathered. One writer goroutine writes each group to a
// hidden chunk file, fsyncs it, renames it to its final name, fsyncs the
// directory and only then answers the group's requests 200
// {"records":N}. Groups are cut as weir's file sink with batch.max_age 20ms
// cuts them: a group is written as soon as the previous one is durable, at
// most once per 20 ms.
//
// It keeps nothing for a replay, counts no in-flight limits, has no
// metrics, no authentication, no per-record metadata and no positions: its
// CPU per record is a floor for any server doing this work.

const (
	bareMaxBody  = 16 << 20              // source/http.DefaultMaxBodyBytes
	bareInterval = 20 * time.Millisecond // the bench's batch.max_age
)

// bareGroup is the requests gathered since the last write: their records,
// each with its line end, and the channels that answer them.
type bareGroup struct {
	buf   []byte
	waits []chan struct{}
}

type bareServer struct {
	dir  string
	mu   sync.Mutex
	cur  *bareGroup
	free *bareGroup // the last group written, reused
	wake chan struct{}
	err  error // the first write error; every later request is answered 500
}

// bareMain serves at addr, writing chunks under dir, until SIGTERM.
func bareMain(addr, dir string) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		log.Fatal(err)
	}
	if *bareProf != "" {
		f, err := os.Create(*bareProf)
		if err != nil {
			log.Fatal(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			log.Fatal(err)
		}
		defer f.Close()
		defer pprof.StopCPUProfile()
	}
	b := &bareServer{dir: dir, cur: &bareGroup{}, free: &bareGroup{}, wake: make(chan struct{}, 1)}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		log.Fatal(err)
	}
	srv := &nethttp.Server{Handler: b, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, os.Interrupt)
	go srv.Serve(ln)
	done := make(chan struct{})
	go b.writer(done)
	<-stop
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	srv.Shutdown(ctx)
	close(done)
}

func (b *bareServer) ServeHTTP(w nethttp.ResponseWriter, r *nethttp.Request) {
	if r.Method != nethttp.MethodPost || r.URL.Path != "/ingest" {
		nethttp.Error(w, "POST to /ingest", nethttp.StatusNotFound)
		return
	}
	if r.ContentLength > bareMaxBody {
		nethttp.Error(w, "too large", nethttp.StatusRequestEntityTooLarge)
		return
	}
	n := 32 << 10
	if r.ContentLength > 0 {
		n = int(r.ContentLength) + 1
	}
	body := bytes.NewBuffer(make([]byte, 0, n))
	if _, err := body.ReadFrom(io.LimitReader(r.Body, bareMaxBody+1)); err != nil {
		nethttp.Error(w, err.Error(), nethttp.StatusBadRequest)
		return
	}
	if body.Len() > bareMaxBody {
		nethttp.Error(w, "too large", nethttp.StatusRequestEntityTooLarge)
		return
	}
	// Check every line before any is taken: a request is all or nothing.
	data := body.Bytes()
	recs := 0
	for line, rest := 1, data; len(rest) > 0; line++ {
		v := rest
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			v, rest = rest[:i], rest[i+1:]
		} else {
			rest = nil
		}
		v = bytes.TrimSuffix(v, []byte{'\r'})
		if len(bytes.TrimSpace(v)) == 0 {
			continue
		}
		if err := record.Valid(v); err != nil {
			nethttp.Error(w, fmt.Sprintf("line %d: %v", line, err), nethttp.StatusBadRequest)
			return
		}
		recs++
	}
	done := make(chan struct{})
	b.mu.Lock()
	g := b.cur
	for rest := data; len(rest) > 0; {
		v := rest
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			v, rest = rest[:i], rest[i+1:]
		} else {
			rest = nil
		}
		v = bytes.TrimSuffix(v, []byte{'\r'})
		if len(bytes.TrimSpace(v)) > 0 {
			g.buf = append(append(g.buf, v...), '\n')
		}
	}
	g.waits = append(g.waits, done)
	b.mu.Unlock()
	select {
	case b.wake <- struct{}{}:
	default:
	}
	select {
	case <-done:
	case <-r.Context().Done():
		return
	}
	b.mu.Lock()
	err := b.err
	b.mu.Unlock()
	if err != nil {
		nethttp.Error(w, err.Error(), nethttp.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(strconv.AppendInt([]byte(`{"records":`), int64(recs), 10))
	w.Write([]byte("}\n"))
}

// writer writes the groups, one after another, at most one per
// bareInterval, until done is closed.
func (b *bareServer) writer(done <-chan struct{}) {
	seq := 0
	last := time.Time{}
	for {
		select {
		case <-b.wake:
		case <-done:
			return
		}
		if d := bareInterval - time.Since(last); d > 0 {
			time.Sleep(d)
		}
		last = time.Now()
		b.mu.Lock()
		g := b.cur
		if len(g.waits) == 0 {
			b.mu.Unlock()
			continue
		}
		b.cur, b.free = b.free, nil
		b.mu.Unlock()
		seq++
		err := b.persist(seq, g.buf)
		b.mu.Lock()
		if err != nil && b.err == nil {
			b.err = err
		}
		b.mu.Unlock()
		for _, c := range g.waits {
			close(c)
		}
		clear(g.waits)
		g.buf, g.waits = g.buf[:0], g.waits[:0]
		b.mu.Lock()
		b.free = g
		b.mu.Unlock()
	}
}

// persist makes buf durable and visible as chunk seq: written to a hidden
// file, fsynced, renamed, the directory fsynced.
func (b *bareServer) persist(seq int, buf []byte) error {
	tmp := filepath.Join(b.dir, fmt.Sprintf(".part-%06d.tmp", seq))
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(buf)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(b.dir, fmt.Sprintf("part-%06d.ndjson", seq)))
	}
	if err != nil {
		return err
	}
	d, err := os.Open(b.dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
