package iceberg

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"github.com/weir-etl/weir/internal/words"
	"hash/fnv"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/record"
)

// Sink is the Iceberg sink. Create it with New.
type Sink struct {
	name  string
	cfg   Config
	key   string // the summary property of this writer's positions
	tag   [4]byte
	ident table.Identifier
	log   *slog.Logger

	cat     catalog.Catalog
	release func()

	// Set by Open (and again when the schema changes), the sink's goroutine only.
	schema *arrow.Schema
	cols   []column // per field of schema
	mem    memory.Allocator

	// The current group, the sink's goroutine only.
	bld       *array.RecordBuilder
	origins   []origin // per row
	positions []connector.GroupPosition
	slots     []slot
	batch     arrow.RecordBatch // the group, once Flush built it
	files     []iceberg.DataFile
	filesAt   time.Time
	filesSafe bool // the files are known to be in no snapshot: Abort may delete them

	// hook is the tests' crash point (see step); nil otherwise.
	hook func(step string) error

	// For Describe and the tests, counted per commit.
	rows, commits, skipped, conflicts, orphans atomic.Int64
	// Commit latency, from the start of a Flush's commit to the catalog's
	// answer (data files written, retries included): the sum and the most.
	commitNanos, commitMaxNanos atomic.Int64
}

// column is one top-level field of the table and where its value comes from.
type column struct {
	node  *node
	field []string // the record path; nil: not filled (null)
	raw   bool     // filled with the record's whole value
}

// origin is where a row came from, to leave out the rows stored positions
// already cover when a commit finds the table moved.
type origin struct {
	source, partition string
	offset            int64
}

// New returns a sink for cfg, which must be valid. It does no I/O.
func New(name string, cfg *Config) (*Sink, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("sink/iceberg: sink %s: %w", name, err)
	}
	s := &Sink{
		name:  name,
		cfg:   *cfg,
		ident: append(cfg.namespace(), cfg.Table),
		mem:   memory.DefaultAllocator,
	}
	writer := cfg.pipelineName() + "/" + name
	s.key = positionsPrefix + writer
	h := fnv.New32a()
	h.Write([]byte(writer))
	copy(s.tag[:], h.Sum(nil))
	return s, nil
}

// wrap prefixes err with the sink's name and what it was doing.
func (s *Sink) wrap(doing string, err error) error {
	return fmt.Errorf("sink/iceberg: sink %s: %s: %w", s.name, doing, err)
}

func (s *Sink) tableName() string { return strings.Join(s.ident, ".") }

// Open connects to the catalog, loads the table (creating it with
// create_table, adding the columns the configuration has and the table
// lacks), deletes the data files an earlier run wrote and never committed,
// and prepares the first group. An unreachable catalog or storage is waited
// for up to connect_timeout.
func (s *Sink) Open(ctx context.Context) error {
	// A sink is given no logger by the runtime: it logs to the default
	// logger as the command set it up by now.
	s.log = slog.Default().With("sink", s.name)
	w := waiter{log: s.log, limit: s.cfg.ConnectTimeout, sink: s.name}
	catDesc := fmt.Sprintf("%s catalog at %s", s.cfg.Catalog.Type, redactURI(s.cfg.Catalog.URI))
	err := w.wait(ctx, catDesc, func(ctx context.Context) error {
		cat, release, err := s.openCatalog(ctx)
		if err != nil {
			return err
		}
		s.cat, s.release = cat, release
		return nil
	})
	if err != nil {
		return err
	}
	var tbl *table.Table
	err = w.wait(ctx, catDesc, func(ctx context.Context) error {
		var err error
		tbl, err = s.prepareTable(ctx)
		return err
	})
	if err != nil {
		s.Close(ctx)
		return err
	}
	if err := s.useSchema(tbl.Schema()); err != nil {
		s.Close(ctx)
		return s.wrap("table "+s.tableName(), err)
	}
	err = w.wait(ctx, "the table's storage at "+tbl.Location(), func(ctx context.Context) error {
		return s.cleanup(ctx, tbl)
	})
	if err != nil {
		s.Close(ctx)
		return err
	}
	return nil
}

// redactURI drops a URI's user part and query (which may hold secrets).
func redactURI(u string) string {
	if i := strings.Index(u, "://"); i >= 0 {
		rest := u[i+3:]
		if at := strings.LastIndexByte(rest, '@'); at >= 0 && at < strings.IndexAny(rest+"/", "/") {
			rest = rest[at+1:]
		}
		u = u[:i+3] + rest
	}
	u, _, _ = strings.Cut(u, "?")
	return u
}

