package kafka

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/weir-etl/weir/internal/words"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/internal/kafkaclient"
	"github.com/weir-etl/weir/record"
)

// Exactly-once (exactly_once: true): each group is one Kafka transaction
// that writes the group's records and, to the positions log (positions.go),
// the positions they complete, so that a read_committed consumer sees every
// record once and a restarted sink knows which records it holds.
//
// A transactional producer can have one transaction open at a time, so
// that the wait for one group's commit overlaps with the next group, the
// sink keeps a small pool of producers (poolSize), each with its own
// transactional id (transactional_id with "-0", "-1", ... appended): the
// current group's and those of the sealed groups waiting for their Persist.
// A group's records are produced only once the previous group's are all
// acknowledged (its gate), so records keep the order they were written in
// within every output partition, as with one producer; the previous group's
// positions and its commit then go on while the next group's records flow.
//
// A group's Persist: its records acknowledged; one positions record per
// source partition produced to the positions log, in the transaction; the
// log read up to the group's first positions record (the fence: a commit
// of another writer ordered before it that already stored positions past
// this group's records fails this one, which the runtime then writes again,
// without what the positions cover); the transaction committed. A second
// process with the same transactional id fences the first at its Open
// (InitProducerID bumps the producer epoch, and the broker aborts the first
// one's open transaction and refuses its later commits); a process with
// another id that writes the same source partitions (a zombie that lost
// them while stopped) is fenced by the positions log.
//
// docs/kafka.md has the rules for transactional ids, and why the sink does
// not commit the source's consumer offsets in its transaction.

// poolSize is the number of transactional producers: the current group and
// the runtime's default batch.overlap (2) sealed groups.
const poolSize = 3

// Keeper is the Kafka sink with exactly_once: a connector.PositionKeeper
// and connector.Sealer. Build returns one for a configuration with
// exactly_once set.
type Keeper struct {
	name  string
	cfg   Config
	topic template
	key   []string
	log   *slog.Logger
	watch *ackWatch
	run   string // this run's writer id, in its positions records
	pipe  string // the positions' pipeline

	admin *kgo.Client // metadata, topic creation, the positions log
	pos   *posLog
	free  chan *txnProducer // producers not in use; capacity poolSize
	all   []*txnProducer
	// closed ends the groups' pumps at Close.
	closed    chan struct{}
	closeOnce sync.Once

	// The sink's goroutine only: the current group, and the last group
	// sealed, whose acknowledgements open the current one's gate.
	cur  *txnGroup
	prev *txnGroup

	// Crash points, for the exactly-once suite; nil otherwise.
	step atomic.Pointer[func(string)]

	records, txns, held, fenced atomic.Int64 // for Describe
	unconfirmed                 atomic.Int64 // commits reported that the log shows aborted
}

// txnProducer is one transactional client of the pool.
type txnProducer struct {
	id string
	cl *kgo.Client
	// fenced is set once the broker said another producer took its
	// transactional id over: it is never initialised again, since that
	// would fence the other process in turn (two processes sharing an id,
	// or this one stopped and replaced), and every later group fails.
	fenced atomic.Bool
}

// fencedErr reports whether err says another producer with the same
// transactional id fenced this one.
func fencedErr(err error) bool {
	return errors.Is(err, kerr.ProducerFenced) || errors.Is(err, kerr.InvalidProducerEpoch) || errors.Is(err, kerr.FencedInstanceID)
}

// explainFenced marks p fenced when err says so, and says what it means.
func (k *Keeper) explainFenced(p *txnProducer, err error) error {
	if fencedErr(err) && !p.fenced.Load() {
		p.fenced.Store(true)
		k.log.Error("another process took this sink's transactional id over: it writes nothing more", "transactional_id", p.id, "err", kafkaclient.Explain(err))
	}
	if fencedErr(err) {
		return fmt.Errorf("%w: another process took transactional_id %s over (two processes share it, or this one was stopped and replaced): this one writes nothing more; give every process its own transactional_id (docs/kafka.md)", kafkaclient.Explain(err), p.id)
	}
	return kafkaclient.Explain(err)
}

