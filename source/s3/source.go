// Package s3 is weir's S3 source (`type: s3`): it reads the objects under a
// prefix of a bucket, in key order, as NDJSON, lines or CSV (gzip, zstd or
// plain) or parquet, once or watching for new objects, and keeps its
// committed positions in a state store under data_dir.
//
// Each object is a partition, named by its key and ETag ("key#etag"), so
// that a replaced object is never taken for the one it replaced, by weir or
// by a sink that keeps positions. A position is the byte offset after a
// complete record in the object's (decompressed) bytes, or for parquet the
// index of the next row. The committed state is a watermark in key order
// (every object whose key sorts at or before it was read to its end and
// committed) and the positions of the objects above it. docs/s3.md has the
// rules: listing, start_after, after_read, replaced objects.
package s3

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/internal/s3client"
	"github.com/weir-etl/weir/internal/statestore"
)

func init() {
	connector.RegisterSource(connector.SourceDef[Config]{
		Name:   "s3",
		Doc:    "reads NDJSON, lines, CSV (gzip, zstd) or parquet objects of an S3 bucket in key order, once or watching for new ones",
		Config: NewConfig,
		Build:  func(name string, c *Config) (connector.Source, error) { return New(name, c) },
	})
}

// Reasons given to connector.Host.Skip and Host.Unread.
const (
	reasonInvalid = "invalid"  // a record that cannot be read, on_invalid: skip
	reasonChanged = "replaced" // an object replaced under the same key after weir began reading it
	reasonGone    = "gone"     // an object deleted before it was read to its end
)

// Source is the S3 source. Build it with New.
type Source struct {
	name   string
	cfg    Config
	pfx    string
	action string // keep, delete or move
	moveTo string
	log    *slog.Logger
	cl     *s3.Client
	store  *statestore.Store
	host   connector.Host
	// life bounds the object readers: they outlive single Polls (a Poll
	// cancelled for a rewind must not lose what they fetched) and end with
	// Close.
	life context.Context
	stop context.CancelFunc

	// The polling goroutine's.
	queue    []*object // listed, not being read, in key order
	active   []*reader // objects being read, in key order: the first is polled
	nextScan time.Time
	scanned  bool  // a listing has completed
	stopErr  error // a record that cannot be read: returned by the next Poll

	// mu guards the objects' committed state, shared with Commit (the
	// checkpointer goroutine), and the failure state. It is never held
	// while calling the Host: Revoke calls Commit.
	mu        sync.Mutex
	objs      map[string]*object // by key: every object above the watermark known
	order     []string           // their keys, sorted
	byPart    map[connector.Partition]*object
	watermark string
	saved     map[string]entry // state entries not yet matched with a listing
	toRevoke  []connector.Partition
	failure   failure
}

// object is one object above the watermark.
type object struct {
	key, etag string
	size      int64
	name      string // the partition: key#etag
	part      connector.Partition
	assigned  bool
	start     int64 // where reading (re)starts
	committed int64
	final     int64 // the position at its end once read to it; -1 before
	done      bool  // every record committed
	changed   bool  // replaced while being read, or after: reported once
	afterDone bool  // after_read carried out
}

// entry is an object's record in the state store.
type entry struct {
	ETag      string `json:"etag"`
	Size      int64  `json:"size"`
	Committed int64  `json:"committed"`
	Final     int64  `json:"final"`
	Done      bool   `json:"done,omitempty"`
	Changed   bool   `json:"changed,omitempty"`
}

const watermarkKey = "#watermark"

// reader is a read of one object by its own goroutine.
type reader struct {
	o      *object
	out    chan chunk
	cancel context.CancelFunc
	done   chan struct{}
}

// failure is the failure the source is retrying, for the log and for
// Failing.
type failure struct {
	since    time.Time
	attempts int
	err      error
	logged   int // the attempt count last logged
}

