//go:build integration

package iceberg_test

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

// Two processes of one consumer group write one table: both commit
// snapshots concurrently (each commit a compare-and-swap that the other's
// commits make fail and retry, re-reading the positions), the second joins
// mid-way (a rebalance with a graceful revoke), and the first is then
// killed with SIGKILL (its partitions move after the session timeout, with
// Kafka offsets committed up to 2s behind what its snapshots stored).
// cleanup_min_age stays at its default: with two writers, neither may take
// the other's fresh files for orphans.
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
  lake:
    type: iceberg
    inputs: [in]
    catalog:
      type: sql
      uri: %[4]s
      password_env: WEIR_POSTGRES_PASSWORD
      warehouse: %[5]s/warehouse
    namespace: kafka
    table: ev
    create_table: true
    columns:
      - { name: id, type: long, required: true }
      - { name: doc, value: true }
    batch: { max_records: 2000, max_age: 50ms }
checkpoint:
  commit_interval: 2s
  drain_timeout: 10s
  shutdown_timeout: 15s
metrics: { address: "127.0.0.1:0" } # its "metrics listening" line says a process runs
`

// Kafka → iceberg with two members and a rebalance, then a SIGKILL: DuckDB
// and pyiceberg count every record once, none missing.
func TestKafkaRebalanceExactlyOnce(t *testing.T) {
	parts, perPart := int32(6), 10_000
	if full {
		perPart = 40_000
	}
	brokers := kafkatest.Brokers(t)
	db := pgtest.Database(t)
	conn := pgtest.Connect(t, db)
	cl := kafkatest.Client(t, brokers)
	topic := kafkatest.CreateTopic(ctx, t, cl, "ice-eo", parts)
	produce(t, cl, topic, parts, perPart)
	total := int64(parts) * int64(perPart)

	dir := t.TempDir()
	cfg := filepath.Join(dir, "weir.yaml")
	group := "weir-ice-" + filepath.Base(topic)
	if err := os.WriteFile(cfg, fmt.Appendf(nil, kafkaYAML, brokers[0], group, topic, db, dir), 0o600); err != nil {
		t.Fatal(err)
	}
	key := "weir.positions.kafka.ev/lake"
	rows := func() int64 {
		st, ok := readState(t, conn, "weir", "kafka", "ev", key)
		if !ok {
			return 0
		}
		return st.records
	}
	bin := bins.Build(t, "")
	a := startWeir(t, bin, cfg, "a", nil)
	weirtest.WaitFor(t, "a fifth of the records in the table", 2*time.Minute, func() bool { return rows() >= total/5 })
	b := startWeir(t, bin, cfg, "b", nil)
	weirtest.WaitFor(t, "half of the records in the table", 2*time.Minute, func() bool { return rows() >= total/2 })
	t.Logf("killing a with %d rows in the table", rows())
	a.Kill()
	weirtest.WaitFor(t, "every record in the table", 3*time.Minute, func() bool { return rows() >= total })
	// a may have written every record before b caught signals.
	weirtest.WaitRunning(t, "b", b.Log, b.From)
	if err := b.Stop(t, time.Minute); err != nil {
		t.Errorf("b exited with %v:\n%s", err, weirtest.Tail(b.Log, 20))
	}
	st, _ := readState(t, conn, "weir", "kafka", "ev", key)
	dn, dd := readCount(t, "duckdb", "count", st.location)
	pn, pd := readCount(t, "pyiceberg", "count", db, "file://"+dir+"/warehouse", "kafka.ev")
	t.Logf("%d records; DuckDB count %d distinct %d; pyiceberg count %d distinct %d; %d snapshots; b's summary:\n%s",
		total, dn, dd, pn, pd, st.snaps, weirtest.Tail(b.Log, 5))
	if dn != total || dd != total || pn != total || pd != total {
		t.Fatalf("want count and distinct %d in both readers: %d missing, %d duplicates (DuckDB)", total, total-dd, dn-dd)
	}
	passwordIn(t, a.Log, b.Log)
}

// produce writes perPart records to each partition: {"id":N,...} with N =
// partition*perPart + the record's index.
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
