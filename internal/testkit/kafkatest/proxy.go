package kafkatest

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Proxy is a TCP proxy in front of one Kafka broker that a test can freeze
// (Down and Up take it away and bring it back, as a stopped broker):
// while frozen it forwards nothing in either direction and holds every
// connection open, new ones too, as a broker stopped mid-request does (a
// process under SIGSTOP, a network that drops everything). Thaw forwards
// again what waited.
//
// A client given only the proxy's address would still reach the broker
// itself: a broker tells its clients where it is (its advertised listener,
// 127.0.0.1:9092 for the test broker of .ci/kafka.sh), and they connect
// there for everything but the first metadata request. So the proxy reads
// the protocol's frames and rewrites the broker's own address to its own in
// the answers that carry it (Metadata, FindCoordinator, DescribeCluster):
// every connection of the client goes through the proxy. Addresses of other
// brokers are left as they are; the test broker is a single node.
type Proxy struct {
	// Addr is the address to give clients, host:port.
	Addr string

	t        testing.TB
	ln       net.Listener
	upstream string
	upHost   string
	upPort   int32
	host     string
	port     int32

	mu     sync.Mutex
	frozen bool
	thawed chan struct{} // closed while not frozen
	conns  map[net.Conn]struct{}
	down   bool // Down: not listening until Up
	closed bool
	wg     sync.WaitGroup
}

// NewProxy starts a proxy in front of the broker at upstream (host:port) on a
// free loopback port, and stops it when the test ends.
func NewProxy(t testing.TB, upstream string) *Proxy {
	t.Helper()
	uh, up, err := splitHostPort(upstream)
	if err != nil {
		t.Fatalf("proxy: broker address %q: %v", upstream, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("proxy: %v", err)
	}
	h, p, _ := splitHostPort(ln.Addr().String())
	thawed := make(chan struct{})
	close(thawed)
	px := &Proxy{Addr: ln.Addr().String(), t: t, ln: ln, upstream: upstream, upHost: uh, upPort: up, host: h, port: p,
		thawed: thawed, conns: map[net.Conn]struct{}{}}
	px.wg.Add(1)
	go px.accept(ln)
	t.Cleanup(px.Close)
	return px
}

func splitHostPort(addr string) (string, int32, error) {
	h, ps, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, err
	}
	p, err := strconv.ParseInt(ps, 10, 32)
	if err != nil {
		return "", 0, fmt.Errorf("port %q: %w", ps, err)
	}
	return h, int32(p), nil
}

// Freeze stops forwarding: every byte not yet forwarded waits, in both
// directions, and new connections are accepted but not served.
func (p *Proxy) Freeze() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.frozen {
		p.frozen, p.thawed = true, make(chan struct{})
	}
}

// Thaw forwards again.
func (p *Proxy) Thaw() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.frozen {
		p.frozen = false
		close(p.thawed)
	}
}

// Down makes the broker unreachable, as a stopped broker is: the proxy
// stops listening, so that dials are refused, and closes every connection.
func (p *Proxy) Down() {
	p.mu.Lock()
	if p.closed || p.down {
		p.mu.Unlock()
		return
	}
	p.down = true
	p.hangUp()
	p.mu.Unlock()
}

// hangUp stops listening and closes every connection; p.mu is held.
func (p *Proxy) hangUp() {
	_ = p.ln.Close()
	for c := range p.conns {
		_ = c.Close()
	}
}

// Up listens again on the proxy's address after Down.
func (p *Proxy) Up() {
	p.t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || !p.down {
		return
	}
	ln, err := net.Listen("tcp", p.Addr)
	if err != nil {
		p.t.Fatalf("proxy: listening again on %s: %v", p.Addr, err)
	}
	p.ln, p.down = ln, false
	p.wg.Add(1)
	go p.accept(ln)
}

// Close stops the proxy and closes its connections. It is called when the
// test ends.
func (p *Proxy) Close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	p.hangUp()
	if p.frozen {
		p.frozen = false
		close(p.thawed)
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// gate waits while the proxy is frozen; it reports false once it is closed.
func (p *Proxy) gate() bool {
	p.mu.Lock()
	c, closed := p.thawed, p.closed
	p.mu.Unlock()
	<-c
	p.mu.Lock()
	defer p.mu.Unlock()
	return !closed && !p.closed
}

// track adds c to the connections Close closes; false once closed.
func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		_ = c.Close()
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	_ = c.Close()
}

func (p *Proxy) accept(ln net.Listener) {
	defer p.wg.Done()
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		if !p.track(c) {
			return
		}
		p.wg.Add(1)
		go p.serve(c)
	}
}

