// Package file is weir's file sink: it writes records as NDJSON (optionally
// gzip or zstd compressed) or parquet chunk files under a directory, on paths
// rendered from a template.
//
// A group (everything written between two Flushes) goes to hidden temporary
// files beside their final names. Flush seals each one (closes the encoder,
// writes out the buffer), fsyncs it, renames it to its final name and fsyncs
// the directories, and only then returns nil, so a chunk a reader can see is
// complete and durable. Abort deletes the temporary files: nothing of an
// aborted group is ever visible.
//
// The sink is a connector.Sealer: Seal does the first part of a Flush and
// hands the group's files over; the returned group's Persist does the rest
// (the fsyncs and renames) on the runtime's persister goroutine, while the
// next group is written.
package file

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/internal/fileformat"
	"github.com/weir-etl/weir/internal/pathtemplate"
	"github.com/weir-etl/weir/internal/words"
	"github.com/weir-etl/weir/record"
)

func init() {
	connector.RegisterSink(connector.SinkDef[Config]{
		Name:   "file",
		Doc:    "writes NDJSON, lines or parquet chunk files (gzip, zstd), made visible atomically on flush; exactly once with exactly_once: true (a manifest commits each group's chunks with their positions)",
		Config: NewConfig,
		Build:  Build,
	})
}

// Sink is the file sink. Build it with New. Like every sink it is used from
// one goroutine.
type Sink struct {
	name  string
	cfg   Config
	tmpl  pathtemplate.Template
	ptime pathtemplate.Time
	fixed *fileformat.Schema       // parquet schema from the configuration, or nil
	out   *fileformat.OutputSchema // parquet without a declared schema: the output's (schema.go)
	// schemaUnsaved: out has columns its file does not have yet.
	schemaUnsaved bool
	runID         string // makes chunk names unique across runs and processes
	seq           uint64
	now           func() time.Time

	open    map[string]*chunk // by rendered template
	sealed  []*chunk          // complete, written out, waiting for Seal or Flush
	created []string          // directories made since the last Seal or Flush
	key     []byte            // render scratch
	gzFree  []*gzip.Writer
	zsFree  []*zstd.Encoder
	bwFree  []*bufio.Writer

	// Published chunks and their records, for Describe; Persist counts them
	// on the runtime's persister goroutine.
	chunks, records atomic.Int64

	lock      *os.File // this run's lock file, locked, from Open to Close
	lockName  string
	cleaned   int // temporary files of ended runs Open removed
	uncleaned int // and could not remove

	// With exactly_once (nil otherwise): the manifest, and the current
	// group's positions (eos.go).
	eos *eosState
	gs  groupState
}

// chunk is one temporary output file.
type chunk struct {
	dir, tmp, final string
	f               *os.File
	cf              chunkFile // f, for bw: starts writeback as the chunk grows
	bw              *bufio.Writer
	gz              *gzip.Writer
	zs              *zstd.Encoder
	w               io.Writer // where ndjson goes: bw or the compressor
	pq              *fileformat.ParquetWriter
	inferred        bool     // parquet without a declared schema: written when sealed,
	pending         [][]byte // these records, under the output's schema then
	records         int
	bytes           int64
	opened          time.Time
	renamed         bool
	committed       bool // with exactly_once: named by a committed manifest entry
}

// New returns a file sink called name. cfg is validated. A configuration
// with exactly_once is refused: Build returns that sink, a
// connector.PositionKeeper, which the runtime must see as one.
func New(name string, cfg *Config) (*Sink, error) {
	if cfg.ExactlyOnce {
		return nil, connector.Fieldf("exactly_once", "is set: build the sink with file.Build, which returns the exactly-once sink (a connector.PositionKeeper)")
	}
	return build(name, cfg)
}