// txnGroup is one group: one transaction on one producer.
type txnGroup struct {
	k *Keeper
	p *txnProducer

	// gate is closed when the previous group's records are all
	// acknowledged (nil: no previous group). Until then the group's records
	// are held, and produced, in order, when it closes: by the group's
	// pump goroutine (see pump), or by its Persist if that comes first.
	gate <-chan struct{}
	// gmu guards held, open and sealed, and is held while the held records
	// are produced, so that a Write after the gate opened cannot produce
	// before them.
	gmu    sync.Mutex
	held   []*kgo.Record
	open   bool // the gate is open and held was produced
	sealed bool
	// pending counts the produces not yet answered, plus one until the
	// group is both sealed and open; whoever brings it to zero closes
	// acked. A discarded or aborted group closes acked too (gone, ended).
	pending atomic.Int64
	acked   chan struct{}
	gone    sync.Once
	ended   chan struct{}

	mu      sync.Mutex
	err     error
	cancels []context.CancelFunc

	gpos   []connector.GroupPosition
	firsts map[posKey]int64
	// Write's filter cache: the partition of the last record, its covered
	// position, and whether its first offset is noted.
	lastKey posKey
	lastPos connector.Position
	noted   bool
	cover   *map[posKey]connector.Position
	records int
}

// errNoProducer is the cause when no producer became free in time.
var errNoProducer = errors.New("no transactional producer became free within delivery_timeout")

// errCommitAborted is a Persist whose commit the client reported while the
// broker aborted the transaction: the group is written again.
var errCommitAborted = errors.New("the client reported the transaction committed, but its positions record is not visible to read_committed consumers: the broker aborted it; the group is written again")

func newKeeper(name string, cfg *Config) (*Keeper, error) {
	t, _ := parseTemplate(cfg.Topic)
	var id [6]byte
	rand.Read(id[:])
	k := &Keeper{name: name, cfg: *cfg, topic: t, run: time.Now().UTC().Format("20060102T150405") + "-" + hex.EncodeToString(id[:]),
		free: make(chan *txnProducer, poolSize), closed: make(chan struct{})}
	if k.cfg.TransactionalID == "" {
		k.cfg.TransactionalID = DefaultTransactionalID(name)
	}
	k.pipe = cfg.Pipeline
	if k.pipe == "" {
		k.pipe = cfg.Topic
	}
	if cfg.KeyField != "" {
		k.key = strings.Split(cfg.KeyField, ".")
	}
	k.setLogger(slog.Default().With("sink", name))
	return k, nil
}

// DefaultTransactionalID is the transactional_id a sink called name uses
// when none is set: weir-<sink>-<host name>, stable across restarts on one
// host and distinct between hosts.
func DefaultTransactionalID(name string) string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	return "weir-" + name + "-" + host
}

func (k *Keeper) setLogger(l *slog.Logger) {
	k.log = l
	k.watch = newAckWatch(k.name, k.cfg.Brokers, k.cfg.DeliveryTimeout, l)
}

func (k *Keeper) at(name string) {
	if f := k.step.Load(); f != nil && *f != nil {
		(*f)(name)
	}
}

func (k *Keeper) wrap(err error) error { return fmt.Errorf("kafka: sink %s: %w", k.name, err) }

// eosPartitioner sends the positions records to partition 0 of the
// positions log and the others as the at-least-once sink does.
type eosPartitioner struct {
	positions string
	data      kgo.Partitioner
}

func (p eosPartitioner) ForTopic(t string) kgo.TopicPartitioner {
	if t == p.positions {
		return kgo.ManualPartitioner().ForTopic(t)
	}
	return p.data.ForTopic(t)
}

// producerOpts are a transactional producer's options.
func (k *Keeper) producerOpts(id string) ([]kgo.Opt, error) {
	opts, err := k.cfg.Conn.Opts()
	if err != nil {
		return nil, err
	}
	codec, _ := compression(k.cfg.Compression)
	return append(opts,
		kgo.TransactionalID(id),
		kgo.TransactionTimeout(k.cfg.TransactionTimeout),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerBatchCompression(codec),
		kgo.MaxBufferedRecords(k.cfg.MaxBufferedRecords),
		kgo.ProducerBatchMaxBytes(int32(k.cfg.MaxMessageBytes)),
		kgo.RecordPartitioner(eosPartitioner{positions: k.cfg.PositionsTopic, data: kgo.UniformBytesPartitioner(64<<10, true, true, nil)}),
		kgo.WithHooks(k.watch),
	), nil
}