// serve forwards one client connection to the broker: requests as they are,
// answers with the broker's address rewritten to the proxy's.
func (p *Proxy) serve(client net.Conn) {
	defer p.wg.Done()
	defer p.untrack(client)
	if !p.gate() {
		return
	}
	up, err := net.Dial("tcp", p.upstream)
	if err != nil {
		p.t.Logf("proxy: dialing the broker %s: %v", p.upstream, err)
		return
	}
	if !p.track(up) {
		return
	}
	defer p.untrack(up)
	// The requests' keys and versions by correlation id: an answer is
	// decoded by the request it answers. A request without an answer (a
	// produce with acks 0) stays in the map; connections are short-lived.
	var mu sync.Mutex
	asked := map[int32][2]int16{}
	done := make(chan struct{}, 2)
	go func() {
		defer func() { done <- struct{}{} }()
		r := bufio.NewReaderSize(client, 64<<10)
		for {
			frame, err := readFrame(r)
			if err != nil {
				return
			}
			if len(frame) >= 12 {
				key, version := int16(binary.BigEndian.Uint16(frame[4:])), int16(binary.BigEndian.Uint16(frame[6:]))
				corr := int32(binary.BigEndian.Uint32(frame[8:]))
				mu.Lock()
				asked[corr] = [2]int16{key, version}
				mu.Unlock()
			}
			if !p.gate() {
				return
			}
			if _, err := up.Write(frame); err != nil {
				return
			}
		}
	}()
	go func() {
		defer func() { done <- struct{}{} }()
		r := bufio.NewReaderSize(up, 64<<10)
		for {
			frame, err := readFrame(r)
			if err != nil {
				return
			}
			if len(frame) >= 8 {
				corr := int32(binary.BigEndian.Uint32(frame[4:]))
				mu.Lock()
				kv, ok := asked[corr]
				delete(asked, corr)
				mu.Unlock()
				if ok {
					if f, err := p.rewrite(frame, kv[0], kv[1]); err != nil {
						p.t.Logf("proxy: answer to request key %d v%d left as it is: %v", kv[0], kv[1], err)
					} else {
						frame = f
					}
				}
			}
			if !p.gate() {
				return
			}
			if _, err := client.Write(frame); err != nil {
				return
			}
		}
	}()
	<-done // one side ended: end both
	_ = client.Close()
	_ = up.Close()
	<-done
}

// readFrame reads one size-prefixed frame, the size included.
func readFrame(r io.Reader) ([]byte, error) {
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(size[:])
	if n > 256<<20 {
		return nil, fmt.Errorf("a frame of %d bytes", n)
	}
	frame := make([]byte, 4+n)
	copy(frame, size[:])
	_, err := io.ReadFull(r, frame[4:])
	return frame, err
}

// rewrite returns the answer frame with the broker's address replaced by the
// proxy's, for the answers that carry broker addresses; others as they are.
func (p *Proxy) rewrite(frame []byte, key, version int16) ([]byte, error) {
	switch key {
	case 3, 10, 60: // Metadata, FindCoordinator, DescribeCluster
	default:
		return frame, nil
	}
	resp := kmsg.ResponseForKey(key)
	resp.SetVersion(version)
	// The header: the correlation id, then, for a flexible version, tagged
	// fields.
	hdr := 8
	if resp.IsFlexible() {
		n, k := binary.Uvarint(frame[hdr:])
		if k <= 0 {
			return nil, errors.New("a bad header")
		}
		hdr += k
		for range n {
			_, k1 := binary.Uvarint(frame[hdr:])
			if k1 <= 0 {
				return nil, errors.New("a bad header tag")
			}
			size, k2 := binary.Uvarint(frame[hdr+k1:])
			if k2 <= 0 || hdr+k1+k2+int(size) > len(frame) {
				return nil, errors.New("a bad header tag")
			}
			hdr += k1 + k2 + int(size)
		}
	}
	if err := resp.ReadFrom(frame[hdr:]); err != nil {
		return nil, err
	}
	switch r := resp.(type) {
	case *kmsg.MetadataResponse:
		for i := range r.Brokers {
			p.swap(&r.Brokers[i].Host, &r.Brokers[i].Port)
		}
	case *kmsg.FindCoordinatorResponse:
		p.swap(&r.Host, &r.Port)
		for i := range r.Coordinators {
			p.swap(&r.Coordinators[i].Host, &r.Coordinators[i].Port)
		}
	case *kmsg.DescribeClusterResponse:
		for i := range r.Brokers {
			p.swap(&r.Brokers[i].Host, &r.Brokers[i].Port)
		}
	}
	out := append([]byte(nil), frame[:hdr]...)
	out = resp.AppendTo(out)
	binary.BigEndian.PutUint32(out, uint32(len(out)-4))
	return out, nil
}

// swap replaces the broker's own address by the proxy's.
func (p *Proxy) swap(host *string, port *int32) {
	if *port == p.upPort && (*host == p.upHost || (*host == "localhost" && p.upHost == "127.0.0.1")) {
		*host, *port = p.host, p.port
	}
}
