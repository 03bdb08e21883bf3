package kafka

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weir-etl/weir/connector"
)

// The positions log: a compacted topic of one partition that the
// exactly-once sink writes, in each group's transaction, the positions the
// group reaches (one record per source partition), and reads back with
// read_committed.
//
// One partition, because the log is also the fence between writers: before
// a transaction commits, its writer reads the log up to its own first
// positions record, which it can do only once every transaction with a
// positions record before it has committed or aborted (the partition's last
// stable offset must reach its record). Every commit is thus checked against
// all the commits ordered before it in one log, and two writers of one
// source partition cannot both commit the same records: the later one sees
// the earlier one's positions and aborts. With several partitions two
// transactions could each wait for the other.

// posKey names a source partition.
type posKey struct{ source, partition string }

// posValue is a positions record's value.
type posValue struct {
	Position connector.Position `json:"position"`
	Writer   string             `json:"writer"` // the run that wrote it
	TxnID    string             `json:"transactional_id"`
}

// posRecordKey is a positions record's key: pipeline, sink, source and
// partition, as a JSON array.
func posRecordKey(pipeline, sink string, k posKey) []byte {
	b, _ := json.Marshal([4]string{pipeline, sink, k.source, k.partition})
	return b
}

// posLog reads the positions log. Its methods are safe for concurrent use:
// StoredPositions reads on the sink's goroutine, the fence on the
// persister's.
type posLog struct {
	cl             *kgo.Client // a plain client: metadata and fetches
	topic          string
	pipeline, sink string
	maxWait        time.Duration // the most a read waits for another writer's transaction

	mu       sync.Mutex
	id       [16]byte // the topic's id, for fetches
	leader   int32
	cursor   int64 // the next offset to read
	view     map[posKey]connector.Position
	dec      kgo.Decompressor
	observed int64 // positions records of this sink read, for tests
	// watched holds the offsets of positions records whose commit is to be
	// confirmed (confirm), and whether a read_committed fetch returned
	// them.
	watched map[int64]bool

	cover atomic.Pointer[map[posKey]connector.Position] // a copy of view for Write's filter

	// waiting, when set (by tests), is called when a read to the log's end
	// first finds a transaction open, before it lets go of mu.
	waiting func()
}

func newPosLog(cl *kgo.Client, topic, pipeline, sink string, maxWait time.Duration) *posLog {
	l := &posLog{cl: cl, topic: topic, pipeline: pipeline, sink: sink, maxWait: maxWait,
		view: map[posKey]connector.Position{}, dec: kgo.DefaultDecompressor()}
	l.publish()
	return l
}

func (l *posLog) publish() {
	m := make(map[posKey]connector.Position, len(l.view))
	for k, v := range l.view {
		m[k] = v
	}
	l.cover.Store(&m)
}

// ensure creates the topic when it is missing (compacted, one partition,
// the brokers' replication factor) and checks it has one partition.
func (l *posLog) ensure(ctx context.Context) error {
	adm := kadm.NewClient(l.cl)
	td, err := adm.ListTopics(ctx, l.topic)
	if err != nil {
		return fmt.Errorf("looking for positions_topic %s: %w", l.topic, err)
	}
	if d, ok := td[l.topic]; !ok || errors.Is(d.Err, kerr.UnknownTopicOrPartition) {
		compact := "compact"
		resp, err := adm.CreateTopic(ctx, 1, -1, map[string]*string{"cleanup.policy": &compact}, l.topic)
		if err != nil {
			return fmt.Errorf("creating positions_topic %s: %w", l.topic, err)
		}
		if resp.Err != nil && !errors.Is(resp.Err, kerr.TopicAlreadyExists) {
			return fmt.Errorf("creating positions_topic %s: %w: create it (one partition, cleanup.policy=compact), or grant the sink's user CREATE on it", l.topic, resp.Err)
		}
	} else if d.Err != nil {
		return fmt.Errorf("looking for positions_topic %s: %w", l.topic, d.Err)
	} else if n := len(d.Partitions); n != 1 {
		return fmt.Errorf("positions_topic %s has %d partitions: it must have exactly one (every commit of the sink is checked against the ones before it in one log); name another topic", l.topic, n)
	}
	return nil
}

// locate reads the topic's id and partition 0's leader.
func (l *posLog) locate(ctx context.Context) error {
	req := kmsg.NewPtrMetadataRequest()
	t := kmsg.NewMetadataRequestTopic()
	t.Topic = kmsg.StringPtr(l.topic)
	req.Topics = append(req.Topics, t)
	resp, err := req.RequestWith(ctx, l.cl)
	if err != nil {
		return err
	}
	for _, mt := range resp.Topics {
		if mt.Topic == nil || *mt.Topic != l.topic {
			continue
		}
		if err := kerr.ErrorForCode(mt.ErrorCode); err != nil {
			return err
		}
		for _, p := range mt.Partitions {
			if p.Partition == 0 {
				if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
					return err
				}
				l.id, l.leader = mt.TopicID, p.Leader
				return nil
			}
		}
	}
	return fmt.Errorf("the brokers' metadata has no partition 0 of %s", l.topic)
}