// newProducer connects a transactional producer and initialises its
// producer id, which fences any earlier producer with the same
// transactional id (a previous run of this process, or a zombie of it).
func (k *Keeper) newProducer(ctx context.Context, id string) (*txnProducer, error) {
	opts, err := k.producerOpts(id)
	if err != nil {
		return nil, err
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, k.wrap(err)
	}
	ictx, cancel := context.WithTimeout(ctx, k.cfg.DeliveryTimeout)
	defer cancel()
	if _, _, err := cl.ProducerID(ictx); err != nil {
		cl.Close()
		return nil, k.wrap(fmt.Errorf("initialising transactional_id %s: %w", id, kafkaclient.Explain(err)))
	}
	return &txnProducer{id: id, cl: cl}, nil
}

// Open connects, creates or checks the positions log and reads it, and
// initialises the transactional producers, fencing earlier ones with the
// same ids.
func (k *Keeper) Open(ctx context.Context) error {
	opts, err := k.cfg.Conn.Opts()
	if err != nil {
		return err
	}
	admin, err := kgo.NewClient(opts...)
	if err != nil {
		return k.wrap(err)
	}
	if err := kafkaclient.WaitForBrokers(ctx, admin, &k.cfg.Conn, "sink "+k.name, k.log); err != nil {
		admin.Close()
		return err
	}
	k.admin = admin
	k.pos = newPosLog(admin, k.cfg.PositionsTopic, k.pipe, k.name, k.cfg.TransactionTimeout+k.cfg.DeliveryTimeout)
	fail := func(err error) error {
		k.closeAll()
		return err
	}
	if err := k.pos.ensure(ctx); err != nil {
		return fail(k.wrap(err))
	}
	if err := k.pos.start(ctx); err != nil {
		return fail(k.wrap(err))
	}
	for i := range poolSize {
		p, err := k.newProducer(ctx, fmt.Sprintf("%s-%d", k.cfg.TransactionalID, i))
		if err != nil {
			return fail(err)
		}
		k.all = append(k.all, p)
		k.free <- p
	}
	return nil
}

func (k *Keeper) closeAll() {
	k.closeOnce.Do(func() { close(k.closed) })
	for _, p := range k.all {
		p.cl.Close()
	}
	k.all = nil
	if k.admin != nil {
		k.admin.Close()
		k.admin = nil
	}
}

// group returns the current group, starting one (a free producer, a
// transaction begun) if there is none.
func (k *Keeper) group(ctx context.Context) (*txnGroup, error) {
	if k.cur != nil {
		return k.cur, nil
	}
	var p *txnProducer
	t := time.NewTimer(k.cfg.DeliveryTimeout)
	defer t.Stop()
	select {
	case p = <-k.free:
	case <-t.C:
		return nil, k.wrap(errNoProducer)
	case <-ctx.Done():
		return nil, k.wrap(ctx.Err())
	}
	if p.fenced.Load() {
		k.free <- p
		return nil, k.wrap(fmt.Errorf("transactional_id %s was taken over by another process (fenced): this one writes nothing more; give every process its own transactional_id (docs/kafka.md)", p.id))
	}
	if err := p.cl.BeginTransaction(); err != nil {
		// A producer in a fatal state: replace it.
		np, nerr := k.replace(ctx, p)
		if nerr != nil {
			return nil, nerr
		}
		p = np
		if err := p.cl.BeginTransaction(); err != nil {
			k.free <- p
			return nil, k.wrap(err)
		}
	}
	g := &txnGroup{k: k, p: p, acked: make(chan struct{}), ended: make(chan struct{})}
	g.pending.Store(1)
	if k.prev != nil {
		g.gate = k.prev.acked
		go g.pump()
	} else {
		g.open = true
	}
	k.cur = g
	return g, nil
}

// replace closes a producer whose state is unknown or fatal and connects a
// new one with its transactional id.
func (k *Keeper) replace(ctx context.Context, p *txnProducer) (*txnProducer, error) {
	p.cl.Close()
	np, err := k.newProducer(ctx, p.id)
	if err != nil {
		// Keep the slot: the next group tries again.
		return nil, err
	}
	for i, q := range k.all {
		if q == p {
			k.all[i] = np
		}
	}
	return np, nil
}