func build(name string, cfg *Config) (*Sink, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	t, _ := pathtemplate.Parse(cfg.Template)
	var id [4]byte
	rand.Read(id[:])
	s := &Sink{
		name:  name,
		cfg:   *cfg,
		tmpl:  t,
		ptime: pathtemplate.NewTime(cfg.TemplateTime, cfg.TemplateTimeField),
		runID: time.Now().UTC().Format("20060102T150405") + "-" + hex.EncodeToString(id[:]),
		now:   time.Now,
		open:  map[string]*chunk{},
	}
	switch {
	case len(cfg.Schema) > 0:
		s.fixed = fileformat.DeclaredSchema(cfg.Schema)
	case cfg.Format == "parquet":
		s.out = fileformat.NewOutputSchema(filepath.Join(cfg.Path, schemaFile))
	}
	if cfg.ExactlyOnce {
		s.eos = newEOS(s)
	}
	return s, nil
}

// Open creates the output directory, locks this run's lock file in it and
// removes the temporary files of runs that have ended.
func (s *Sink) Open(ctx context.Context) error {
	if err := s.mkdir(s.cfg.Path); err != nil {
		return err
	}
	if err := s.loadSchema(); err != nil {
		return err
	}
	if err := s.syncCreated(); err != nil || !canLock {
		return err
	}
	if err := s.lockRun(); err != nil {
		return err
	}
	if s.eos != nil {
		// Before the cleaning: committed chunks a crash left hidden are
		// renamed into view, not taken for leftovers.
		if err := s.eos.open(ctx); err != nil {
			s.unlockRun()
			return err
		}
	}
	if err := s.cleanEnded(); err != nil {
		s.unlockRun()
		return err
	}
	return nil
}

// mkdir creates dir and its missing parents, remembering them so that Flush
// can fsync their parents: a renamed chunk is durable only if every directory
// above it is.
func (s *Sink) mkdir(dir string) error {
	var missing []string
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(d); err == nil || filepath.Dir(d) == d {
			break
		}
		missing = append(missing, d)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("sink/file: creating directory %s: %w", dir, err)
	}
	s.created = append(s.created, missing...)
	return nil
}

// Write appends records to their chunks. A record the format cannot hold
// (not one JSON value for ndjson, not a JSON object for parquet, a line
// break in a line, a field the template or the configured schema cannot
// take) is a *connector.RejectError: the sink never writes a file that is
// not what its format says.
func (s *Sink) Write(ctx context.Context, recs []record.Record) error {
	now := s.now().UTC()
	var c *chunk // the open chunk for s.key, or nil for a new one
	var err error
	perRecord := s.tmpl.HasFields || s.ptime.PerRecord(&s.tmpl)
	if !perRecord {
		// One path for every record: look its chunk up once.
		s.key, _ = s.tmpl.Render(s.key[:0], now, nil)
		if c, err = s.current(now); err != nil {
			return err
		}
	}
	for i := range recs {
		r := &recs[i]
		if s.eos != nil && s.eos.skip(&s.gs, r) {
			continue // held already (exactly_once)
		}
		if perRecord {
			at, err := s.ptime.Of(r, now)
			if err == nil {
				s.key, err = s.tmpl.Render(s.key[:0], at, r)
			}
			if err != nil {
				return &connector.RejectError{Index: i, Err: fmt.Errorf("sink/file: %w", err)}
			}
			if c, err = s.current(now); err != nil {
				return err
			}
		}
		if c, err = s.write(c, r, now); err != nil {
			var rej *rejectErr
			if errors.As(err, &rej) {
				return &connector.RejectError{Index: i, Err: rej.err}
			}
			return err
		}
	}
	return nil
}

// current returns the open chunk for s.key, or nil if there is none or it
// has reached max_age (it is then sealed).
func (s *Sink) current(now time.Time) (*chunk, error) {
	c := s.open[string(s.key)]
	if c != nil && now.Sub(c.opened) >= s.cfg.MaxAge {
		if err := s.seal(c); err != nil {
			return nil, err
		}
		return nil, nil
	}
	return c, nil
}

// rejectErr marks an error that is the record's fault, not the disk's.
type rejectErr struct{ err error }

func (e *rejectErr) Error() string { return e.err.Error() }