// New returns an S3 source called name. cfg is validated.
func New(name string, cfg *Config) (*Source, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	action, to, _ := cfg.afterRead()
	return &Source{name: name, cfg: *cfg, pfx: cfg.prefix(), action: action, moveTo: to,
		log: slog.Default().With("source", name), objs: map[string]*object{}, byPart: map[connector.Partition]*object{}}, nil
}

// Open connects, waiting up to connect_timeout for the server, opens the
// state store and lists the prefix.
func (s *Source) Open(ctx context.Context, h connector.Host) error {
	s.host = h
	s.log = h.Logger()
	cl, err := s.cfg.Client(ctx)
	if err != nil {
		return fmt.Errorf("s3: source %s: %w", s.name, err)
	}
	if err := s3client.Wait(ctx, cl, &s.cfg.Conn, "source "+s.name, s.log); err != nil {
		return err
	}
	s.cl = cl
	st, err := statestore.Open(s.statePath(), statestore.Options{Log: s.log, Source: s.name})
	if err != nil {
		return fmt.Errorf("s3: source %s: %w", s.name, err)
	}
	s.store = st
	if err := s.load(); err != nil {
		st.Close()
		return err
	}
	s.life, s.stop = context.WithCancel(context.Background())
	if err := s.scan(ctx); err != nil {
		s.stop()
		st.Close()
		return err
	}
	return nil
}

// load reads the state store.
func (s *Source) load() error {
	s.saved = map[string]entry{}
	err := s.store.ForEach(func(key string, val []byte) error {
		if key == watermarkKey {
			s.watermark = string(val)
			return nil
		}
		k, ok := strings.CutPrefix(key, "o/")
		if !ok {
			return fmt.Errorf("bad key %q", key)
		}
		var e entry
		if err := json.Unmarshal(val, &e); err != nil {
			return fmt.Errorf("bad entry for %q: %w", key, err)
		}
		s.saved[k] = e
		return nil
	})
	if err != nil {
		return fmt.Errorf("s3: source %s: reading state %s: %w: it is not a state file this version wrote; move it aside, and every object is read again from the start", s.name, s.store.Path(), err)
	}
	if s.watermark < s.cfg.StartAfter {
		s.watermark = s.cfg.StartAfter
	}
	return nil
}

// Poll fills b with the next batch of the first object being read.
func (s *Source) Poll(ctx context.Context, b *connector.Batch) error {
	if err := s.revokeDone(ctx, false); err != nil {
		return err
	}
	if err := s.stopErr; err != nil {
		return err
	}
	for {
		if s.cfg.Mode == "watch" && !time.Now().Before(s.nextScan) {
			if err := s.scan(ctx); err != nil {
				return err
			}
		}
		s.startReaders()
		if len(s.active) == 0 {
			if s.cfg.Mode == "once" {
				return connector.ErrEndOfInput
			}
			if err := s.revokeDone(ctx, true); err != nil {
				return err
			}
			t := time.NewTimer(time.Until(s.nextScan))
			select {
			case <-t.C:
				continue
			case <-ctx.Done():
				t.Stop()
				return ctx.Err()
			}
		}
		rd := s.active[0]
		o := rd.o
		if !o.assigned {
			p := s.host.Assign(o.name, connector.Position(o.start))
			s.mu.Lock()
			o.part, o.assigned = p, true
			s.byPart[p] = o
			s.mu.Unlock()
		}
		var c chunk
		select {
		case c = <-rd.out:
		case <-ctx.Done():
			return ctx.Err()
		}
		b.Partition = o.part
		b.Records = append(b.Records[:0], c.recs...)
		b.End = connector.Position(c.end)
		if c.skipped > 0 {
			s.host.Skip(reasonInvalid, c.skipped)
		}
		if c.err != nil {
			s.stopErr = c.err
			if len(b.Records) == 0 {
				return c.err
			}
			return nil
		}
		if !c.eof {
			return nil
		}
		s.finishRead(rd, c)
		b.CaughtUp = len(s.active) == 0 && len(s.queue) == 0
		return nil
	}
}