// skip is Write's filter: a record whose position the log already covers
// is in the topic (another writer wrote it, or a commit whose answer was
// lost did) and is left out. It also notes each partition's first offset
// written, for the fence.
func (g *txnGroup) skip(r *record.Record) bool {
	o := &r.Origin
	if o.Source == "" {
		return false
	}
	if g.cover == nil || o.Source != g.lastKey.source || o.Partition != g.lastKey.partition {
		if g.cover == nil {
			g.cover = g.k.pos.cover.Load()
		}
		g.lastKey = posKey{o.Source, o.Partition}
		g.lastPos = (*g.cover)[g.lastKey]
		g.noted = false
	}
	if o.Offset < int64(g.lastPos) {
		g.k.held.Add(1)
		return true
	}
	if !g.noted {
		if g.firsts == nil {
			g.firsts = map[posKey]int64{}
		}
		if f, ok := g.firsts[g.lastKey]; !ok || o.Offset < f {
			g.firsts[g.lastKey] = o.Offset
		}
		g.noted = true
	}
	return false
}

// pump waits for the group's gate and produces what the group holds then:
// the records of a group written while the previous one waited for its
// acknowledgements flow as soon as those arrive, not at its Persist. It ends
// with the group (aborted, discarded, acknowledged) or the sink's Close.
//
// It is a goroutine of its own, rather than work done in the previous
// group's last promise, because producing can wait for buffer space, and a
// promise must not block the client's other promises.
func (g *txnGroup) pump() {
	select {
	case <-g.gate:
		g.openGate()
	case <-g.ended:
	case <-g.k.closed:
	}
}

// openGate marks the gate open and produces the held records, once.
func (g *txnGroup) openGate() {
	g.gmu.Lock()
	defer g.gmu.Unlock()
	if g.open {
		return
	}
	g.open = true
	g.produce(g.held)
	g.held = nil
	if g.sealed {
		g.release()
	}
}

func (g *txnGroup) finish(_ *kgo.Record, err error) {
	if err != nil {
		g.fail(produceError(err))
	}
	g.release()
}

func (g *txnGroup) release() {
	if g.pending.Add(-1) == 0 {
		g.close()
	}
}

// close closes acked once, and releases the produces' contexts.
func (g *txnGroup) close() {
	g.gone.Do(func() {
		close(g.acked)
		close(g.ended)
		g.mu.Lock()
		cs := g.cancels
		g.cancels = nil
		g.mu.Unlock()
		for _, c := range cs {
			c()
		}
	})
}

func (g *txnGroup) fail(err error) {
	g.mu.Lock()
	if g.err == nil {
		g.err = err
	}
	g.mu.Unlock()
}

func (g *txnGroup) firstErr() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.err
}

// produce sends rs in the group's transaction.
func (g *txnGroup) produce(rs []*kgo.Record) {
	if len(rs) == 0 {
		return
	}
	ctx, cancel := context.WithTimeoutCause(context.Background(), g.k.cfg.DeliveryTimeout, errDeliveryTimeout)
	g.mu.Lock()
	g.cancels = append(g.cancels, cancel)
	g.mu.Unlock()
	for _, r := range rs {
		g.pending.Add(1)
		g.p.cl.Produce(ctx, r, g.finish)
	}
}

// Write adds recs to the current group's transaction: produced at once if
// the previous group's records are acknowledged, held until then otherwise.
// Records the positions log already covers are left out. A record whose
// topic or key cannot be computed is rejected.
func (k *Keeper) Write(ctx context.Context, recs []record.Record) error {
	g, err := k.group(ctx)
	if err != nil {
		return err
	}
	if err := g.firstErr(); err != nil {
		return k.wrap(err)
	}
	var out []*kgo.Record
	for i := range recs {
		r := &recs[i]
		if g.skip(r) {
			continue
		}
		kr, err := message(k.name, &k.cfg, k.topic, k.key, r)
		if err != nil {
			if len(out) > 0 {
				k.send(g, out)
			}
			return &connector.RejectError{Index: i, Err: err}
		}
		out = append(out, kr)
	}
	k.send(g, out)
	return nil
}

// send produces rs, or holds them behind the gate.
func (k *Keeper) send(g *txnGroup, rs []*kgo.Record) {
	g.records += len(rs)
	g.gmu.Lock()
	defer g.gmu.Unlock()
	if !g.open {
		g.held = append(g.held, rs...)
		return
	}
	g.produce(rs)
}

// message builds the Kafka record for r.
// GroupPositions implements connector.PositionKeeper: the current group's
// positions, written in its transaction.
func (k *Keeper) GroupPositions(ps []connector.GroupPosition) {
	g, err := k.group(context.Background())
	if err != nil {
		// No producer: the Seal or Flush that follows fails the same way.
		return
	}
	g.gpos = append(g.gpos[:0], ps...)
}