// start positions the reader at the log's start and reads it to its end.
func (l *posLog) start(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.locateRetry(ctx); err != nil {
		return err
	}
	starts, err := kadm.NewClient(l.cl).ListStartOffsets(ctx, l.topic)
	if err != nil {
		return fmt.Errorf("reading positions_topic %s: %w", l.topic, err)
	}
	if o, ok := starts.Lookup(l.topic, 0); ok && o.Err == nil {
		l.cursor = o.Offset
	}
	return l.readToEnd(ctx)
}

func (l *posLog) locateRetry(ctx context.Context) error {
	var err error
	for try := 0; try < 20; try++ {
		if err = l.locate(ctx); err == nil {
			return nil
		}
		t := time.NewTimer(250 * time.Millisecond)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
	}
	return fmt.Errorf("locating positions_topic %s: %w", l.topic, err)
}

// readLocked reads the log up to target (for the fence: the offset of the
// caller's own first positions record, which is in an open transaction),
// waiting up to maxWait for the transactions before it to end. The caller
// holds mu.
func (l *posLog) readLocked(ctx context.Context, target int64) error {
	deadline := time.Now().Add(l.maxWait)
	for l.cursor < target {
		if time.Now().After(deadline) {
			return fmt.Errorf("reading positions_topic %s: a transaction of another writer before offset %d stayed open for %v (a process that stopped while committing: its transaction ends when its transaction_timeout passes)", l.topic, target, l.maxWait)
		}
		if _, err := l.readStep(ctx); err != nil {
			return err
		}
	}
	return nil
}

// readStep fetches the log once from the cursor, applies what it read and
// moves the cursor past it, and returns the partition's high watermark. The
// caller holds mu.
func (l *posLog) readStep(ctx context.Context) (int64, error) {
	fp, next, err := l.fetch(ctx)
	if err != nil {
		return 0, err
	}
	changed := false
	for _, r := range fp.Records {
		if _, ok := l.watched[r.Offset]; ok {
			l.watched[r.Offset] = true
		}
		if l.apply(r) {
			changed = true
		}
	}
	if next > l.cursor {
		l.cursor = next
	}
	if changed {
		l.publish()
	}
	return fp.HighWatermark, nil
}

// readToEnd reads the log up to its end as of the first fetch, waiting up
// to storedWait for the transactions open then (see stored), with mu let go
// between fetches. The caller holds mu.
func (l *posLog) readToEnd(ctx context.Context) error {
	deadline := time.Now().Add(storedWait)
	from := l.cursor
	hw, err := l.readStep(ctx)
	if err != nil {
		return err
	}
	target := max(hw, l.cursor)
	moved := l.cursor > from
	if l.cursor < target && l.waiting != nil {
		l.waiting()
	}
	for l.cursor < target && time.Now().Before(deadline) {
		l.mu.Unlock()
		if !moved {
			// Nothing new in the last fetch: a transaction still open.
			t := time.NewTimer(storedPause)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
			}
		}
		l.mu.Lock()
		if err := ctx.Err(); err != nil {
			return err
		}
		from = l.cursor
		if _, err := l.readStep(ctx); err != nil {
			return err
		}
		moved = l.cursor > from
	}
	return nil
}

// storedWait is the most StoredPositions waits for transactions that were
// open when it was called.
const storedWait = 5 * time.Second

// storedPause is how long StoredPositions lets go of the log between two
// fetches while it waits.
const storedPause = 10 * time.Millisecond

