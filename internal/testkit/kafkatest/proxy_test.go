package kafkatest

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The proxy in front of an in-process cluster: clients learn only its
// address, and a freeze holds their requests until the thaw.
func TestProxyFreezesAndThaws(t *testing.T) {
	c := Fake(t, "proxied", 2)
	checkProxy(t, NewProxy(t, c.ListenAddrs()[0]), "proxied")
}

// The same in front of the real broker, whose advertised listener the proxy
// must rewrite for clients to stay behind it.
func TestProxyFreezesAndThawsRealBroker(t *testing.T) {
	brokers := Brokers(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	topic := CreateTopic(ctx, t, Client(t, brokers), "weir-proxy", 2)
	checkProxy(t, NewProxy(t, brokers[0]), topic)
}

func checkProxy(t *testing.T, px *Proxy, topic string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl := Client(t, []string{px.Addr})
	md, err := kadm.NewClient(cl).BrokerMetadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range md.Brokers {
		if got := fmt.Sprintf("%s:%d", b.Host, b.Port); got != px.Addr {
			t.Errorf("the client learnt of broker %d at %s, want the proxy %s", b.NodeID, got, px.Addr)
		}
	}
	// A broker just started has no coordinator yet for a while.
	var coord kadm.FindCoordinatorResponse
	for {
		coord = kadm.NewClient(cl).FindGroupCoordinators(ctx, "weir-proxy-group")["weir-proxy-group"]
		if coord.Err == nil || ctx.Err() != nil {
			break
		}
		time.Sleep(100 * time.Millisecond) // polling the broker
	}
	if coord.Err != nil {
		t.Errorf("coordinator of the group: %v", coord.Err)
	} else if got := fmt.Sprintf("%s:%d", coord.Host, coord.Port); got != px.Addr {
		t.Errorf("the group's coordinator is at %s, want the proxy %s", got, px.Addr)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: 0, Value: []byte("before")}).FirstErr(); err != nil {
		t.Fatalf("producing through the proxy: %v", err)
	}

	px.Freeze()
	pctx, pcancel := context.WithTimeout(ctx, 300*time.Millisecond)
	if err := cl.Ping(pctx); err == nil {
		t.Error("a ping answered through a frozen proxy")
	}
	pcancel()
	res := make(chan error, 1)
	go func() {
		res <- cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: 1, Value: []byte("during")}).FirstErr()
	}()
	select {
	case err := <-res:
		t.Fatalf("a produce answered through a frozen proxy: %v", err)
	case <-time.After(500 * time.Millisecond): // nothing to poll for: nothing must happen
	}
	px.Thaw()
	if err := <-res; err != nil {
		t.Fatalf("the produce held by the freeze, after the thaw: %v", err)
	}
}

// Down refuses dials and closes what is open, as a stopped broker; Up
// serves again on the same address.
func TestProxyGoesDownAndUp(t *testing.T) {
	c := Fake(t, "proxied", 1)
	px := NewProxy(t, c.ListenAddrs()[0])
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl := Client(t, []string{px.Addr})
	if err := cl.Ping(ctx); err != nil {
		t.Fatalf("ping through the proxy: %v", err)
	}
	px.Down()
	if conn, err := net.Dial("tcp", px.Addr); err == nil {
		conn.Close()
		t.Fatal("a dial to the proxy while down was accepted")
	} else if !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("a dial to the proxy while down: %v, want connection refused", err)
	}
	px.Up()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "proxied", Value: []byte("after")}).FirstErr(); err != nil {
		t.Fatalf("producing through the proxy once up again: %v", err)
	}
}
