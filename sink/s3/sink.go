// Package s3 is weir's S3 sink (`type: s3`): it writes records as NDJSON,
// lines (gzip or zstd compressed, or not) or parquet objects under a prefix
// of a bucket on any S3-compatible server, exactly once.
//
// How (docs/s3.md has the whole argument):
//
//   - An object holds the records of one source partition, and its key is a
//     function of that partition and the partition's group sequence number
//     (the count of its committed groups), never of time: a replay after a
//     crash writes the same keys.
//   - An object is a multipart upload while its group is written: invisible
//     to readers, its parts uploaded as they fill. The group is committed per
//     partition by one PUT of the partition's position object
//     (PREFIX_weir/positions/HASH.json): the positions the group reaches and
//     the uploads that hold its records. Only then are the uploads completed,
//     and the objects appear.
//   - Open completes the uploads a position object names (a crash between
//     the commit and the completions) and aborts every other upload of the
//     sink under the prefix (a crash before the commit): nothing is left
//     half-written or billing. A reader that lists the prefix, _weir/ aside,
//     sees every record once.
//   - The sink is a connector.PositionKeeper: StoredPositions reads the
//     position objects back, so the runtime never hands it a record it
//     holds. Position objects are written with If-Match (If-None-Match for
//     the first), so a second writer of a partition fails instead of
//     overwriting them.
//
// The sink is a connector.Sealer: Seal closes the group's encoders; Persist
// uploads the last parts, commits and completes, on the runtime's persister
// goroutine, while the next group is written.
package s3

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/internal/fileformat"
	"github.com/weir-etl/weir/internal/pathtemplate"
	"github.com/weir-etl/weir/internal/s3client"
	"github.com/weir-etl/weir/record"
)

func init() {
	connector.RegisterSink(connector.SinkDef[Config]{
		Name:   "s3",
		Doc:    "writes NDJSON (gzip, zstd) or parquet objects to an S3 bucket, exactly once: positions committed with each group, objects visible only once committed",
		Config: NewConfig,
		Build:  func(name string, c *Config) (connector.Sink, error) { return New(name, c) },
	})
}

// Sink is the S3 sink. Build it with New. Like every sink it is used from
// one goroutine, and its sealed groups from the runtime's persister.
type Sink struct {
	name   string
	cfg    Config
	pfx    string // cfg.prefix()
	tmpl   pathtemplate.Template
	ptime  pathtemplate.Time
	fixed  *fileformat.Schema // parquet schema from the configuration, or nil
	ext    string
	writer string // this run's id, in the position objects it writes (for people)
	log    *slog.Logger
	store  store // the bucket: S3, or a fake in unit tests

	// step, nil but in the exactly-once suite's tests, is called at each
	// step of a commit after which a crash leaves the bucket in another
	// state; with it set, Persist commits the partitions one after the
	// other on its own goroutine, where the suite's crash can unwind.
	step func(name string)

	// The sink goroutine's.
	open     map[*partition]map[string]*object // by partition, then rendered template
	done     []*object                         // objects of the current group closed by max_bytes, max_records or a schema change
	gpos     []connector.GroupPosition         // the current group's, copied
	key      []byte                            // render scratch
	last     *partition                        // the partition of the last record, looked up once per run of them
	constKey string                            // the rendered template when it names no field or time
	zsFree   []*zstd.Encoder
	gzFree   []*gzip.Writer

	// slots bounds the parts in flight, of the sink goroutine's objects
	// and the persister's together.
	slots chan struct{}

	// mu guards the partition table and each partition's committed state,
	// which the persister updates and the sink goroutine reads.
	mu          sync.Mutex
	parts       map[string]*partition // by partKey
	uncompleted []*object             // committed, but their completion failed: retried by Persist, Close and Open

	// Published objects and their records, for Describe.
	objects, records atomic.Int64
	aborted          atomic.Int64 // uploads of ended runs Open aborted
}

// partition is the sink's state of one source partition.
type partition struct {
	source, name string
	hash         string // hex of the first 8 bytes of sha256(source NUL name): the position object's name
	token        string // the partition in object names: readable part and hash

	// The sink goroutine's.
	groupSeq  int64          // the sequence number of the group being written, 0 before its first object
	sealedSeq int64          // the highest sequence number sealed
	k         map[string]int // the next object index per rendered template, in the current group

	// Guarded by Sink.mu.
	loaded bool
	pos    positions // committed
	etag   string    // the position object's ETag; "" for none
	// unsure is a commit whose PUT failed without an answer: it may have
	// landed. Its uploads are kept until a read of the position object
	// tells (refresh).
	unsure *manifest
}

// positions is what a partition's position object says.
type positions struct {
	seq    int64 // committed groups
	end    int64 // every record of the partition before it is in the sink
	hasEnd bool
}

