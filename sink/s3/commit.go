package s3

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sync/errgroup"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/internal/fileformat"
	"github.com/weir-etl/weir/internal/words"
)

// manifest is a partition's position object: the positions its last
// committed group reaches, and the uploads that hold the group's records.
// Writing it is the group's commit for the partition.
type manifest struct {
	Version   int        `json:"version"`
	Source    string     `json:"source"`
	Partition string     `json:"partition"`
	Seq       int64      `json:"seq"`
	Start     int64      `json:"start"` // the end of the group before
	End       int64      `json:"end"`
	HasEnd    bool       `json:"has_end"`
	Writer    string     `json:"writer"` // the run that wrote it, for people
	Objects   []manifObj `json:"objects"`
}

type manifObj struct {
	Key      string `json:"key"`
	UploadID string `json:"upload_id"`
	Parts    []part `json:"parts"`
	Records  int    `json:"records"`
}

// names reports whether m names the upload id of key.
func (m *manifest) names(key, id string) (manifObj, bool) {
	for _, o := range m.Objects {
		if o.Key == key && o.UploadID == id {
			return o, true
		}
	}
	return manifObj{}, false
}

// positionKey is the key of the position object of partition hash h.
func (s *Sink) positionKey(h string) string { return s.pfx + "_weir/positions/" + h + ".json" }

// readManifest reads the position object of hash h: nil when there is none.
func (s *Sink) readManifest(ctx context.Context, h string) (*manifest, string, error) {
	body, etag, err := s.store.get(ctx, s.positionKey(h))
	if errors.Is(err, errNotFound) {
		return nil, "", nil
	}
	if err != nil {
		return nil, "", fmt.Errorf("s3: sink %s: reading positions %s: %w", s.name, s.positionKey(h), err)
	}
	var m manifest
	if err := json.Unmarshal(body, &m); err != nil || m.Version != 1 {
		return nil, "", fmt.Errorf("s3: sink %s: %s is not a position object this version wrote (%v): move it aside only if the prefix's objects are to be written again", s.name, s.positionKey(h), err)
	}
	return &m, etag, nil
}

// refresh reads p's position object and takes it as p's committed state.
// A commit whose outcome was unknown is settled: if the object is that
// commit, its uploads are completed; if not, they are aborted.
func (s *Sink) refresh(ctx context.Context, p *partition) error {
	m, etag, err := s.readManifest(ctx, p.hash)
	if err != nil {
		return err
	}
	if m != nil && (m.Source != p.source || m.Partition != p.name) {
		return fmt.Errorf("s3: sink %s: %s holds the positions of partition %q of source %q, not of %q of %q: two partitions share a name hash; report it", s.name, s.positionKey(p.hash), m.Partition, m.Source, p.name, p.source)
	}
	s.mu.Lock()
	unsure := p.unsure
	p.unsure = nil
	p.loaded, p.etag = true, etag
	p.pos = positions{}
	if m != nil {
		p.pos = positions{seq: m.Seq, end: m.End, hasEnd: m.HasEnd && !unsafeForgetPositions}
	}
	s.mu.Unlock()
	if unsure == nil {
		return nil
	}
	landed := m != nil && m.Seq == unsure.Seq && m.Writer == unsure.Writer
	for _, o := range unsure.Objects {
		if landed {
			err = s.complete(ctx, o)
		} else {
			err = s.store.abortUpload(ctx, o.Key, o.UploadID)
		}
		if err != nil && !errors.Is(err, errNotFound) {
			s.mu.Lock()
			p.unsure = unsure // settled on the next refresh
			s.mu.Unlock()
			return fmt.Errorf("s3: sink %s: settling %s: %w", s.name, o.Key, err)
		}
	}
	return nil
}

// nameRE finds, in an object's name, the partition hash, the sequence
// number and the object index the sink put there.
var nameRE = regexp.MustCompile(`-([0-9a-f]{16})-([0-9]{10,})-([0-9]{3,})(\.[A-Za-z0-9.]+)?$`)