// StoredPositions implements connector.PositionKeeper: the positions the
// log holds, read to its last stable offset (another writer's commits
// included).
func (k *Keeper) StoredPositions(ctx context.Context, source string, partitions []string) (map[string]connector.Position, error) {
	out, err := k.pos.stored(ctx, source, partitions)
	if err != nil {
		return nil, k.wrap(err)
	}
	return out, nil
}

// Seal ends the current group without waiting for it and starts the next
// on another producer. A group that already failed is not sealed: Seal
// returns its error, and Abort discards it.
func (k *Keeper) Seal(ctx context.Context) (connector.SealedGroup, error) {
	g, err := k.group(ctx)
	if err != nil {
		return nil, err
	}
	if err := g.firstErr(); err != nil {
		return nil, k.wrap(err)
	}
	g.gmu.Lock()
	g.sealed = true
	if g.open {
		g.release() // nothing more to produce
	}
	g.gmu.Unlock()
	k.cur, k.prev = nil, g
	return &sealedTxn{g: g}, nil
}

// sealedTxn is a group Seal handed over; it shares the pool and the
// positions log with the sink, both safe for concurrent use.
type sealedTxn struct {
	g    *txnGroup
	done bool
}

// Persist waits for the group's records, writes its positions, checks the
// fence and commits the transaction; it returns nil only once the commit
// returned.
func (sg *sealedTxn) Persist(ctx context.Context) (err error) {
	g, k := sg.g, sg.g.k
	done := k.watch.start("acknowledgements")
	defer func() { done(err == nil) }()
	pctx, cancel := context.WithTimeoutCause(ctx, k.cfg.DeliveryTimeout, errDeliveryTimeout)
	defer cancel()
	if g.gate != nil {
		select {
		case <-g.gate:
		case <-pctx.Done():
			return k.wrap(fmt.Errorf("waiting for the previous group: %w", context.Cause(pctx)))
		}
	}
	g.openGate() // if its pump has not yet
	if err := sg.unsafeSplitTransaction(pctx); err != nil {
		return err
	}
	// The positions go with the records: one wait for the acknowledgements
	// of both.
	positions := sg.producePositions(pctx)
	if err := g.p.cl.Flush(pctx); err != nil {
		return k.wrap(fmt.Errorf("waiting for acknowledgements: %w", context.Cause(pctx)))
	}
	if err := g.firstErr(); err != nil {
		return k.wrap(k.explainFenced(g.p, err))
	}
	first, err := positions()
	if err != nil {
		return k.wrap(fmt.Errorf("writing the positions: %w", k.explainFenced(g.p, err)))
	}
	k.at("acknowledged")
	if first >= 0 {
		if err := k.pos.fence(pctx, first, g.firsts); err != nil {
			if errors.Is(err, errFenced) {
				k.fenced.Add(1)
			}
			return k.wrap(err)
		}
		k.at("fence-checked")
	}
	if err := g.p.cl.EndTransaction(pctx, kgo.TryCommit); err != nil {
		return k.wrap(fmt.Errorf("committing the transaction: %w", k.explainFenced(g.p, err)))
	}
	if first >= 0 {
		ok, err := k.pos.confirm(pctx, first)
		if err != nil {
			return k.wrap(fmt.Errorf("confirming the commit: %w", err))
		}
		if !ok {
			k.unconfirmed.Add(1)
			k.log.Warn("a transaction the client reported committed was aborted by the broker; the group is written again", "transactional_id", g.p.id, "positions_offset", first)
			return k.wrap(errCommitAborted)
		}
	}
	k.at("committed")
	k.pos.committed(g.gpos)
	k.records.Add(int64(g.records))
	k.txns.Add(1)
	sg.done = true
	k.free <- g.p
	return nil
}