// useSchema builds the converters and the group's builder for sc.
func (s *Sink) useSchema(sc *iceberg.Schema) error {
	as, err := table.SchemaToArrowSchema(sc, nil, true, false)
	if err != nil {
		return err
	}
	byName := map[string]*Column{}
	for i := range s.cfg.Columns {
		byName[s.cfg.Columns[i].Name] = &s.cfg.Columns[i]
	}
	var cols []column
	for _, f := range sc.Fields() {
		if err := supported(f.Type); err != nil {
			if f.Required {
				return fmt.Errorf("column %s: %w", f.Name, err)
			}
		}
		var field []string
		cc, listed := byName[f.Name]
		switch {
		case listed && cc.Field != "":
			field = strings.Split(cc.Field, ".")
		case listed || len(s.cfg.Columns) == 0:
			field = []string{f.Name}
		}
		if field == nil && f.Required {
			return fmt.Errorf("column %s is required, and columns does not list it: add it to columns with the field that fills it", f.Name)
		}
		if field != nil {
			if err := supported(f.Type); err != nil {
				return fmt.Errorf("column %s: %w", f.Name, err)
			}
		}
		raw := listed && cc.Value
		if raw {
			if _, ok := f.Type.(iceberg.StringType); !ok {
				return fmt.Errorf("column %s has value: true, and its type in the table is %s: the whole record goes into a string column", f.Name, f.Type)
			}
		}
		var n *node
		if field != nil {
			if n, err = newNode(f.Name, f.Name, f.Type, f.Required); err != nil {
				return err
			}
		}
		cols = append(cols, column{node: n, field: field, raw: raw})
	}
	for name := range byName {
		if _, ok := sc.FindFieldByName(name); !ok {
			return fmt.Errorf("column %s is not in the table", name)
		}
	}
	if s.bld != nil {
		s.bld.Release()
	}
	s.schema, s.cols = as, cols
	s.bld = array.NewRecordBuilder(s.mem, as)
	return nil
}

// Write converts recs into rows of the current group. A record whose value
// a column cannot hold exactly is rejected, naming the column.
func (s *Sink) Write(_ context.Context, recs []record.Record) error {
	for i := range recs {
		r := &recs[i]
		b, err := r.Value()
		if err != nil {
			return &connector.RejectError{Index: i, Err: s.recordError(r.Origin, "", err)}
		}
		v, err := record.ParseValue(b)
		if err != nil {
			return &connector.RejectError{Index: i, Err: s.recordError(r.Origin, "", err)}
		}
		if v.Kind() != record.Object {
			return &connector.RejectError{Index: i, Err: s.recordError(r.Origin, "", errors.New("the value is not a JSON object: a row needs one"))}
		}
		slots := s.slots[:0]
		for _, c := range s.cols {
			if c.node == nil {
				continue
			}
			if c.raw {
				slots = append(slots, slot{s: string(b)})
				continue
			}
			fv, ok := lookup(v, c.field)
			if slots, err = c.node.plan(slots, fv, ok); err != nil {
				s.slots = slots[:0]
				return &connector.RejectError{Index: i, Err: s.recordError(r.Origin, "", err)}
			}
		}
		s.slots = slots
		for j, c := range s.cols {
			if c.node == nil {
				s.bld.Field(j).AppendNull()
				continue
			}
			slots = c.node.emit(s.bld.Field(j), slots)
		}
		s.origins = append(s.origins, origin{r.Origin.Source, r.Origin.Partition, r.Origin.Offset})
	}
	return nil
}

// lookup follows path through v's objects.
func lookup(v record.Value, path []string) (record.Value, bool) {
	for _, name := range path {
		if v.Kind() != record.Object {
			return record.Value{}, false
		}
		var ok bool
		if v, ok = v.Get(name); !ok {
			return record.Value{}, false
		}
	}
	return v, true
}

// ColumnError is a record the sink cannot turn into a row.
type ColumnError struct {
	Sink   string
	Origin record.Origin
	Column string // the column's path ("payment.amount", "tags[]"); "" for the value as a whole
	Err    error
}

// Error says which record and column, and why.
func (e *ColumnError) Error() string {
	o := originString(e.Origin)
	if e.Column == "" {
		return fmt.Sprintf("sink/iceberg: sink %s: record %s: %v", e.Sink, o, e.Err)
	}
	return fmt.Sprintf("sink/iceberg: sink %s: record %s: column %s %v", e.Sink, o, e.Column, e.Err)
}

// Unwrap returns the cause.
func (e *ColumnError) Unwrap() error { return e.Err }

func (s *Sink) recordError(o record.Origin, col string, err error) error {
	var ve *valueError
	if errors.As(err, &ve) {
		return &ColumnError{Sink: s.name, Origin: o, Column: ve.path, Err: errors.New(ve.msg)}
	}
	return &ColumnError{Sink: s.name, Origin: o, Column: col, Err: err}
}

func originString(o record.Origin) string {
	if o.Source == "" && o.Partition == "" {
		return "(no origin)"
	}
	return fmt.Sprintf("%s/%s@%d", o.Source, o.Partition, o.Offset)
}

// GroupPositions keeps the positions the current group reaches, to store
// in its snapshot's summary.
func (s *Sink) GroupPositions(ps []connector.GroupPosition) {
	s.positions = append(s.positions[:0], ps...)
}