// recover settles what ended runs left under the prefix: an upload a
// position object names is completed (its group was committed and the run
// ended before the completion); any other upload of the sink is aborted (its
// group was never committed; its records are written again).
func (s *Sink) recover(ctx context.Context) error {
	ups, err := s.store.listUploads(ctx, s.pfx)
	if err != nil {
		return fmt.Errorf("s3: sink %s: listing uploads under %q: %w", s.name, s.pfx, err)
	}
	seen := map[string]*manifest{}
	for _, u := range ups {
		m := nameRE.FindStringSubmatch(path.Base(u.key))
		if m == nil || strings.HasPrefix(u.key, s.pfx+"_weir/") {
			continue // not the sink's: left alone
		}
		h := m[1]
		man, ok := seen[h]
		if !ok {
			if man, _, err = s.readManifest(ctx, h); err != nil {
				return err
			}
			seen[h] = man
		}
		if man != nil {
			if o, ok := man.names(u.key, u.id); ok {
				if err := s.complete(ctx, o); err != nil {
					return fmt.Errorf("s3: sink %s: completing the committed upload of %s: %w", s.name, u.key, err)
				}
				s.log.Info("s3: completed an upload a crash left committed but invisible", "key", u.key)
				continue
			}
		}
		if err := s.store.abortUpload(ctx, u.key, u.id); err != nil && !errors.Is(err, errNotFound) {
			return fmt.Errorf("s3: sink %s: aborting the uncommitted upload of %s: %w", s.name, u.key, err)
		}
		s.aborted.Add(1)
	}
	if n := s.aborted.Load(); n > 0 {
		s.log.Info("s3: aborted the uploads of groups ended runs never committed; their records are written again", "uploads", n, "prefix", s.pfx)
	}
	return nil
}

// complete completes a committed upload. One that is gone was completed
// already (by this run before a lost answer, or by another's Open).
func (s *Sink) complete(ctx context.Context, o manifObj) error {
	err := s.store.complete(ctx, o.Key, o.UploadID, o.Parts)
	if errors.Is(err, errNotFound) {
		if exists, herr := s.store.exists(ctx, o.Key); herr == nil && exists {
			return nil
		} else if herr != nil {
			return herr
		}
		return fmt.Errorf("%w: something aborted a committed upload (a lifecycle rule aborting incomplete uploads too early, another weir opening on the same prefix, or another program): %w", errUploadGone, err)
	}
	return err
}

// errUploadGone is a committed upload that is neither in progress nor
// complete.
var errUploadGone = errors.New("the upload is gone and the object missing")