// write writes r to c, the open chunk for s.key (nil: none), and returns the
// chunk that now is: a full c is sealed and a new one started.
func (s *Sink) write(c *chunk, r *record.Record, now time.Time) (*chunk, error) {
	if c != nil && (c.records >= s.cfg.MaxRecords || c.bytes >= s.cfg.MaxBytes) {
		if err := s.seal(c); err != nil {
			return nil, err
		}
		c = nil
	}
	if s.cfg.Format == "parquet" {
		return s.writeParquet(c, r, now)
	}
	v := r.Bytes()
	if err := s.checkLine(r, v); err != nil {
		return c, err
	}
	if c == nil {
		var err error
		if c, err = s.newChunk(now, nil); err != nil {
			return nil, err
		}
	}
	if err := c.writeLine(v); err != nil {
		return c, fmt.Errorf("sink/file: writing %s: %w", c.tmp, err)
	}
	c.records++
	c.bytes += int64(len(v)) + 1
	return c, nil
}

// checkLine returns why v cannot be one line of the sink's format (see
// fileformat.CheckLine).
func (s *Sink) checkLine(r *record.Record, v []byte) error {
	if err := fileformat.CheckLine(s.cfg.Format, r, v); err != nil {
		return &rejectErr{fmt.Errorf("sink/file: %w", err)}
	}
	return nil
}

var newline = []byte{'\n'}

// writeLine writes v and a line break. Uncompressed, a line that fits the
// buffer is appended to it in one step rather than by two writes.
func (c *chunk) writeLine(v []byte) error {
	if c.w == io.Writer(c.bw) && c.bw.Available() > len(v) {
		b := append(append(c.bw.AvailableBuffer(), v...), '\n')
		_, err := c.bw.Write(b)
		return err
	}
	if _, err := c.w.Write(v); err != nil {
		return err
	}
	_, err := c.w.Write(newline)
	return err
}

func (s *Sink) writeParquet(c *chunk, r *record.Record, now time.Time) (*chunk, error) {
	v := r.Bytes()
	if s.fixed != nil {
		// A declared schema: each record is checked and written at once.
		if c == nil {
			var err error
			if c, err = s.newChunk(now, s.fixed); err != nil {
				return nil, err
			}
		}
		row, err := c.pq.Convert(v)
		if err != nil {
			return c, &rejectErr{fmt.Errorf("sink/file: parquet: %w", err)}
		}
		if err := c.pq.Write(row); err != nil {
			return c, fmt.Errorf("sink/file: writing %s: %w", c.tmp, err)
		}
	} else {
		// The output's schema: the chunk's records are written when it is
		// sealed, under the schema settled then (schema.go).
		if err := s.out.Check(v); err != nil {
			return c, &rejectErr{fmt.Errorf("sink/file: parquet: %w", err)}
		}
		if c == nil {
			var err error
			if c, err = s.newChunk(now, nil); err != nil {
				return nil, err
			}
			c.inferred = true
		}
		c.pending = append(c.pending, v)
	}
	c.records++
	c.bytes += int64(r.Size())
	return c, nil
}

func (s *Sink) newChunk(now time.Time, sch *fileformat.Schema) (*chunk, error) {
	s.seq++
	rel := filepath.FromSlash(string(s.key))
	final := filepath.Join(s.cfg.Path, fmt.Sprintf("%s-%s-%06d%s", rel, s.runID, s.seq, s.cfg.ext()))
	dir := filepath.Dir(final)
	if err := s.mkdir(dir); err != nil {
		return nil, err
	}
	// The temporary name is hidden (a leading dot) so that readers globbing
	// for chunks never pick up an unfinished one.
	tmp := filepath.Join(dir, "."+filepath.Base(final)+".tmp")
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, fmt.Errorf("sink/file: creating chunk: %w", err)
	}
	c := &chunk{dir: dir, tmp: tmp, final: final, f: f, opened: now}
	c.cf.reset(f)
	if n := len(s.bwFree); n > 0 {
		c.bw, s.bwFree = s.bwFree[n-1], s.bwFree[:n-1]
		c.bw.Reset(&c.cf)
	} else {
		c.bw = bufio.NewWriterSize(&c.cf, s.cfg.BufferBytes)
	}
	c.w = c.bw
	switch {
	case sch != nil:
		c.pq = fileformat.NewParquetWriter(c.bw, sch, s.cfg.Compression)
	case s.cfg.Format == "parquet":
		// The writer is made when the chunk is sealed (see writeParquet).
	case s.cfg.Compression == "gzip":
		if n := len(s.gzFree); n > 0 {
			c.gz, s.gzFree = s.gzFree[n-1], s.gzFree[:n-1]
			c.gz.Reset(c.bw)
		} else {
			c.gz = gzip.NewWriter(c.bw)
		}
		c.w = c.gz
	case s.cfg.Compression == "zstd":
		if n := len(s.zsFree); n > 0 {
			c.zs, s.zsFree = s.zsFree[n-1], s.zsFree[:n-1]
			c.zs.Reset(c.bw)
		} else {
			if c.zs, err = zstd.NewWriter(c.bw, zstd.WithEncoderConcurrency(1)); err != nil {
				f.Close()
				os.Remove(tmp)
				return nil, fmt.Errorf("sink/file: zstd: %w", err)
			}
		}
		c.w = c.zs
	}
	s.open[string(s.key)] = c
	return c, nil
}