// StoredPositions returns the positions stored for the named partitions of
// source: those of the newest snapshot of the table's main branch that
// holds this writer's positions.
func (s *Sink) StoredPositions(ctx context.Context, source string, partitions []string) (map[string]connector.Position, error) {
	out := map[string]connector.Position{}
	if !keepPositions() || len(partitions) == 0 {
		return out, nil
	}
	tbl, err := s.load(ctx)
	if err != nil {
		return nil, s.wrap("reading stored positions", err)
	}
	m, _, cut, err := storedIn(tbl.Metadata(), table.MainBranch, s.key)
	if err != nil {
		return nil, s.wrap("reading stored positions", err)
	}
	if cut {
		s.log.Warn("iceberg: the table's snapshots were expired past this writer's last one: its positions are lost, and records it already wrote may be written again; see docs/iceberg.md on expiring snapshots",
			"table", s.tableName(), "summary_key", s.key)
	}
	for _, p := range partitions {
		if pos, ok := m.get(source, p); ok {
			out[p] = connector.Position(pos)
		}
	}
	return out, nil
}

// load reads the table's current metadata from the catalog.
func (s *Sink) load(ctx context.Context) (*table.Table, error) {
	cctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	return s.cat.LoadTable(cctx, s.ident)
}

// Flush commits the current group as one snapshot, with the positions it
// reaches in the snapshot's summary, and starts a new group. It returns nil
// only once the catalog accepted the snapshot.
func (s *Sink) Flush(ctx context.Context) error {
	if len(s.origins) == 0 && s.batch == nil {
		s.resetGroup()
		return nil
	}
	if s.batch == nil {
		s.batch = s.bld.NewRecordBatch()
	}
	if err := s.commit(ctx); err != nil {
		return err
	}
	s.resetGroup()
	return nil
}

// resetGroup forgets the current group (its files are in a snapshot, or
// deleted, or left for the clean-up at the next start).
func (s *Sink) resetGroup() {
	if s.batch != nil {
		s.batch.Release()
		s.batch = nil
	}
	if s.bld != nil && s.bld.Field(0).Len() > 0 {
		s.bld.NewRecordBatch().Release()
	}
	clear(s.origins)
	s.origins = s.origins[:0]
	s.positions = s.positions[:0]
	s.files, s.filesSafe = nil, false
}

// Abort discards the current group. Its data files are deleted when they
// are known to be in no snapshot (the commit never reached the catalog, or
// lost a race); after a commit whose outcome is unknown they are left to the
// clean-up at the next start, which deletes them only if no snapshot
// references them.
func (s *Sink) Abort(ctx context.Context) error {
	if s.filesSafe {
		s.deleteFiles(ctx, s.files)
	}
	s.resetGroup()
	return nil
}

// Close releases the catalog.
func (s *Sink) Close(context.Context) error {
	if s.release != nil {
		s.release()
		s.release = nil
	}
	if s.bld != nil {
		s.bld.Release()
		s.bld = nil
	}
	if s.batch != nil {
		s.batch.Release()
		s.batch = nil
	}
	return nil
}

// Describe says where the rows went, for the run summary.
func (s *Sink) Describe() string {
	d := fmt.Sprintf("iceberg %s: %s in %s", s.tableName(), words.Plural(s.rows.Load(), "row"), words.Plural(s.commits.Load(), "snapshot"))
	if n := s.skipped.Load(); n > 0 {
		d += fmt.Sprintf(", %d already in the table and left out", n)
	}
	if n := s.commits.Load(); n > 0 {
		d += fmt.Sprintf(", commits %.1f ms on average (most %.1f ms)",
			float64(s.commitNanos.Load())/float64(n)/1e6, float64(s.commitMaxNanos.Load())/1e6)
	}
	if n := s.conflicts.Load(); n > 0 {
		d += fmt.Sprintf(", %d commits tried again after another writer's", n)
	}
	if n := s.orphans.Load(); n > 0 {
		d += fmt.Sprintf(", %d uncommitted data files of an earlier run deleted", n)
	}
	return d
}

// newWriteUUID returns the id that names a group's data files: its first
// four bytes are the writer's tag (a hash of pipeline and sink name), so the
// clean-up finds this writer's files by name; the rest is random.
func (s *Sink) newWriteUUID() uuid.UUID {
	var u uuid.UUID
	_, _ = rand.Read(u[:])
	copy(u[:4], s.tag[:])
	u[6] = u[6]&0x0f | 0x80 // version 8: a custom layout
	u[8] = u[8]&0x3f | 0x80 // the RFC 4122 variant
	return u
}

var (
	_ connector.PositionKeeper = (*Sink)(nil)
	_ connector.Describer      = (*Sink)(nil)
)

func init() {
	connector.RegisterSink(connector.SinkDef[Config]{
		Name:   "iceberg",
		Doc:    "appends rows to an Apache Iceberg table, exactly once: source positions are stored in each snapshot's summary",
		Config: NewConfig,
		Build:  func(name string, c *Config) (connector.Sink, error) { return New(name, c) },
	})
}