// upload starts uploading o's buffered bytes as its next part, on a
// goroutine of its own, starting o's multipart upload first if need be: at
// most upload_concurrency parts of the sink are in flight, and the next
// waits for one to end. The bytes are the upload's from then on; o gets a
// new buffer.
func (s *Sink) upload(ctx context.Context, o *object) error {
	if o.uploadID == "" {
		id, err := s.store.create(ctx, o.key, map[string]string{
			"weir-source": o.part.source, "weir-partition": o.part.name, "weir-seq": strconv.FormatInt(o.seq, 10)})
		if err != nil {
			return fmt.Errorf("s3: sink %s: starting the upload of %s: %w", s.name, o.key, err)
		}
		o.uploadID = id
	}
	select {
	case s.slots <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	o.started++
	pu := &partUpload{n: o.started, done: make(chan struct{})}
	body := o.buf.Bytes()
	o.buf = bytes.Buffer{}
	o.pending = append(o.pending, pu)
	key, id := o.key, o.uploadID
	// The upload outlives this call (a Write's): it is bounded by
	// request_timeout, and waited for by Persist, Discard or Abort.
	uctx := context.WithoutCancel(ctx)
	go func() {
		defer close(pu.done)
		pu.etag, pu.err = s.store.uploadPart(uctx, key, id, pu.n, body)
		<-s.slots
	}()
	return nil
}

// partUpload is a part being uploaded.
type partUpload struct {
	n    int32
	done chan struct{}
	etag string
	err  error
}

// waitParts waits for o's parts in flight and adds them to its parts, in
// order; it returns the first failure.
func (s *Sink) waitParts(o *object) error {
	var first error
	for _, pu := range o.pending {
		<-pu.done
		switch {
		case pu.err != nil && first == nil:
			first = fmt.Errorf("s3: sink %s: uploading part %d of %s: %w", s.name, pu.n, o.key, pu.err)
		case pu.err == nil:
			o.parts = append(o.parts, part{N: pu.n, ETag: pu.etag})
		}
	}
	o.pending = nil
	return first
}

// finish uploads what is left of o, a closed object, and waits for all its
// parts.
func (s *Sink) finish(ctx context.Context, o *object) error {
	if o.buf.Len() > 0 || o.started == 0 {
		if err := s.upload(ctx, o); err != nil {
			return err
		}
	}
	return s.waitParts(o)
}

// close closes o's encoder, so that its buffer holds its last bytes, and
// moves it from the open objects to the group's done ones.
func (s *Sink) close(o *object) error {
	if m := s.open[o.part]; m != nil && m[o.tk] == o {
		delete(m, o.tk)
	}
	s.done = append(s.done, o)
	var err error
	switch {
	case o.inf != nil:
		err = fileformat.WriteInferred(&o.buf, o.inf, s.cfg.Compression)
		o.inf = nil
	case o.pq != nil:
		err = o.pq.Close()
		o.pq = nil
	case o.gz != nil:
		err = o.gz.Close()
		s.gzFree = append(s.gzFree, o.gz)
		o.gz = nil
	case o.zs != nil:
		err = o.zs.Close()
		s.zsFree = append(s.zsFree, o.zs)
		o.zs = nil
	}
	o.w, o.closed = nil, true
	if err != nil {
		return fmt.Errorf("s3: sink %s: completing %s: %w", s.name, o.key, err)
	}
	return nil
}

// GroupPositions implements connector.PositionKeeper: the positions the
// current group reaches, stored with it.
func (s *Sink) GroupPositions(ps []connector.GroupPosition) {
	s.gpos = append(s.gpos[:0], ps...)
}

// StoredPositions implements connector.PositionKeeper: the positions the
// partitions' position objects hold, read from the bucket each time, so
// that what another process committed while it owned a partition is seen.
func (s *Sink) StoredPositions(ctx context.Context, source string, partitions []string) (map[string]connector.Position, error) {
	out := map[string]connector.Position{}
	for _, name := range partitions {
		p := s.partition(source, name)
		if err := s.refresh(ctx, p); err != nil {
			return nil, err
		}
		s.mu.Lock()
		if p.pos.hasEnd {
			out[name] = connector.Position(p.pos.end)
		}
		s.mu.Unlock()
	}
	return out, nil
}

// group is a sealed group: its objects, closed, and what each partition's
// commit will say.
type group struct {
	s       *Sink
	objects []*object
	commits []*commit
}

// commit is one partition's share of a group.
type commit struct {
	p       *partition
	seq     int64
	end     int64
	hasEnd  bool
	objects []*object
	done    bool // its position object was written
}

// Flush makes the group durable and visible: Seal, then Persist.
func (s *Sink) Flush(ctx context.Context) error {
	g, err := s.seal(ctx)
	if err != nil {
		return err
	}
	if err := g.Persist(ctx); err != nil {
		if derr := g.Discard(ctx); derr != nil {
			s.log.Warn("s3: discarding a group whose commit failed", "err", derr)
		}
		return err
	}
	return nil
}

// Seal implements connector.Sealer: it closes every open object and hands
// the group over. Persist uploads, commits and completes.
func (s *Sink) Seal(ctx context.Context) (connector.SealedGroup, error) {
	return s.seal(ctx)
}

func (s *Sink) seal(ctx context.Context) (*group, error) {
	for _, m := range s.open {
		for _, o := range m {
			if err := s.close(o); err != nil {
				return nil, err
			}
		}
	}
	g := &group{s: s, objects: s.done}
	byPart := map[*partition]*commit{}
	at := func(p *partition) *commit {
		c := byPart[p]
		if c == nil {
			c = &commit{p: p}
			byPart[p] = c
			g.commits = append(g.commits, c)
		}
		return c
	}
	for _, o := range s.done {
		c := at(o.part)
		c.objects = append(c.objects, o)
	}
	for _, gp := range s.gpos {
		c := at(s.partition(gp.Source, gp.Partition))
		c.end, c.hasEnd = int64(gp.Position), true
	}
	for _, c := range g.commits {
		p := c.p
		if p.groupSeq == 0 {
			pos, err := s.committed(ctx, p)
			if err != nil {
				return nil, err
			}
			p.groupSeq = max(p.sealedSeq, pos.seq) + 1
		}
		c.seq = p.groupSeq
		p.sealedSeq, p.groupSeq = p.groupSeq, 0
		clear(p.k)
	}
	slices.SortFunc(g.commits, func(a, b *commit) int { return strings.Compare(a.p.token, b.p.token) })
	s.done, s.gpos = nil, s.gpos[:0]
	clear(s.open)
	return g, nil
}

// Persist implements connector.SealedGroup: each object's last part is
// uploaded; then, partition by partition, the position object is written
// (the commit) and the partition's uploads completed. It returns nil once
// every partition is committed: an upload whose completion failed after its
// commit holds its records durably and is completed by the next Persist, by
// Close, or by the next Open.
func (g *group) Persist(ctx context.Context) error {
	s := g.s
	// A committed upload left incomplete must be completed before its
	// partition's position object is written again: the new one would no
	// longer name it, and the next Open would abort it as uncommitted.
	if err := s.retryCompletions(ctx); err != nil {
		return err
	}
	// The objects' last parts go up side by side, then the partitions'
	// commits, upload_concurrency at a time: a group of many partitions
	// costs a few round trips, not one per request.
	up, uctx := errgroup.WithContext(ctx)
	up.SetLimit(s.cfg.UploadConcurrency)
	for _, o := range g.objects {
		up.Go(func() error { return s.finish(uctx, o) })
	}
	if err := up.Wait(); err != nil {
		return err
	}
	if s.step != nil {
		// The group's parts are up, nothing of it committed.
		s.step("uploaded")
		for _, c := range g.commits {
			if !c.done {
				if err := s.commitPart(ctx, c); err != nil {
					return err
				}
			}
		}
		return nil
	}
	cm, cctx := errgroup.WithContext(ctx)
	cm.SetLimit(s.cfg.UploadConcurrency)
	for _, c := range g.commits {
		if !c.done {
			cm.Go(func() error { return s.commitPart(cctx, c) })
		}
	}
	return cm.Wait()
}

// commitPart writes c's position object, then completes its uploads.
func (s *Sink) commitPart(ctx context.Context, c *commit) error {
	p := c.p
	pos, err := s.committed(ctx, p)
	if err != nil {
		return err
	}
	end, hasEnd := pos.end, pos.hasEnd
	if c.hasEnd && (!hasEnd || c.end > end) {
		end, hasEnd = c.end, true
	}
	if len(c.objects) == 0 && hasEnd == pos.hasEnd && end == pos.end {
		c.done = true // nothing new to store
		return nil
	}
	m := &manifest{Version: 1, Source: p.source, Partition: p.name, Seq: c.seq, Start: pos.end, End: end, HasEnd: hasEnd, Writer: s.writer}
	for _, o := range c.objects {
		m.Objects = append(m.Objects, manifObj{Key: o.key, UploadID: o.uploadID, Parts: o.parts, Records: o.records})
	}
	body, _ := json.Marshal(m)
	s.unsafePublishEarly(ctx, m)
	s.mu.Lock()
	etag := p.etag
	s.mu.Unlock()
	newTag, err := s.store.put(ctx, s.positionKey(p.hash), body, etag, s.cfg.ConditionalWrites)
	switch {
	case errors.Is(err, errPrecondition):
		// What the sink knew of the partition is stale: the group written
		// again reads the position object anew, leaves out the records
		// the other writer committed and commits over its commit.
		s.mu.Lock()
		p.loaded = false
		s.mu.Unlock()
		return fmt.Errorf("s3: sink %s: the positions of partition %s of source %s (%s) were changed by another writer since this one read them: a second weir writes this prefix, or this process lost the partition; the group fails, and written again leaves out what the other committed: %w",
			s.name, p.name, p.source, s.positionKey(p.hash), err)
	case err != nil:
		// The PUT may have landed: the position object is read again before
		// anything more of the partition is written, and its uploads kept
		// until then (Discard leaves them).
		s.mu.Lock()
		p.unsure = m
		s.mu.Unlock()
		return fmt.Errorf("s3: sink %s: committing partition %s of source %s: %w", s.name, p.name, p.source, err)
	}
	s.mu.Lock()
	p.pos, p.etag, p.loaded = positions{seq: c.seq, end: end, hasEnd: hasEnd}, newTag, true
	s.mu.Unlock()
	c.done = true
	if s.step != nil {
		// The partition is committed; its objects are not visible yet.
		s.step("committed")
	}
	for i, o := range c.objects {
		err := s.complete(ctx, m.Objects[i])
		if errors.Is(err, errUploadGone) {
			return s.rollBack(ctx, c, pos, newTag, err)
		}
		if err != nil {
			s.log.Warn("s3: completing a committed upload failed; retried later (its records are durable, not yet visible)", "key", o.key, "err", err)
			s.mu.Lock()
			s.uncompleted = append(s.uncompleted, o)
			s.mu.Unlock()
			continue
		}
		s.objects.Add(1)
		s.records.Add(int64(o.records))
		if s.step != nil {
			// One more of the partition's objects is visible.
			s.step("completed")
		}
	}
	return nil
}

// rollBack undoes the commit c of a partition whose upload was aborted
// under it (another process's Open took it for a crashed run's, between its
// creation and the commit): the position object gets the partition's
// previous positions again, so that the group fails and its records are
// written again, rather than counted written and lost. Its other uploads
// are aborted by Discard.
func (s *Sink) rollBack(ctx context.Context, c *commit, prev positions, tag string, cause error) error {
	p := c.p
	m := &manifest{Version: 1, Source: p.source, Partition: p.name, Seq: prev.seq, Start: prev.end, End: prev.end, HasEnd: prev.hasEnd, Writer: s.writer}
	body, _ := json.Marshal(m)
	back, err := s.store.put(ctx, s.positionKey(p.hash), body, tag, s.cfg.ConditionalWrites)
	if err != nil {
		return fmt.Errorf("s3: sink %s: partition %s of source %s: %w; and taking the commit back failed, so its records are lost from the bucket: %w", s.name, p.name, p.source, cause, err)
	}
	s.mu.Lock()
	p.pos, p.etag = prev, back
	s.mu.Unlock()
	c.done = false
	return fmt.Errorf("s3: sink %s: partition %s of source %s: %w; the commit was taken back and the group is written again", s.name, p.name, p.source, cause)
}

// retryCompletions completes the committed uploads whose completion failed
// before.
func (s *Sink) retryCompletions(ctx context.Context) error {
	s.mu.Lock()
	todo := s.uncompleted
	s.uncompleted = nil
	s.mu.Unlock()
	for i, o := range todo {
		err := s.complete(ctx, manifObj{Key: o.key, UploadID: o.uploadID, Parts: o.parts})
		if err != nil {
			s.mu.Lock()
			s.uncompleted = append(s.uncompleted, todo[i:]...)
			s.mu.Unlock()
			return fmt.Errorf("s3: sink %s: completing the committed upload of %s: %w", s.name, o.key, err)
		}
		s.objects.Add(1)
		s.records.Add(int64(o.records))
	}
	return nil
}

// Discard implements connector.SealedGroup: the uploads of partitions the
// group did not commit are aborted. Those of a commit whose outcome is
// unknown are kept until the position object tells (see refresh).
func (g *group) Discard(ctx context.Context) error {
	s := g.s
	var first error
	for _, c := range g.commits {
		s.mu.Lock()
		keep := c.done || c.p.unsure != nil
		s.mu.Unlock()
		if keep {
			continue
		}
		for _, o := range c.objects {
			if err := s.abort(ctx, o); err != nil && first == nil {
				first = err
			}
		}
	}
	return first
}

// abort aborts o's upload, if it started one, once its parts in flight
// are done.
func (s *Sink) abort(ctx context.Context, o *object) error {
	s.waitParts(o)
	if o.uploadID == "" {
		return nil
	}
	if err := s.store.abortUpload(ctx, o.key, o.uploadID); err != nil && !errors.Is(err, errNotFound) {
		return fmt.Errorf("s3: sink %s: aborting the upload of %s: %w (Open aborts it on the next start)", s.name, o.key, err)
	}
	o.uploadID = ""
	return nil
}

// Abort discards the current group: its uploads are aborted, nothing of it
// becomes visible.
func (s *Sink) Abort(ctx context.Context) error {
	var first error
	for _, m := range s.open {
		for _, o := range m {
			// The encoders are dropped, not pooled: their state is unknown.
			o.gz, o.zs = nil, nil
			s.done = append(s.done, o)
		}
	}
	clear(s.open)
	for _, o := range s.done {
		if err := s.abort(ctx, o); err != nil && first == nil {
			first = err
		}
	}
	s.done = nil
	s.gpos = s.gpos[:0]
	s.mu.Lock()
	for _, p := range s.parts {
		p.groupSeq = 0
		clear(p.k)
	}
	s.mu.Unlock()
	return first
}

// Close aborts anything not flushed (the runtime flushes first if it wants
// the data kept) and completes the committed uploads still waiting.
func (s *Sink) Close(ctx context.Context) error {
	if s.store == nil {
		return nil
	}
	err := s.Abort(ctx)
	if cerr := s.retryCompletions(ctx); err == nil {
		err = cerr
	}
	for _, z := range s.zsFree {
		z.Close()
	}
	s.zsFree, s.gzFree = nil, nil
	return err
}

// Describe implements connector.Describer: where the output is and how much
// of it this run published, e.g. "s3://lake/events/: 12 objects, 1000000
// records".
func (s *Sink) Describe() string {
	d := fmt.Sprintf("s3://%s/%s: %s, %s", s.cfg.Bucket, s.pfx, words.Plural(s.objects.Load(), "object"), words.Plural(s.records.Load(), "record"))
	if n := s.aborted.Load(); n > 0 {
		d += ", " + words.Count(n, "uncommitted upload", "uncommitted uploads") + " of ended runs aborted"
	}
	return d
}

var (
	_ connector.Sealer         = (*Sink)(nil)
	_ connector.PositionKeeper = (*Sink)(nil)
	_ connector.Describer      = (*Sink)(nil)
)