// seal completes a chunk's file: its encoder is closed and its buffer written
// out. The file stays open and hidden until its group is persisted (fsynced,
// renamed): keeping the descriptor is what lets that fsync report any error
// the kernel met writing the file back.
func (s *Sink) seal(c *chunk) error {
	for k, oc := range s.open {
		if oc == c {
			delete(s.open, k)
		}
	}
	s.sealed = append(s.sealed, c)
	var err error
	switch {
	case c.inferred:
		err = s.writeSettled(c)
	case c.pq != nil:
		err = c.pq.Close()
	case c.gz != nil:
		err = c.gz.Close()
		s.gzFree = append(s.gzFree, c.gz)
		c.gz = nil
	case c.zs != nil:
		err = c.zs.Close()
		s.zsFree = append(s.zsFree, c.zs)
		c.zs = nil
	}
	if err == nil {
		err = c.bw.Flush()
	}
	if err == nil {
		c.bw.Reset(nil)
		s.bwFree = append(s.bwFree, c.bw)
	}
	c.cf = chunkFile{}
	if err != nil {
		return fmt.Errorf("sink/file: completing %s: %w", c.tmp, err)
	}
	return nil
}

// Flush makes the group durable and visible: it seals every open chunk,
// fsyncs each, renames it to its final name and fsyncs the directories
// involved. On error nothing more is renamed and the runtime calls Abort; a
// chunk renamed before the error stays visible, and its records are written
// again by the replay (at-least-once).
func (s *Sink) Flush(ctx context.Context) error {
	g, err := s.sealGroup()
	if err != nil {
		return err
	}
	if err := g.Persist(ctx); err != nil {
		// Abort discards what is left.
		s.sealed = append(s.sealed, g.chunks...)
		s.created = append(s.created, g.created...)
		return err
	}
	return nil
}

// Seal implements connector.Sealer: it seals every open chunk and hands the
// group's chunks over. Its Persist fsyncs, renames and fsyncs directories as
// Flush does. If Seal fails, the group stays the sink's, for Abort.
func (s *Sink) Seal(ctx context.Context) (connector.SealedGroup, error) {
	return s.sealGroup()
}

func (s *Sink) sealGroup() (*group, error) {
	for _, c := range s.open {
		if err := s.seal(c); err != nil {
			return nil, err
		}
	}
	g := &group{s: s, chunks: s.sealed, created: s.created, state: s.gs}
	s.sealed, s.created = nil, nil
	s.gs = groupState{}
	return g, nil
}

// group is a sealed group: its chunks, written out but neither fsynced nor
// visible, and the directories made for them.
type group struct {
	s       *Sink
	chunks  []*chunk
	created []string
	state   groupState // with exactly_once: the positions and the fence's offsets
}