// producePositions produces one positions record per source partition of
// the group in its transaction, and returns a function that waits for them
// and returns the offset of the first (-1 for none: records without a
// source have no positions).
func (sg *sealedTxn) producePositions(ctx context.Context) func() (int64, error) {
	g, k := sg.g, sg.g.k
	first := int64(-1)
	var mu sync.Mutex
	var perr error
	var wg sync.WaitGroup
	for _, p := range g.gpos {
		v, _ := json.Marshal(posValue{Position: p.Position, Writer: k.run, TxnID: g.p.id})
		r := &kgo.Record{Topic: k.cfg.PositionsTopic, Partition: 0, Key: posRecordKey(k.pipe, k.name, posKey{p.Source, p.Partition}), Value: v}
		wg.Add(1)
		g.p.cl.Produce(ctx, r, func(r *kgo.Record, err error) {
			defer wg.Done()
			mu.Lock()
			defer mu.Unlock()
			if err != nil && perr == nil {
				perr = kafkaclient.Explain(err)
			}
			if err == nil && (first < 0 || r.Offset < first) {
				first = r.Offset
			}
		})
	}
	return func() (int64, error) {
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		return first, perr
	}
}

// Discard aborts the group's transaction after a failed Persist: nothing of
// it becomes visible to read_committed consumers.
func (sg *sealedTxn) Discard(ctx context.Context) error {
	if sg.done {
		return nil
	}
	sg.done = true
	return sg.g.abort(ctx)
}

// abort ends the group's transaction with an abort and gives its producer
// back, replacing it if the abort failed (its state is then unknown).
func (g *txnGroup) abort(ctx context.Context) error {
	k := g.k
	g.gmu.Lock()
	g.held, g.open = nil, true // nothing more is produced
	g.gmu.Unlock()
	actx, cancel := context.WithTimeoutCause(ctx, k.cfg.DeliveryTimeout, errDeliveryTimeout)
	defer cancel()
	err := g.p.cl.AbortBufferedRecords(actx)
	if err == nil {
		err = g.p.cl.EndTransaction(actx, kgo.TryAbort)
	}
	g.close()
	p := g.p
	if err != nil && !p.fenced.Load() && !fencedErr(err) {
		np, rerr := k.replace(ctx, p)
		if rerr != nil {
			// The slot's producer is closed; a later group replaces it.
			k.free <- p
			return k.wrap(fmt.Errorf("aborting the transaction: %v; replacing the producer: %w", err, rerr))
		}
		p = np
	}
	k.free <- p
	return nil
}

// Flush seals the current group and persists it at once.
func (k *Keeper) Flush(ctx context.Context) error {
	sg, err := k.Seal(ctx)
	if err != nil {
		return err
	}
	if err := sg.Persist(ctx); err != nil {
		if derr := sg.Discard(ctx); derr != nil {
			k.log.Warn("aborting a failed transaction", "err", derr)
		}
		return err
	}
	return nil
}

// Abort aborts the current group's transaction.
func (k *Keeper) Abort(ctx context.Context) error {
	g := k.cur
	if g == nil {
		return nil
	}
	k.cur = nil
	return g.abort(ctx)
}

// Close closes the producers without committing: an open transaction is
// aborted by the broker (or by the next producer with its id).
func (k *Keeper) Close(ctx context.Context) error {
	if k.cur != nil {
		actx, cancel := context.WithTimeout(ctx, 5*time.Second)
		k.cur.abort(actx)
		cancel()
		k.cur = nil
	}
	k.closeAll()
	return nil
}

// Describe says where the records went, for the run summary.
func (k *Keeper) Describe() string {
	d := fmt.Sprintf("kafka %s: %s in %s (exactly once, positions in %s)", k.cfg.Topic, words.Plural(k.records.Load(), "record"), words.Plural(k.txns.Load(), "transaction"), k.cfg.PositionsTopic)
	if n := k.held.Load(); n > 0 {
		d += fmt.Sprintf(", %s already held and left out", words.Plural(n, "record"))
	}
	if n := k.fenced.Load(); n > 0 {
		d += fmt.Sprintf(", %d commits fenced by another writer", n)
	}
	if n := k.unconfirmed.Load(); n > 0 {
		d += fmt.Sprintf(", %d commits the broker aborted written again", n)
	}
	return d
}

// Build returns the sink for cfg: a *Keeper with exactly_once, a *Sink
// otherwise. It is what the registry builds.
func Build(name string, cfg *Config) (connector.Sink, error) {
	if !cfg.ExactlyOnce {
		return New(name, cfg)
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("kafka: sink %s: %w", name, err)
	}
	return newKeeper(name, cfg)
}

var (
	_ connector.PositionKeeper = (*Keeper)(nil)
	_ connector.Sealer         = (*Keeper)(nil)
	_ connector.Describer      = (*Keeper)(nil)
)