// finishRead takes a reader that reached its object's end off the active
// list, and marks the object done at once when there is nothing left to
// commit (an empty object, or one already committed to its end).
func (s *Source) finishRead(rd *reader, c chunk) {
	s.active = s.active[1:]
	rd.cancel()
	<-rd.done
	o := rd.o
	if c.changed {
		s.log.Warn("s3: an object was replaced while it was read: the rest of the old version is unread, the new version is not read (a key must not be rewritten; give the new data a new key)",
			"key", o.key, "etag", o.etag, "read_to", c.end)
		s.host.Unread(reasonChanged, max(o.size-c.end, 0))
	}
	s.mu.Lock()
	o.final = c.end
	o.changed = o.changed || c.changed
	empty := o.final <= o.committed || unsafeDoneAtRead
	if empty {
		o.done = true
	}
	s.mu.Unlock()
	if empty {
		if err := s.persist(context.Background(), []*object{o}); err != nil {
			s.log.Warn("s3: recording a finished object", "key", o.key, "err", err)
		}
	}
}

// startReaders starts readers for the next queued objects, up to prefetch.
func (s *Source) startReaders() {
	for len(s.active) < s.cfg.Prefetch && len(s.queue) > 0 {
		o := s.queue[0]
		s.queue = s.queue[1:]
		s.active = append(s.active, s.newReader(o, o.start))
	}
}

func (s *Source) newReader(o *object, from int64) *reader {
	ctx, cancel := context.WithCancel(s.life)
	rd := &reader{o: o, out: make(chan chunk, 2), cancel: cancel, done: make(chan struct{})}
	d := &decoder{src: s, o: o, part: o.name, from: from}
	go func() {
		defer close(rd.done)
		d.read(ctx, rd.out)
	}()
	return rd
}

// Seek makes the next batches of p start at pos again: its object is read
// again from there, before the others.
func (s *Source) Seek(ctx context.Context, p connector.Partition, pos connector.Position) error {
	s.mu.Lock()
	o := s.byPart[p]
	if o != nil {
		o.final, o.start = -1, int64(pos)
	}
	s.mu.Unlock()
	if o == nil {
		return fmt.Errorf("s3: source %s: seek of partition %d, which it does not hold", s.name, p)
	}
	for i, rd := range s.active {
		if rd.o == o {
			rd.cancel()
			<-rd.done
			s.active = slices.Delete(s.active, i, i+1)
			break
		}
	}
	s.stopErr = nil
	s.active = slices.Insert(s.active, 0, s.newReader(o, int64(pos)))
	return nil
}

// Commit records positions durably: an object committed to its end is
// done; in keep mode the watermark moves over the done objects at the
// start of the key order, and with after_read delete or move the done
// objects are deleted or moved.
func (s *Source) Commit(ctx context.Context, commits []connector.Commit) error {
	var touched []*object
	s.mu.Lock()
	for _, c := range commits {
		o := s.byPart[c.Partition]
		if o == nil {
			continue
		}
		o.committed = max(o.committed, int64(c.Position))
		if o.final >= 0 && o.committed >= o.final && !o.done {
			o.done = true
		}
		touched = append(touched, o)
	}
	s.mu.Unlock()
	if err := s.persist(ctx, touched); err != nil {
		return err
	}
	s.afterRead(ctx)
	return nil
}

