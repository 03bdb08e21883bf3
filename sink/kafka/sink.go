// Package kafka is weir's Kafka sink: an idempotent producer whose group of
// records is durable when every broker acknowledgement (acks=all) is in.
//
// Write hands records to the client asynchronously; each produce's promise
// keeps the first error of the group it was produced in and counts the
// group's outstanding produces down. Flush waits until every outstanding
// produce is acknowledged and only then reports the group durable; Abort
// waits the same way and forgets the group's error. The sink is also a
// connector.Sealer: Seal starts a new group without waiting, and the sealed
// group's Persist waits for that group's own produces only, so the wait for
// acknowledgements overlaps with writing the next group. A late promise only
// ever touches its own group, so it cannot fail a later one.
package kafka

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/internal/kafkaclient"
	"github.com/weir-etl/weir/record"
)

// The connection settings are shared with the Kafka source; these aliases let
// a program that configures the sink in Go name them.
type (
	// Conn is how the sink reaches its cluster: brokers, TLS, SASL and the
	// wait for a broker at start.
	Conn = kafkaclient.Conn
	// TLS configures encryption to the brokers.
	TLS = kafkaclient.TLS
	// SASL configures authentication to the brokers.
	SASL = kafkaclient.SASL
	// Secret is a string that fmt and slog print redacted.
	Secret = kafkaclient.Secret
)

// Config is the sink's configuration, the options under a `type: kafka` sink.
type Config struct {
	Conn `yaml:",inline"`
	// Topic is the destination: a name, or a template whose {{field}} parts
	// are replaced by the record's fields ("events-{{region}}", dotted paths
	// reach nested fields).
	Topic string `yaml:"topic" doc:"The destination topic: a name, or a template whose {{field}} parts are replaced by the record's fields (\"events-{{region}}\"; dotted paths reach nested fields)."`
	// KeyField names the field whose value becomes the message key; empty
	// keeps the record's own key.
	KeyField string `yaml:"key_field" doc:"The field whose value becomes the message key (a dotted path reaches a nested field); empty keeps the record's own key."`
	// Headers copies the record's headers onto the message.
	Headers bool `yaml:"headers" doc:"Copies the record's headers onto the message."`
	// Compression is "none", "gzip", "snappy", "lz4" or "zstd".
	Compression string `yaml:"compression" doc:"Compression of produced batches: \"none\", \"gzip\", \"snappy\", \"lz4\" or \"zstd\"."`
	// DeliveryTimeout bounds how long a group may wait for the
	// acknowledgements of its records, retries included, before it fails
	// (and is written again). It is measured by the sink from the start of
	// the wait, not from the records' timestamps: a record keeps its source
	// timestamp, which may be far in the past.
	DeliveryTimeout time.Duration `yaml:"delivery_timeout" doc:"How long a group waits for the brokers to acknowledge its records, retries included, before it fails and is written again; measured from the start of the wait, not from the records' timestamps."`
	// MaxBufferedRecords bounds the records waiting for acknowledgement; Write
	// blocks beyond it.
	MaxBufferedRecords int `yaml:"max_buffered_records" doc:"Most records waiting for acknowledgement; writing more waits for buffer space, for up to delivery_timeout."`
	// MaxMessageBytes is the largest record batch the producer sends; a
	// record larger than that on its own can never be written.
	MaxMessageBytes int `yaml:"max_message_bytes" doc:"The largest batch of records the producer sends to one partition (the Kafka producer's batch size limit). A record whose key, value and headers alone are larger is rejected at once, and the failure policy decides (dead_letter sends it to the dead-letter sink) instead of failing its group again and again; raise it together with the topic's max.message.bytes."`

	// ExactlyOnce writes each group in one transaction with the source
	// positions it completes (see eos.go).
	ExactlyOnce bool `yaml:"exactly_once" doc:"Each group is one Kafka transaction that writes its records and, to positions_topic, the source positions they complete: after a crash, a rewind or a rebalance no record is written twice, and a consumer with isolation.level=read_committed sees each record once. Needs transactional_id to be unique per process and stable across its restarts (docs/kafka.md)."`
	// TransactionalID is the base of the producers' transactional ids.
	TransactionalID string `yaml:"transactional_id" doc:"With exactly_once, the base of the producers' transactional ids (the sink appends -0, -1, -2): unique per process of the pipeline and stable across its restarts, so that a restarted process fences its predecessor; default weir-<sink>-<host name>. Two processes with one id fence each other."`
	// PositionsTopic is the compacted one-partition topic of the positions.
	PositionsTopic string `yaml:"positions_topic" doc:"With exactly_once, the topic holding the positions (compacted, exactly one partition; created when missing). Every process writing the sink's output must use the same one."`
	// Pipeline names the positions' owner in PositionsTopic; default the
	// topic option.
	Pipeline string `yaml:"pipeline" doc:"With exactly_once, the name the positions are kept under in positions_topic, with the sink's name; default the topic option. Renaming the sink or this voids exactly-once (records are written again)."`
	// TransactionTimeout is the producers' transaction timeout.
	TransactionTimeout time.Duration `yaml:"transaction_timeout" doc:"With exactly_once, how long the broker keeps a transaction open before aborting it: a process that dies while committing holds read_committed consumers and the other writers' commits back for at most this long (a restart with the same transactional_id ends it at once). At most the broker's transaction.max.timeout.ms."`
}