// fetch fetches the partition from the cursor, read_committed.
func (l *posLog) fetch(ctx context.Context) (kgo.FetchPartition, int64, error) {
	for try := 0; ; try++ {
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID = -1
		req.MaxWaitMillis = 50
		req.MinBytes = 1
		req.MaxBytes = 16 << 20
		req.IsolationLevel = 1
		req.SessionEpoch = -1
		t := kmsg.NewFetchRequestTopic()
		t.Topic, t.TopicID = l.topic, l.id
		p := kmsg.NewFetchRequestTopicPartition()
		p.Partition, p.FetchOffset, p.CurrentLeaderEpoch, p.LogStartOffset, p.PartitionMaxBytes = 0, l.cursor, -1, -1, 8<<20
		t.Partitions = append(t.Partitions, p)
		req.Topics = append(req.Topics, t)
		kresp, err := l.cl.Broker(int(l.leader)).Request(ctx, req)
		var perr error
		if err == nil {
			resp := kresp.(*kmsg.FetchResponse)
			perr = kerr.ErrorForCode(resp.ErrorCode)
			if perr == nil && (len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1) {
				perr = errors.New("the broker's fetch response is not for the one partition asked")
			}
			if perr == nil {
				rp := &resp.Topics[0].Partitions[0]
				fp, next := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{Offset: l.cursor, IsolationLevel: kgo.ReadCommitted(), Topic: l.topic}, rp, l.dec, nil)
				switch {
				case fp.Err == nil:
					return fp, next, nil
				case errors.Is(fp.Err, kerr.OffsetOutOfRange):
					// Compaction removed what the cursor pointed at.
					starts, lerr := kadm.NewClient(l.cl).ListStartOffsets(ctx, l.topic)
					if o, ok := starts.Lookup(l.topic, 0); lerr == nil && ok && o.Err == nil && o.Offset > l.cursor {
						l.cursor = o.Offset
						continue
					}
				}
				perr = fp.Err
			}
			err = perr
		}
		if ctx.Err() != nil {
			return kgo.FetchPartition{}, 0, ctx.Err()
		}
		if try >= 20 {
			return kgo.FetchPartition{}, 0, fmt.Errorf("reading positions_topic %s: %w", l.topic, err)
		}
		// A new leader, a topic id not yet known: look again.
		time.Sleep(100 * time.Millisecond)
		if lerr := l.locate(ctx); lerr != nil {
			err = lerr
		}
	}
}

// apply adds a positions record of this pipeline and sink to the view, and
// reports whether it raised a position.
func (l *posLog) apply(r *kgo.Record) bool {
	var key [4]string
	if json.Unmarshal(r.Key, &key) != nil || key[0] != l.pipeline || key[1] != l.sink {
		return false
	}
	var v posValue
	if json.Unmarshal(r.Value, &v) != nil {
		return false
	}
	l.observed++
	k := posKey{key[2], key[3]}
	if v.Position > l.view[k] {
		l.view[k] = v.Position
		return true
	}
	return false
}

// stored returns the view's positions of the named partitions after
// reading the log to its last stable offset.
//
// It reads up to the log's end as of its first fetch: the transactions open
// then (a commit whose markers are on their way, the commit of the
// partition's last owner, a group of this sink being persisted) are waited
// for, up to storedWait; one still open after that is a writer's that
// stopped, and what it stores, if it ever commits, the fence checks. Between
// fetches it lets go of mu, since the transaction it waits for may be this
// sink's own, whose fence and confirm need mu before it can commit: held
// throughout, every StoredPositions during a Persist waited out storedWait
// and missed that group's positions.
func (l *posLog) stored(ctx context.Context, source string, partitions []string) (map[string]connector.Position, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.readToEnd(ctx); err != nil {
		return nil, err
	}
	out := map[string]connector.Position{}
	for _, p := range partitions {
		if pos, ok := l.view[posKey{source, p}]; ok {
			out[p] = pos
		}
	}
	return out, nil
}

// fence reads the log up to target, the offset of the caller's first
// positions record, and returns an error naming the first source partition
// whose stored position is past the first offset the caller's group holds
// of it: another writer committed those records first.
func (l *posLog) fence(ctx context.Context, target int64, firsts map[posKey]int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.readLocked(ctx, target); err != nil {
		return err
	}
	// Groups persist one at a time: an entry left by a Persist that failed
	// before its confirm is dropped here.
	l.watched = map[int64]bool{target: false}
	for k, first := range firsts {
		if pos := l.view[k]; int64(pos) > first {
			return fmt.Errorf("%w: positions committed by another writer already cover source %s partition %s up to %d, past this group's records from %d: the group is written again without them (another process writes the same partition: a rebalance, or a process that was stopped)", errFenced, k.source, k.partition, pos, first)
		}
	}
	return nil
}

// confirm reads the log past at, the offset of a group's first positions
// record (fenced before), and reports whether read_committed consumers see
// that record: whether its transaction committed. A commit the client
// reported is checked, not trusted: franz-go ends a transaction it believes
// empty with an abort and returns nil from EndTransaction(TryCommit), which
// was seen under load with the group's records in the log (docs/kafka.md).
func (l *posLog) confirm(ctx context.Context, at int64) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	defer delete(l.watched, at)
	if _, ok := l.watched[at]; !ok {
		return false, fmt.Errorf("reading positions_topic %s: offset %d was not fenced before its commit", l.topic, at)
	}
	if err := l.readLocked(ctx, at+1); err != nil {
		return false, err
	}
	return l.watched[at], nil
}

// committed notes a group's own positions once its transaction committed.
func (l *posLog) committed(ps []connector.GroupPosition) {
	l.mu.Lock()
	defer l.mu.Unlock()
	changed := false
	for _, p := range ps {
		k := posKey{p.Source, p.Partition}
		if p.Position > l.view[k] {
			l.view[k] = p.Position
			changed = true
		}
	}
	if changed {
		l.publish()
	}
}

// errFenced is wrapped by a commit the positions log fenced.
var errFenced = errors.New("fenced")
