//go:build integration

package postgres_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weir-etl/weir/internal/testkit/kafkatest"
	"github.com/weir-etl/weir/internal/testkit/pgtest"
	"github.com/weir-etl/weir/internal/testkit/weirtest"
)

const kafkaYAML = `
sources:
  in:
    type: kafka
    brokers: [%[1]q]
    group: %[2]s
    topics: [%[3]s]
    session_timeout: 6s
    rebalance_timeout: 20s
    max_poll_records: 1000
sinks:
  db:
    type: postgres
    inputs: [in]
    url: %[4]s
    password_env: WEIR_POSTGRES_PASSWORD
    table: ev
    columns:
      - { name: id, type: bigint }
      - { name: doc, type: jsonb, value: true }
    batch: { max_records: 1000, max_age: 20ms }
checkpoint:
  commit_interval: 2s
  drain_timeout: 10s
  shutdown_timeout: 15s
metrics: { address: "127.0.0.1:0" } # its "metrics listening" line says a process runs
`

// Kafka → postgres with two processes in one consumer group: the second
// joins mid-way (a rebalance: partitions move with a graceful revoke), then
// the first is killed with SIGKILL (its partitions move after the session
// timeout, with offsets committed up to 2 s behind what its sink stored).
// The table ends with every record exactly once.
func TestKafkaRebalanceExactlyOnce(t *testing.T) {
	c := kafkaRebalance(t, bins.Build(t, ""), nil)
	if c.missing != 0 || c.duplicates() != 0 || c.unexpected != 0 {
		t.Fatalf("%d missing, %d duplicates, %d unexpected rows; want 0, 0, 0", c.missing, c.duplicates(), c.unexpected)
	}
}

// The same with the sink that stores no positions: the records the killed
// process wrote after its last offset commit are written again, and the test
// counts them.
func TestKafkaUnsafeVariantIsCaught(t *testing.T) {
	c := kafkaRebalance(t, bins.Build(t, "unsafe_positions"), []string{"WEIR_UNSAFE_POSITIONS=1"})
	if c.missing != 0 {
		t.Fatalf("%d rows missing: even the unsafe variant is at-least-once", c.missing)
	}
	if c.duplicates() == 0 {
		t.Fatal("the sink without positions wrote no duplicate through a SIGKILL: the test cannot tell exactly-once from at-least-once")
	}
}

// kafkaRebalance runs the scenario with the binary bin and returns what the
// table holds.
func kafkaRebalance(t *testing.T, bin string, env []string) tally {
	const parts, perPart = 6, 20000
	brokers := kafkatest.Brokers(t)
	db := pgtest.Database(t)
	conn := pgtest.Connect(t, db)
	if _, err := conn.Exec(ctx, `CREATE TABLE ev (id bigint, doc jsonb); CREATE INDEX ev_id ON ev (id)`); err != nil {
		t.Fatal(err)
	}
	cl := kafkatest.Client(t, brokers)
	topic := kafkatest.CreateTopic(ctx, t, cl, "pg-eo", parts)
	produce(t, cl, topic, parts, perPart)
	total := int64(parts * perPart)

	dir := t.TempDir()
	cfg := filepath.Join(dir, "weir.yaml")
	group := "weir-pg-" + filepath.Base(topic)
	if err := os.WriteFile(cfg, fmt.Appendf(nil, kafkaYAML, brokers[0], group, topic, db), 0o600); err != nil {
		t.Fatal(err)
	}
	rows := func() int64 {
		var n int64
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM ev`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	a := startWeir(t, bin, cfg, "a", env)
	weirtest.WaitFor(t, "a fifth of the records in the table", time.Minute, func() bool { return rows() >= total/5 })
	b := startWeir(t, bin, cfg, "b", env)
	weirtest.WaitFor(t, "half of the records in the table", time.Minute, func() bool { return rows() >= total/2 })
	t.Logf("killing a with %d rows in the table", rows())
	a.Kill()
	var c tally
	weirtest.WaitFor(t, "every record in the table", 2*time.Minute, func() bool {
		c = count(t, conn, "ev", int(total), "true")
		return c.missing == 0
	})
	// a may have written every record before b caught signals.
	weirtest.WaitRunning(t, "b", b.Log, b.From)
	if err := b.Stop(t, time.Minute); err != nil {
		t.Errorf("b exited with %v:\n%s", err, weirtest.Tail(b.Log, 20))
	}
	c = count(t, conn, "ev", int(total), "true")
	t.Logf("%d rows, %d distinct, %d missing; b's summary:\n%s", c.rows, c.distinct, c.missing, weirtest.Tail(b.Log, 6))
	passwordIn(t, a.Log, b.Log)
	return c
}

// produce writes perPart records to each partition: {"id":N,...} with N =
// partition*perPart + the record's index, about 100 bytes each.
func produce(t *testing.T, cl *kgo.Client, topic string, parts int32, perPart int) {
	t.Helper()
	pad := strings.Repeat("x", 60)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	for i := range perPart {
		for p := range parts {
			wg.Add(1)
			v := fmt.Appendf(nil, `{"id":%d,"pad":%q}`, int(p)*perPart+i, pad)
			cl.Produce(ctx, &kgo.Record{Topic: topic, Partition: p, Value: v}, func(_ *kgo.Record, err error) {
				defer wg.Done()
				if err != nil {
					mu.Lock()
					first = errors.Join(first, err)
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	if first != nil {
		t.Fatalf("producing: %v", first)
	}
}