// DefaultMaxMessageBytes is max_message_bytes' default: the Kafka
// producers' own default batch limit (franz-go's and Java's 1,000,012
// bytes), under the brokers' default message.max.bytes.
const DefaultMaxMessageBytes = 1000012

// DefaultPositionsTopic is positions_topic's default.
const DefaultPositionsTopic = "weir-positions"

// NewConfig returns a Config with the defaults filled in.
func NewConfig() *Config {
	return &Config{
		Conn:               kafkaclient.DefaultConn(),
		Headers:            true,
		Compression:        "snappy",
		DeliveryTimeout:    2 * time.Minute,
		MaxBufferedRecords: 100000,
		MaxMessageBytes:    DefaultMaxMessageBytes,
		PositionsTopic:     DefaultPositionsTopic,
		TransactionTimeout: time.Minute,
	}
}

// Validate reports every problem with c at once, as *connector.FieldError
// values joined with errors.Join, each naming its option and the fix.
func (c *Config) Validate() error {
	errs := []error{c.Conn.Validate()}
	if c.Topic == "" {
		errs = append(errs, connector.Fieldf("topic", `is empty: name the destination topic, or a template such as "events-{{region}}"`))
	} else if _, err := parseTemplate(c.Topic); err != nil {
		errs = append(errs, connector.Fieldf("topic", "%v", err))
	}
	if _, ok := compression(c.Compression); !ok {
		errs = append(errs, connector.Fieldf("compression", `%q is not valid: use "none", "gzip", "snappy", "lz4" or "zstd"`, c.Compression))
	}
	if c.DeliveryTimeout < time.Second {
		errs = append(errs, connector.Fieldf("delivery_timeout", "%v is too short: use at least 1s (the default is 2m)", c.DeliveryTimeout))
	}
	if c.MaxMessageBytes < 1024 || c.MaxMessageBytes > 1<<30 {
		errs = append(errs, connector.Fieldf("max_message_bytes", "is %d: it must be between 1024 and 1073741824 (the default is %d; keep it at most the topic's max.message.bytes)", c.MaxMessageBytes, DefaultMaxMessageBytes))
	}
	if c.MaxBufferedRecords <= 0 {
		errs = append(errs, connector.Fieldf("max_buffered_records", "is %d: it must be positive (the default is 100000)", c.MaxBufferedRecords))
	}
	if c.ExactlyOnce {
		if !validTopicName(c.PositionsTopic) {
			errs = append(errs, connector.Fieldf("positions_topic", "%q is not a topic name: use 1 to 249 letters, digits, '.', '_' or '-' (the default is %s)", c.PositionsTopic, DefaultPositionsTopic))
		} else if c.PositionsTopic == c.Topic {
			errs = append(errs, connector.Fieldf("positions_topic", "is the output topic %s: name a topic of its own", c.Topic))
		}
		if c.TransactionTimeout < time.Second {
			errs = append(errs, connector.Fieldf("transaction_timeout", "%v is too short: use at least 1s (the default is 1m)", c.TransactionTimeout))
		}
		if strings.ContainsAny(c.TransactionalID, " \t\n") {
			errs = append(errs, connector.Fieldf("transactional_id", "%q holds white space: use letters, digits and -", c.TransactionalID))
		}
	}
	return errors.Join(errs...)
}