// Persist makes the group durable and visible: each chunk is fsynced, closed
// and renamed to its final name, then every directory a name was added to or
// created in is fsynced.
func (g *group) Persist(ctx context.Context) error {
	if g.s.eos != nil {
		return g.s.eos.persist(ctx, g)
	}
	for _, c := range g.chunks {
		if c.f == nil {
			continue
		}
		err := c.f.Sync()
		if cerr := c.f.Close(); err == nil {
			err = cerr
		}
		c.f = nil
		if err != nil {
			return fmt.Errorf("sink/file: completing %s: %w", c.tmp, err)
		}
	}
	publish := g.s.unsafeHoldBack(g.chunks)
	var dirs []string
	for _, c := range publish {
		if c.renamed {
			continue
		}
		if err := os.Rename(c.tmp, c.final); err != nil {
			return fmt.Errorf("sink/file: publishing chunk: %w", err)
		}
		c.renamed = true
		if !slices.Contains(dirs, c.dir) {
			dirs = append(dirs, c.dir)
		}
		g.s.chunks.Add(1)
		g.s.records.Add(int64(c.records))
	}
	for _, d := range g.created {
		if p := filepath.Dir(d); !slices.Contains(dirs, p) {
			dirs = append(dirs, p)
		}
	}
	for _, d := range dirs {
		if err := syncDir(d); err != nil {
			return err
		}
	}
	return nil
}

// Discard deletes the temporary files of a group whose Persist failed; chunks
// already renamed stay visible (their records are written again).
func (g *group) Discard(ctx context.Context) error {
	var first error
	for _, c := range g.chunks {
		if err := c.discard(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// discard closes c's file and deletes it unless it was renamed.
func (c *chunk) discard() error {
	if c.f != nil {
		c.f.Close()
		c.f = nil
	}
	if c.renamed || c.committed {
		return nil // visible, or to be renamed into view (exactly_once)
	}
	// ENOTDIR: its directory was replaced, so the file is gone too.
	if err := os.Remove(c.tmp); err != nil && !errors.Is(err, os.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
		return fmt.Errorf("sink/file: discarding %s: %w", c.tmp, err)
	}
	return nil
}

func (s *Sink) syncCreated() error {
	for _, d := range s.created {
		if err := syncDir(filepath.Dir(d)); err != nil {
			return err
		}
	}
	s.created = s.created[:0]
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sink/file: syncing directory: %w", err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("sink/file: syncing directory %s: %w", dir, err)
	}
	return nil
}

// Describe implements connector.Describer: where the output is and how much
// of it this run published, e.g. "./out/paid: 2 chunks, 373 records", and the
// temporary files of ended runs Open removed, if any.
func (s *Sink) Describe() string {
	d := fmt.Sprintf("%s: %s, %s", s.cfg.Path, words.Plural(s.chunks.Load(), "chunk"), words.Plural(s.records.Load(), "record"))
	files := func(n int) string {
		if n == 1 {
			return "1 temporary file"
		}
		return fmt.Sprintf("%d temporary files", n)
	}
	switch {
	case s.cleaned > 0 && s.uncleaned > 0:
		d += fmt.Sprintf(", %s of ended runs removed, %d could not be", files(s.cleaned), s.uncleaned)
	case s.cleaned > 0:
		d += fmt.Sprintf(", %s of ended runs removed", files(s.cleaned))
	case s.uncleaned > 0:
		d += fmt.Sprintf(", %s of ended runs could not be removed", files(s.uncleaned))
	}
	if s.eos != nil {
		d += " (" + s.eos.describe() + ")"
	}
	return d
}

// Abort discards the group: every temporary file is deleted, so nothing of it
// becomes visible.
func (s *Sink) Abort(ctx context.Context) error {
	var first error
	discard := func(c *chunk) {
		if err := c.discard(); err != nil && first == nil {
			first = err
		}
	}
	for k, c := range s.open {
		// The encoders are dropped, not pooled: their state is unknown.
		discard(c)
		delete(s.open, k)
	}
	for _, c := range s.sealed {
		discard(c)
	}
	s.sealed = s.sealed[:0]
	s.gs.reset()
	if s.out != nil {
		s.out.Forget()
	}
	return first
}

// Close discards anything not flushed (the runtime flushes first if it wants
// the data kept), then removes this run's lock file.
func (s *Sink) Close(ctx context.Context) error {
	err := s.Abort(ctx)

	for _, z := range s.zsFree {
		z.Close()
	}
	s.zsFree, s.gzFree = nil, nil
	if s.eos != nil {
		if eerr := s.eos.close(); err == nil {
			err = eerr
		}
	}
	if uerr := s.unlockRun(); err == nil {
		err = uerr
	}
	return err
}

var _ connector.Sealer = (*Sink)(nil)