// persist writes the objects' entries and moves the watermark.
func (s *Source) persist(ctx context.Context, os []*object) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var forget []string
	wm := s.watermark
	if s.action == "keep" {
		n := 0
		for n < len(s.order) && s.objs[s.order[n]].done {
			n++
		}
		if n > 0 {
			forget = slices.Clone(s.order[:n])
			wm = s.order[n-1]
		}
	}
	err := s.store.Update(func(tx statestore.Tx) error {
		for _, o := range os {
			if slices.Contains(forget, o.key) {
				continue
			}
			b, _ := json.Marshal(entry{ETag: o.etag, Size: o.size, Committed: o.committed, Final: o.final, Done: o.done, Changed: o.changed})
			if err := tx.Put("o/"+o.key, b); err != nil {
				return err
			}
		}
		for _, k := range forget {
			if err := tx.Delete("o/" + k); err != nil {
				return err
			}
		}
		if wm != s.watermark {
			return tx.Put(watermarkKey, []byte(wm))
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("s3: source %s: writing read positions: %w", s.name, err)
	}
	for _, k := range forget {
		o := s.objs[k]
		delete(s.objs, k)
		if o.assigned {
			s.toRevoke = append(s.toRevoke, o.part)
		}
	}
	s.order = s.order[len(forget):]
	s.watermark = wm
	return nil
}

// afterRead deletes or moves the done objects (after_read), and forgets
// them once that is done. A failure is logged and retried at the next
// commit: the object stays done in the state store meanwhile.
func (s *Source) afterRead(ctx context.Context) {
	if s.action == "keep" {
		return
	}
	s.mu.Lock()
	var todo []*object
	for _, k := range s.order {
		if o := s.objs[k]; o.done && !o.afterDone {
			todo = append(todo, o)
		}
	}
	s.mu.Unlock()
	for _, o := range todo {
		if err := s.moveOrDelete(ctx, o); err != nil {
			s.log.Warn("s3: after_read failed; retried at the next commit", "key", o.key, "after_read", s.cfg.AfterRead, "err", err)
			return
		}
		s.mu.Lock()
		o.afterDone = true
		s.mu.Unlock()
		err := s.store.Update(func(tx statestore.Tx) error { return tx.Delete("o/" + o.key) })
		if err != nil {
			s.log.Warn("s3: forgetting a deleted object", "key", o.key, "err", err)
			return
		}
		s.mu.Lock()
		delete(s.objs, o.key)
		if i, ok := slices.BinarySearch(s.order, o.key); ok {
			s.order = slices.Delete(s.order, i, i+1)
		}
		if o.assigned {
			s.toRevoke = append(s.toRevoke, o.part)
		}
		s.mu.Unlock()
	}
}

func (s *Source) moveOrDelete(ctx context.Context, o *object) error {
	etag := `"` + o.etag + `"`
	if s.action == "move" {
		to := s.moveTo + strings.TrimPrefix(o.key, s.pfx)
		rctx, cancel := s.cfg.Timeout(ctx)
		_, err := s.cl.CopyObject(rctx, &s3.CopyObjectInput{Bucket: &s.cfg.Bucket, Key: &to,
			CopySource: aws.String(s.cfg.Bucket + "/" + o.key), CopySourceIfMatch: &etag})
		cancel()
		if err != nil && !s3client.NotFound(err) {
			if s3client.Code(err) == "PreconditionFailed" {
				return fmt.Errorf("%s was replaced since it was read: it is left where it is (%w)", o.key, err)
			}
			return s3client.Explain(err)
		}
	}
	rctx, cancel := s.cfg.Timeout(ctx)
	defer cancel()
	_, err := s.cl.DeleteObject(rctx, &s3.DeleteObjectInput{Bucket: &s.cfg.Bucket, Key: &o.key})
	if err != nil && !s3client.NotFound(err) {
		return s3client.Explain(err)
	}
	return nil
}

// revokeBatch is how many done objects' partitions are given up at once
// while objects are being read. A revoke waits for the checkpointer and
// has the sinks flush the partitions' groups, so one per object would cost
// a round trip and a small group each; when idle, they all go.
const revokeBatch = 512

// revokeDone gives up the partitions of objects that are done: when idle,
// or once revokeBatch have gathered.
func (s *Source) revokeDone(ctx context.Context, idle bool) error {
	s.mu.Lock()
	if !idle && len(s.toRevoke) < revokeBatch {
		s.mu.Unlock()
		return nil
	}
	ps := s.toRevoke
	s.toRevoke = nil
	for _, p := range ps {
		delete(s.byPart, p)
	}
	s.mu.Unlock()
	if len(ps) == 0 {
		return nil
	}
	return s.host.Revoke(ctx, ps...)
}

// scan lists the objects after the watermark and queues the new ones.
func (s *Source) scan(ctx context.Context) error {
	s.nextScan = time.Now().Add(s.cfg.ScanInterval)
	s.mu.Lock()
	after := s.watermark
	s.mu.Unlock()
	in := &s3.ListObjectsV2Input{Bucket: &s.cfg.Bucket, Prefix: aws.String(s.pfx)}
	if after != "" {
		in.StartAfter = aws.String(after)
	}
	seen := map[string]bool{}
	var added []*object
	for {
		var page *s3.ListObjectsV2Output
		err := s.retry(ctx, "listing "+s.pfx, func(ctx context.Context) error {
			rctx, cancel := s.cfg.Timeout(ctx)
			defer cancel()
			var err error
			page, err = s.cl.ListObjectsV2(rctx, in)
			if err != nil {
				if s3client.Refused(err) {
					return permanent{s3client.Explain(err)}
				}
				return s3client.Explain(err)
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("s3: source %s: %w", s.name, err)
		}
		for _, it := range page.Contents {
			key := aws.ToString(it.Key)
			rel := strings.TrimPrefix(key, s.pfx)
			if strings.HasSuffix(key, "/") || key <= after {
				continue
			}
			if s.cfg.Glob != "" {
				if ok, _ := path.Match(s.cfg.Glob, rel); !ok {
					continue
				}
			}
			seen[key] = true
			if o := s.found(key, strings.Trim(aws.ToString(it.ETag), `"`), aws.ToInt64(it.Size)); o != nil {
				added = append(added, o)
			}
		}
		if !aws.ToBool(page.IsTruncated) {
			break
		}
		in.ContinuationToken = page.NextContinuationToken
	}
	var done []*object
	s.mu.Lock()
	if !s.scanned {
		// Objects in progress in the state store that the listing does not
		// show were deleted before weir read them to their end.
		for k, e := range s.saved {
			if !e.Done && !seen[k] && k > after {
				s.mu.Unlock()
				s.log.Warn("s3: an object weir had begun to read is gone; its rest is unread", "key", k, "read_to", e.Committed)
				s.host.Unread(reasonGone, max(e.Size-e.Committed, 0))
				s.mu.Lock()
			}
		}
		forget := s.saved
		s.saved = nil
		s.mu.Unlock()
		if err := s.store.Update(func(tx statestore.Tx) error {
			for k := range forget {
				if !seen[k] {
					if err := tx.Delete("o/" + k); err != nil {
						return err
					}
				}
			}
			return nil
		}); err != nil {
			return fmt.Errorf("s3: source %s: writing read positions: %w", s.name, err)
		}
		s.mu.Lock()
		s.scanned = true
	}
	for _, o := range added {
		i, _ := slices.BinarySearch(s.order, o.key)
		s.order = slices.Insert(s.order, i, o.key)
		if o.done {
			done = append(done, o)
		}
	}
	s.mu.Unlock()
	for _, o := range added {
		if !o.done {
			i := sort.Search(len(s.queue), func(i int) bool { return s.queue[i].key > o.key })
			s.queue = slices.Insert(s.queue, i, o)
		}
	}
	if len(done) > 0 {
		if err := s.persist(ctx, done); err != nil {
			return err
		}
		s.afterRead(ctx)
	}
	return nil
}

// found takes one listed object: a new one is returned, to be queued (or
// noted done, from the state store); a known one with a new ETag is
// reported once.
func (s *Source) found(key, etag string, size int64) *object {
	s.mu.Lock()
	defer s.mu.Unlock()
	if o := s.objs[key]; o != nil {
		if o.etag == etag || o.changed {
			return nil
		}
		if !o.assigned && !o.done {
			// Replaced before weir began to read it: the new version is the one.
			o.etag, o.size, o.name = etag, size, key+"#"+etag
			return nil
		}
		o.changed = true
		s.log.Warn("s3: an object was replaced after weir read it: the new version is not read (a key must not be rewritten; give the new data a new key)",
			"key", key, "etag_read", o.etag, "etag_now", etag)
		s.host.Unread(reasonChanged, size)
		return nil
	}
	o := &object{key: key, etag: etag, size: size, name: key + "#" + etag, final: -1}
	if e, ok := s.saved[key]; ok {
		delete(s.saved, key)
		if e.ETag != etag {
			s.log.Warn("s3: an object was replaced since weir read it: the new version is not read, the rest of the old is unread (a key must not be rewritten; give the new data a new key)",
				"key", key, "etag_read", e.ETag, "etag_now", etag)
			if !e.Done {
				s.host.Unread(reasonChanged, max(e.Size-e.Committed, 0))
			}
			s.host.Unread(reasonChanged, size)
			o.etag, o.size, o.name = e.ETag, e.Size, key+"#"+e.ETag
			o.done, o.changed = true, true
		} else {
			o.committed, o.start, o.final, o.done, o.changed = e.Committed, e.Committed, e.Final, e.Done, e.Changed
		}
	}
	s.objs[key] = o
	return o
}

// retry runs fn until it succeeds, fails for good (a permanent error or
// ctx), retrying with backoff: the failure is logged at its first attempt
// and then at doubling counts, and Failing reports it, until fn succeeds.
func (s *Source) retry(ctx context.Context, what string, fn func(context.Context) error) error {
	backoff := s3client.FirstBackoff
	for {
		began := time.Now()
		err := fn(ctx)
		if err == nil {
			s.mu.Lock()
			f := s.failure
			s.failure = failure{}
			s.mu.Unlock()
			if f.attempts > 0 {
				s.log.Info("s3: the server answers again; going on", "where", s.cfg.Where(), "failed_for", time.Since(f.since).Round(time.Millisecond), "attempts", f.attempts)
			}
			return nil
		}
		var p permanent
		if errors.As(err, &p) || ctx.Err() != nil {
			return err
		}
		s.mu.Lock()
		if s.failure.attempts == 0 {
			// From when the failed request began: a server that stops
			// answering is failing from then, not from the timeout.
			s.failure.since = began
		}
		s.failure.attempts++
		s.failure.err = fmt.Errorf("%s: %w", what, err)
		n := s.failure.attempts
		logIt := n == 1 || n >= 2*s.failure.logged
		if logIt {
			s.failure.logged = n
		}
		since := s.failure.since
		s.mu.Unlock()
		if logIt {
			s.log.Warn("s3: a request failed; retrying", "where", s.cfg.Where(), "what", what, "err", err.Error(),
				"attempts", n, "failing_for", time.Since(since).Round(time.Millisecond))
		}
		t := time.NewTimer(backoff)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
		backoff = min(2*backoff, s3client.MaxBackoff)
	}
}

// Failing returns the failure the source has been retrying, if any: since
// when, how many attempts, and the last error.
func (s *Source) Failing() (time.Time, int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.failure.since, s.failure.attempts, s.failure.err
}

// Close stops the readers and closes the state store.
func (s *Source) Close(ctx context.Context) error {
	if s.stop != nil {
		s.stop()
	}
	for _, rd := range s.active {
		<-rd.done
	}
	s.active = nil
	if s.store != nil {
		return s.store.Close()
	}
	return nil
}

func sortedKeys(m map[string]any) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// statePath is the file of the source's committed positions.
func (s *Source) statePath() string {
	return filepath.Join(s.cfg.DataDir, "s3-source-"+s.name+".db")
}

// StateFiles implements statestore.Keeper: `weir run --reset-state` moves
// the file of committed positions aside.
func (s *Source) StateFiles() []string { return []string{s.statePath()} }