// validTopicName reports whether t is a legal Kafka topic name.
func validTopicName(t string) bool {
	if t == "" || len(t) > 249 || t == "." || t == ".." {
		return false
	}
	for _, c := range t {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

func compression(name string) (kgo.CompressionCodec, bool) {
	switch name {
	case "none", "":
		return kgo.NoCompression(), true
	case "gzip":
		return kgo.GzipCompression(), true
	case "snappy":
		return kgo.SnappyCompression(), true
	case "lz4":
		return kgo.Lz4Compression(), true
	case "zstd":
		return kgo.ZstdCompression(), true
	}
	return kgo.CompressionCodec{}, false
}

// template is a topic name with {{field}} parts.
type template struct {
	lits   []string // len(fields)+1 literal parts around the fields
	fields [][]string
}

func parseTemplate(topic string) (template, error) {
	var t template
	s := topic
	for {
		i := strings.Index(s, "{{")
		if i < 0 {
			if strings.Contains(s, "}}") {
				return t, fmt.Errorf("%q has a }} without {{", topic)
			}
			t.lits = append(t.lits, s)
			return t, nil
		}
		j := strings.Index(s[i:], "}}")
		if j < 0 {
			return t, fmt.Errorf("%q has a {{ without }}", topic)
		}
		name := strings.TrimSpace(s[i+2 : i+j])
		if name == "" {
			return t, fmt.Errorf("%q has an empty {{}}: name a field", topic)
		}
		t.lits = append(t.lits, s[:i])
		t.fields = append(t.fields, strings.Split(name, "."))
		s = s[i+j+2:]
	}
}

// render returns the topic for r; a missing or non-scalar field is an error.
func (t template) render(r *record.Record) (string, error) {
	if len(t.fields) == 0 {
		return t.lits[0], nil
	}
	var sb strings.Builder
	for i, f := range t.fields {
		sb.WriteString(t.lits[i])
		v, err := field(r, f)
		if err != nil {
			return "", err
		}
		sb.WriteString(v)
	}
	sb.WriteString(t.lits[len(t.lits)-1])
	return sb.String(), nil
}

// field returns the scalar at path in r's value as text: a string's text, a
// number's literal as the record wrote it (an id above 2^53 stays exact,
// 1.50 stays 1.50), true or false. It decodes nothing but the members on the
// path.
func field(r *record.Record, path []string) (string, error) {
	var v [1]record.Value
	var found [1]bool
	if err := r.Lookup(path[:1], v[:], found[:]); err != nil {
		return "", err
	}
	cur, ok := v[0], found[0]
	for i := 1; ok && i < len(path); i++ {
		if cur.Kind() != record.Object {
			return "", fmt.Errorf("field %s: not an object at %q", strings.Join(path, "."), path[i])
		}
		cur, ok = cur.Get(path[i])
	}
	if !ok {
		return "", fmt.Errorf("field %s is missing", strings.Join(path, "."))
	}
	switch cur.Kind() {
	case record.String:
		return cur.Text(), nil
	case record.Int, record.Float, record.Number:
		return cur.Literal(), nil
	case record.Bool:
		return strconv.FormatBool(cur.Bool()), nil
	case record.Null:
		return "", fmt.Errorf("field %s is null, not a string, number or boolean", strings.Join(path, "."))
	}
	return "", fmt.Errorf("field %s is %s, not a string, number or boolean", strings.Join(path, "."), cur.Kind())
}

// Sink is the Kafka sink. Create it with New.
type Sink struct {
	name  string
	cfg   Config
	topic template
	key   []string
	cl    *kgo.Client
	log   *slog.Logger
	watch *ackWatch

	// cur is the current group. Promises run on the client's goroutines and
	// record errors in the group they were produced in, so a late promise of
	// an aborted or sealed group never fails the next one.
	mu  sync.Mutex
	cur *group
}

// group is one group of records: its first produce error and its count of
// outstanding produces.
type group struct {
	// pending counts the produces not yet answered, plus one while the group
	// is open (not sealed). Whoever brings it to zero closes done, which
	// happens only once: a group takes no produces after it is sealed.
	pending atomic.Int64
	done    chan struct{}

	mu      sync.Mutex
	err     error
	cancels []context.CancelFunc // of the produces' contexts, one per Write
}

func newGroup() *group {
	g := &group{done: make(chan struct{})}
	g.pending.Store(1)
	return g
}

// add counts a produce about to start.
func (g *group) add() { g.pending.Add(1) }

// finish is a produce's promise: it keeps the first error and counts the
// produce as answered.
func (g *group) finish(_ *kgo.Record, err error) {
	if err != nil {
		g.fail(produceError(err))
	}
	g.release()
}

// seal marks the group as taking no more produces.
func (g *group) seal() { g.release() }

func (g *group) release() {
	if g.pending.Add(-1) == 0 {
		close(g.done)
		g.end()
	}
}

// produceCtx returns the context for the produces of one Write: it ends
// DeliveryTimeout from now, so that a record still buffered by then, or still
// waiting for buffer space, fails instead of waiting for a broker forever.
// The client's own delivery timeout cannot do this (see Open).
func (g *group) produceCtx(timeout time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeoutCause(context.Background(), timeout, errDeliveryTimeout)
	g.mu.Lock()
	g.cancels = append(g.cancels, cancel)
	g.mu.Unlock()
	return ctx, cancel
}

// end releases the produces' contexts once the group needs them no more: all
// its produces are answered, or it was flushed or aborted.
func (g *group) end() {
	g.mu.Lock()
	cs := g.cancels
	g.cancels = nil
	g.mu.Unlock()
	for _, c := range cs {
		c()
	}
}

func (g *group) fail(err error) {
	g.mu.Lock()
	if g.err == nil {
		g.err = err
	}
	g.mu.Unlock()
}

func (g *group) firstErr() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.err
}

// New returns a sink for cfg, which must be valid.
//
// A sink is given no logger by the runtime; it logs to slog.Default(), with
// the attribute sink=name.
//
// A configuration with exactly_once is refused: Build returns that sink.
func New(name string, cfg *Config) (*Sink, error) {
	if cfg.ExactlyOnce {
		return nil, fmt.Errorf("kafka: sink %s: %w", name, connector.Fieldf("exactly_once", "is set: build the sink with kafka.Build, which returns the exactly-once sink (a connector.PositionKeeper)"))
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("kafka: sink %s: %w", name, err)
	}
	t, _ := parseTemplate(cfg.Topic)
	s := &Sink{name: name, cfg: *cfg, topic: t, cur: newGroup()}
	s.setLogger(slog.Default().With("sink", name))
	if cfg.KeyField != "" {
		s.key = strings.Split(cfg.KeyField, ".")
	}
	return s, nil
}

func (s *Sink) setLogger(l *slog.Logger) {
	s.log = l
	s.watch = newAckWatch(s.name, s.cfg.Brokers, s.cfg.DeliveryTimeout, l)
}

// Open connects the producer.
//
// When no broker answers, Open waits and retries with backoff, logging every
// attempt, for up to connect_timeout, and then fails with an error that says
// so; bad credentials or certificates fail at once.
func (s *Sink) Open(ctx context.Context) error {
	opts, err := s.cfg.Conn.Opts()
	if err != nil {
		return err
	}
	codec, _ := compression(s.cfg.Compression)
	opts = append(opts,
		// acks=all with the client's default idempotent producer: retries
		// neither duplicate nor reorder records within a partition. The
		// sink does not disable idempotency anywhere; it depends on it.
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerBatchCompression(codec),
		// No kgo.RecordDeliveryTimeout: the client measures it from each
		// record's timestamp, and a record keeps its source's (replaying a
		// day-old topic would time every record out at once). The sink
		// bounds the wait for a group itself (DeliveryTimeout).
		kgo.MaxBufferedRecords(s.cfg.MaxBufferedRecords),
		kgo.ProducerBatchMaxBytes(int32(s.cfg.MaxMessageBytes)),
		// Records without a key spread over partitions; keyed ones hash.
		kgo.RecordPartitioner(kgo.UniformBytesPartitioner(64<<10, true, true, nil)),
		// Broker failures, for the warning of a long wait.
		kgo.WithHooks(s.watch),
	)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return fmt.Errorf("kafka: sink %s: %w", s.name, err)
	}
	if err := kafkaclient.WaitForBrokers(ctx, cl, &s.cfg.Conn, "sink "+s.name, s.log); err != nil {
		cl.Close()
		return err
	}
	s.cl = cl
	return nil
}