// object is one object being written: a multipart upload, its parts
// uploaded as they fill.
type object struct {
	part    *partition
	seq     int64
	tk      string // the rendered template
	key     string
	records int
	bytes   int64 // uncompressed

	buf bytes.Buffer // encoded bytes not uploaded yet
	w   io.Writer    // where lines go: &buf or a compressor over it
	gz  *gzip.Writer
	zs  *zstd.Encoder
	pq  *fileformat.ParquetWriter
	inf *fileformat.Inferred // parquet without a declared schema: the records so far

	uploadID string
	started  int32         // parts started
	pending  []*partUpload // started, not yet waited for
	parts    []part        // uploaded, in order
	closed   bool          // the encoder is closed: buf holds the last bytes
}

// part is an uploaded part.
type part struct {
	N    int32  `json:"n"`
	ETag string `json:"etag"`
}

// New returns an S3 sink called name. cfg is validated.
func New(name string, cfg *Config) (*Sink, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	t, _ := pathtemplate.Parse(cfg.Template)
	var id [4]byte
	rand.Read(id[:])
	s := &Sink{
		name:   name,
		cfg:    *cfg,
		pfx:    cfg.prefix(),
		tmpl:   t,
		ptime:  pathtemplate.NewTime(cfg.TemplateTime, cfg.TemplateTimeField),
		ext:    fileformat.Ext(cfg.Format, cfg.Compression),
		writer: time.Now().UTC().Format("20060102T150405") + "-" + hex.EncodeToString(id[:]),
		log:    slog.Default().With("sink", name),
		open:   map[*partition]map[string]*object{},
		parts:  map[string]*partition{},
		slots:  make(chan struct{}, cfg.UploadConcurrency),
	}
	if len(cfg.Schema) > 0 {
		s.fixed = fileformat.DeclaredSchema(cfg.Schema)
	}
	if !t.HasFields && !t.HasTime {
		k, _ := t.Render(nil, time.Time{}, nil)
		s.constKey = string(k)
	}
	return s, nil
}

// Open connects, waiting up to connect_timeout for the server, and settles
// what an ended run left: uploads a position object names are completed,
// every other upload of the sink under the prefix is aborted.
func (s *Sink) Open(ctx context.Context) error {
	// A sink is given no logger by the runtime: the default one, as the
	// command line set it up by now.
	s.log = slog.Default().With("sink", s.name)
	if s.store == nil {
		cl, err := s.cfg.Client(ctx)
		if err != nil {
			return fmt.Errorf("s3: sink %s: %w", s.name, err)
		}
		if err := s3client.Wait(ctx, cl, &s.cfg.Conn, "sink "+s.name, s.log); err != nil {
			return err
		}
		s.store = &s3store{cl: cl, conn: &s.cfg.Conn, bucket: s.cfg.Bucket, sse: s.cfg.SSE, kms: s.cfg.SSEKMSKeyID}
	}
	return s.recover(ctx)
}

// partKey is the partition table's key of a source partition.
func partKey(source, name string) string { return source + "\x00" + name }