// Write produces recs asynchronously into the current group. A record whose
// topic or key cannot be computed is rejected; records before it were produced.
func (s *Sink) Write(ctx context.Context, recs []record.Record) error {
	s.mu.Lock()
	g := s.cur
	s.mu.Unlock()
	if err := g.firstErr(); err != nil {
		// The group already failed: fail fast, Abort follows.
		return fmt.Errorf("kafka: sink %s: %w", s.name, err)
	}
	promise := g.finish
	pctx, cancel := g.produceCtx(s.cfg.DeliveryTimeout)
	// While this call runs, its ctx can also stop a Produce that waits for
	// buffer space (a shutdown past its deadline), failing this call's
	// records; once it returned, their fate is Flush's or Persist's.
	defer context.AfterFunc(ctx, cancel)()
	// Buffer space frees as acknowledgements arrive, or as records fail:
	// a Write that returns says nothing about the brokers' health.
	done := s.watch.start("buffer space (max_buffered_records)")
	defer done(false)
	for i := range recs {
		kr, err := message(s.name, &s.cfg, s.topic, s.key, &recs[i])
		if err != nil {
			return &connector.RejectError{Index: i, Err: err}
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		g.add()
		s.cl.Produce(pctx, kr, promise)
	}
	return nil
}

// Flush returns once every record produced so far is acknowledged by all
// in-sync replicas, with the group's first error if any failed, and starts a
// new group. It gives up after DeliveryTimeout.
func (s *Sink) Flush(ctx context.Context) (err error) {
	done := s.watch.start("acknowledgements")
	defer func() { done(err == nil) }()
	if err := s.flushAll(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	g := s.cur
	s.mu.Unlock()
	if err := g.firstErr(); err != nil {
		return fmt.Errorf("kafka: sink %s: %w", s.name, err)
	}
	s.startGroup()
	g.end()
	return nil
}

// Abort waits for the outstanding produces of the failed group (and of any
// sealed group still waiting) and forgets its error. Its records may or may
// not be in Kafka: at-least-once, they are written again.
//
// If they are not acknowledged within DeliveryTimeout (a broker is down, say),
// Abort fails every record the client still buffers, this group's and any
// sealed group's, so that nothing of it is retried behind the runtime's back:
// those groups fail and are written again. The client fails a record only
// once no request holding it is in flight, and with a broker that does not
// answer that can take long: Abort waits for it up to DeliveryTimeout again,
// then returns an error and leaves the rest to the client (records it still
// delivers belong to groups that already failed, and are written again).
func (s *Sink) Abort(ctx context.Context) error {
	done := s.watch.start("acknowledgements of a failed group")
	defer done(false)
	err := s.flushAll(ctx)
	if err != nil && ctx.Err() == nil {
		actx, cancel := context.WithTimeoutCause(ctx, s.cfg.DeliveryTimeout, errDeliveryTimeout)
		if aerr := s.cl.AbortBufferedRecords(actx); aerr != nil {
			if cause := context.Cause(actx); cause != nil {
				aerr = cause
			}
			err = fmt.Errorf("failing the records still buffered: %w", aerr)
		} else {
			err = nil
		}
		cancel()
	}
	s.mu.Lock()
	g := s.cur
	s.mu.Unlock()
	s.startGroup()
	g.end()
	if err != nil {
		return fmt.Errorf("kafka: sink %s: abort: %w", s.name, err)
	}
	return nil
}

// flushAll waits, up to DeliveryTimeout, until every record produced so far
// is acknowledged.
func (s *Sink) flushAll(ctx context.Context) error {
	fctx, cancel := context.WithTimeoutCause(ctx, s.cfg.DeliveryTimeout, errDeliveryTimeout)
	defer cancel()
	if err := s.cl.Flush(fctx); err != nil {
		return fmt.Errorf("kafka: sink %s: waiting for acknowledgements: %w", s.name, context.Cause(fctx))
	}
	return nil
}

// errDeliveryTimeout is the cause of a wait that outlived DeliveryTimeout.
var errDeliveryTimeout = errors.New("not acknowledged within delivery_timeout")

// startGroup makes a new group the current one.
func (s *Sink) startGroup() {
	s.mu.Lock()
	s.cur = newGroup()
	s.mu.Unlock()
}

// Seal ends the current group without waiting for its acknowledgements and
// starts a new one. A group that already failed is not sealed: Seal returns
// its error, and Abort discards it.
func (s *Sink) Seal(context.Context) (connector.SealedGroup, error) {
	s.mu.Lock()
	g := s.cur
	s.mu.Unlock()
	if err := g.firstErr(); err != nil {
		return nil, fmt.Errorf("kafka: sink %s: %w", s.name, err)
	}
	s.startGroup()
	g.seal()
	return &sealed{name: s.name, g: g, timeout: s.cfg.DeliveryTimeout, watch: s.watch}, nil
}

// sealed is a group Seal handed over. It shares only the group with the
// sink, and the group is safe for concurrent use.
type sealed struct {
	name    string
	g       *group
	timeout time.Duration
	watch   *ackWatch
}

// Persist waits until every record of the group is acknowledged by all
// in-sync replicas, or DeliveryTimeout passed, or ctx is done, and returns the
// group's first error. Records of later groups are not waited for.
func (sg *sealed) Persist(ctx context.Context) (err error) {
	done := sg.watch.start("acknowledgements")
	defer func() { done(err == nil) }()
	t := time.NewTimer(sg.timeout)
	defer t.Stop()
	select {
	case <-sg.g.done:
	case <-t.C:
		return fmt.Errorf("kafka: sink %s: waiting for acknowledgements: %w", sg.name, errDeliveryTimeout)
	case <-ctx.Done():
		return fmt.Errorf("kafka: sink %s: waiting for acknowledgements: %w", sg.name, ctx.Err())
	}
	if err := sg.g.firstErr(); err != nil {
		return fmt.Errorf("kafka: sink %s: %w", sg.name, err)
	}
	return nil
}

// Discard has nothing to remove: a produced record cannot be taken back, so
// the group's records may or may not be in Kafka. At-least-once, they are
// written again. Produces still outstanding finish on their own and touch
// only this group.
func (sg *sealed) Discard(context.Context) error { return nil }

// Close closes the producer without flushing; the runtime flushes first if it
// wants to.
func (s *Sink) Close(context.Context) error {
	if s.cl != nil {
		s.cl.Close()
	}
	return nil
}

var _ connector.Sealer = (*Sink)(nil)

func init() {
	connector.RegisterSink(connector.SinkDef[Config]{
		Name:   "kafka",
		Doc:    "produces to Kafka with an idempotent, acks=all producer; exactly once with exactly_once: true (transactions, read_committed consumers)",
		Config: NewConfig,
		Build:  Build,
	})
}