// partition returns the state of a source partition, made on first use.
func (s *Sink) partition(source, name string) *partition {
	if p := s.last; p != nil && p.source == source && p.name == name {
		return p
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	k := partKey(source, name)
	p := s.parts[k]
	if p == nil {
		sum := sha256.Sum256([]byte(k))
		h := hex.EncodeToString(sum[:8])
		p = &partition{source: source, name: name, hash: h, token: readable(name) + "-" + h, k: map[string]int{}}
		s.parts[k] = p
	}
	s.last = p
	return p
}

// readable is a partition's name as object names show it: letters, digits,
// '.', '_' and '=' kept, anything else '_', at most 40 bytes. The hash
// beside it keeps names apart.
func readable(name string) string {
	var b strings.Builder
	for i := 0; i < len(name) && b.Len() < 40; i++ {
		c := name[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '.', c == '_', c == '=':
			b.WriteByte(c)
		default:
			b.WriteByte('_')
		}
	}
	if b.Len() == 0 {
		return "_"
	}
	return b.String()
}

// committed returns p's committed positions, reading the position object
// when the sink has not yet, or when a commit's outcome is unknown.
func (s *Sink) committed(ctx context.Context, p *partition) (positions, error) {
	s.mu.Lock()
	pos, ok := p.pos, p.loaded && p.unsure == nil
	s.mu.Unlock()
	if ok {
		return pos, nil
	}
	if err := s.refresh(ctx, p); err != nil {
		return positions{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return p.pos, nil
}

// Write encodes records into their objects. A record the format cannot hold
// (not one JSON value for ndjson, not a JSON object for parquet, a line
// break in a line, a field the template or the configured schema cannot
// take) is a *connector.RejectError. A record below its partition's
// committed position is already in the bucket (a retry after a group that
// was committed for some of its partitions only) and is left out.
func (s *Sink) Write(ctx context.Context, recs []record.Record) error {
	// A partition's committed position is read once per run of its
	// records: a Persist that moves it meanwhile moves it below them (they
	// come after the group it commits), and a retry, where the skip
	// matters, runs with no Persist out.
	var cur *partition
	var pos positions
	for i := range recs {
		r := &recs[i]
		if p := s.partition(r.Origin.Source, r.Origin.Partition); p != cur {
			var err error
			if pos, err = s.committed(ctx, p); err != nil {
				return err
			}
			cur = p
		}
		p := cur
		if pos.hasEnd && r.Origin.Offset < pos.end {
			continue
		}
		tk := s.constKey
		if tk == "" {
			at, err := s.ptime.Of(r, time.Time{})
			if err == nil {
				s.key, err = s.tmpl.Render(s.key[:0], at, r)
			}
			if err != nil {
				return &connector.RejectError{Index: i, Err: fmt.Errorf("s3: %w", err)}
			}
		}
		o, err := s.object(ctx, p, tk)
		if err != nil {
			return err
		}
		if err := s.encode(ctx, o, r); err != nil {
			var rej *rejectErr
			if errors.As(err, &rej) {
				return &connector.RejectError{Index: i, Err: rej.err}
			}
			return err
		}
		if o.records >= s.cfg.MaxRecords || o.bytes >= s.cfg.MaxBytes {
			if err := s.close(o); err != nil {
				return err
			}
		}
		if o.buf.Len() >= int(s.cfg.PartBytes) {
			if err := s.upload(ctx, o); err != nil {
				return err
			}
		}
	}
	return nil
}

// object returns the open object of p for the rendered template (tk, or
// s.key when tk is ""), starting one if there is none.
func (s *Sink) object(ctx context.Context, p *partition, tk string) (*object, error) {
	m := s.open[p]
	if m == nil {
		m = map[string]*object{}
		s.open[p] = m
	}
	var o *object
	if tk != "" {
		o = m[tk]
	} else {
		o = m[string(s.key)]
	}
	if o != nil {
		return o, nil
	}
	if tk == "" {
		tk = string(s.key)
	}
	if p.groupSeq == 0 {
		pos, err := s.committed(ctx, p)
		if err != nil {
			return nil, err
		}
		p.groupSeq = max(p.sealedSeq, pos.seq) + 1
	}
	n := p.k[tk]
	p.k[tk] = n + 1
	o = &object{part: p, seq: p.groupSeq, tk: tk, key: fmt.Sprintf("%s%s-%s-%010d-%03d%s", s.pfx, tk, p.token, p.groupSeq, n, s.ext)}
	o.w = &o.buf
	switch {
	case s.cfg.Format == "parquet" && s.fixed != nil:
		o.pq = fileformat.NewParquetWriter(&o.buf, s.fixed, s.cfg.Compression)
	case s.cfg.Format == "parquet":
		o.inf = fileformat.NewInferred()
	case s.cfg.Compression == "gzip":
		if n := len(s.gzFree); n > 0 {
			o.gz, s.gzFree = s.gzFree[n-1], s.gzFree[:n-1]
			o.gz.Reset(&o.buf)
		} else {
			o.gz = gzip.NewWriter(&o.buf)
		}
		o.w = o.gz
	case s.cfg.Compression == "zstd":
		if n := len(s.zsFree); n > 0 {
			o.zs, s.zsFree = s.zsFree[n-1], s.zsFree[:n-1]
			o.zs.Reset(&o.buf)
		} else {
			zs, err := zstd.NewWriter(&o.buf, zstd.WithEncoderConcurrency(1))
			if err != nil {
				return nil, fmt.Errorf("s3: zstd: %w", err)
			}
			o.zs = zs
		}
		o.w = o.zs
	}
	m[tk] = o
	return o, nil
}

// rejectErr marks an error that is the record's fault, not the server's.
type rejectErr struct{ err error }

func (e *rejectErr) Error() string { return e.err.Error() }

var newline = []byte{'\n'}

// encode writes r into o. A parquet record whose fields conflict with the
// schema inferred so far closes o and goes to the next object.
func (s *Sink) encode(ctx context.Context, o *object, r *record.Record) error {
	v := r.Bytes()
	switch {
	case o.pq != nil:
		row, err := o.pq.Convert(v)
		if err != nil {
			return &rejectErr{fmt.Errorf("s3: parquet: %w", err)}
		}
		if err := o.pq.Write(row); err != nil {
			return fmt.Errorf("s3: encoding %s: %w", o.key, err)
		}
		o.bytes += int64(r.Size())
	case o.inf != nil:
		ok, err := o.inf.Add(v)
		if err != nil {
			return &rejectErr{fmt.Errorf("s3: parquet needs a JSON object: %w", err)}
		}
		if !ok {
			// A new object with a schema of its own.
			if err := s.close(o); err != nil {
				return err
			}
			n, err := s.object(ctx, o.part, o.tk)
			if err != nil {
				return err
			}
			return s.encode(ctx, n, r)
		}
		o.bytes += int64(r.Size())
	default:
		if err := fileformat.CheckLine(s.cfg.Format, r, v); err != nil {
			return &rejectErr{fmt.Errorf("s3: %w", err)}
		}
		if _, err := o.w.Write(v); err != nil {
			return fmt.Errorf("s3: encoding %s: %w", o.key, err)
		}
		if _, err := o.w.Write(newline); err != nil {
			return fmt.Errorf("s3: encoding %s: %w", o.key, err)
		}
		o.bytes += int64(len(v)) + 1
	}
	o.records++
	return nil
}
