package file

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/weir-etl/weir/internal/words"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/record"
)

// Exactly-once (exactly_once: true): a group's chunks and the positions they
// complete become visible together, through a manifest.
//
// Each sink name has a chain of commits under <path>/.weir-eos/<sink>/: a
// numbered entry file per group (e-<n>), holding the group's chunks (their
// temporary and final names) and the positions the runtime gave it, and now
// and then a snapshot (s-<n>) of every position as of entry n, after which
// the entries up to n are deleted. An entry is written aside, fsynced, and
// renamed to its number: that rename is the group's one atomic step. The
// chunks are written, fsynced (and their directories, for the temporary
// names) before it, hidden, and renamed to their final names only after it:
// a chunk a reader can see is always part of a committed group. A crash
// between the commit and the renames leaves committed chunks hidden; the
// next start (any sink's Open on the directory) renames them: roll forward.
// A crash before the commit leaves temporary files of a run that has ended,
// which the ordinary cleaning removes: roll back. docs/DESIGN.md has the
// failure table.
//
// The chain is extended under an flock on its lock file, held for the few
// steps of a commit only: read the entries written since (by another
// process writing the same directory: the members of a Kafka group), check
// that none of them stored a position past a record of this group (the
// fence: a process that lost a partition while it was stopped, and still
// writes it, fails its commit instead of writing its records twice; the
// runtime then writes the group again and Write leaves out what the
// positions cover), rename the entry, fsync the directory. StoredPositions
// reads the chain the same way, so a position another process stored is
// seen.

const (
	eosDirName    = ".weir-eos"
	entryPrefix   = "e-"
	snapPrefix    = "s-"
	manifestTmp   = ".tmp-"
	compactEvery  = 256 // entries between snapshots
	lockPollFirst = time.Millisecond
	lockPollMax   = 20 * time.Millisecond
)

// posKey names a source partition.
type posKey struct{ source, partition string }

// entryChunk is a chunk of a committed group, by its paths relative to the
// sink's path.
type entryChunk struct {
	Tmp     string `json:"tmp"`
	Final   string `json:"final"`
	Records int    `json:"records"`
}

// entryPos is a stored position.
type entryPos struct {
	Source    string             `json:"source"`
	Partition string             `json:"partition"`
	Position  connector.Position `json:"position"`
}

// entry is one committed group; a snapshot is an entry without chunks.
type entry struct {
	Run       string       `json:"run"`
	Group     uint64       `json:"group,omitempty"`
	Chunks    []entryChunk `json:"chunks,omitempty"`
	Positions []entryPos   `json:"positions"`
}

// eosState is a sink's side of the chain.
type eosState struct {
	s    *Sink
	dir  string   // the chain's directory
	lock *os.File // its lock file, from Open to Close

	// mu serialises this sink's goroutines around the flock (which is per
	// open file, and so shared by them) and guards the view.
	mu sync.Mutex
	// The view: the chain as read up to entry n, starting from snapshot
	// snap (0 for none); last is the name of the last file read, whose
	// absence means a snapshot has passed it.
	n, snap uint64
	last    string
	pos     map[posKey]connector.Position
	since   []entryChunk // the chunks of the entries after the snapshot
	// cover is a copy of pos for Write's filter, replaced when pos changes.
	cover atomic.Pointer[map[posKey]connector.Position]

	groups atomic.Uint64 // this run's groups, for the entries' names

	// Published chunks whose renames are not yet fsynced: the next group's
	// directory fsyncs cover them (or Close's). Persists run one at a time;
	// the mutex is for Close.
	umu      sync.Mutex
	unsynced []string
	// orphans are committed chunks of this run that could not be renamed
	// into view; the next Persist tries again.
	orphans []*chunk

	// For Describe.
	commits, heldSkip, fenced, missing atomic.Int64

	step func(string) // crash points, for the exactly-once suite; nil otherwise
}

// errFenced is wrapped by a commit that another writer's positions fenced.
var errFenced = errors.New("fenced")

func newEOS(s *Sink) *eosState {
	e := &eosState{s: s, dir: filepath.Join(s.cfg.Path, eosDirName, url.PathEscape(s.name)), pos: map[posKey]connector.Position{}}
	e.publishCover()
	return e
}

func (e *eosState) at(name string) {
	if e.step != nil {
		e.step(name)
	}
}

func entryName(n uint64) string { return fmt.Sprintf("%s%020d", entryPrefix, n) }
func snapName(n uint64) string  { return fmt.Sprintf("%s%020d", snapPrefix, n) }

func (e *eosState) wrap(doing string, err error) error {
	return fmt.Errorf("sink/file: sink %s: exactly-once: %s: %w", e.s.name, doing, err)
}

// open makes the chain's directory and lock file, reads the chain, renames
// into view the committed chunks a crash left hidden, and removes the
// temporary entries of ended runs.
func (e *eosState) open(ctx context.Context) error {
	if !canLock {
		return e.wrap("opening", errors.New("needs flock, which this platform does not have: set exactly_once: false"))
	}
	if err := e.s.mkdir(e.dir); err != nil {
		return err
	}
	if err := e.s.syncCreated(); err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(e.dir, "lock"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return e.wrap("opening the lock file", err)
	}
	e.lock = f
	if err := e.locked(ctx, func() error {
		if err := e.reload(); err != nil {
			return err
		}
		if err := e.refresh(); err != nil {
			return err
		}
		var dirs []string
		for _, c := range e.since {
			if d, err := e.publish(c); err != nil {
				return err
			} else if d != "" && !slices.Contains(dirs, d) {
				dirs = append(dirs, d)
			}
		}
		for _, d := range dirs {
			if err := syncDir(d); err != nil {
				return err
			}
		}
		e.cleanTemps()
		return nil
	}); err != nil {
		e.lock.Close()
		e.lock = nil
		return err
	}
	return nil
}

// close fsyncs the directories of chunks published since the last fsync and
// closes the lock file.
func (e *eosState) close() error {
	var first error
	for _, d := range e.takeUnsynced() {
		if err := syncDir(d); err != nil && first == nil {
			first = err
		}
	}
	if e.lock != nil {
		e.lock.Close()
		e.lock = nil
	}
	return first
}

// locked runs f holding the chain's flock (and mu), waiting for another
// process's commit if need be.
func (e *eosState) locked(ctx context.Context, f func() error) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	wait := lockPollFirst
	for {
		ok, err := tryLock(e.lock)
		if err != nil {
			return e.wrap("locking the manifest", err)
		}
		if ok {
			break
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return e.wrap("waiting for another writer's commit", ctx.Err())
		}
		wait = min(wait*2, lockPollMax)
	}
	defer unlock(e.lock)
	return f()
}

// reload reads the chain from its newest snapshot.
func (e *eosState) reload() error {
	ents, err := os.ReadDir(e.dir)
	if err != nil {
		return e.wrap("reading the manifest", err)
	}
	var newest uint64
	found := false
	for _, d := range ents {
		if n, ok := numbered(d.Name(), snapPrefix); ok && (!found || n > newest) {
			newest, found = n, true
		}
	}
	e.pos, e.since, e.n, e.snap, e.last = map[posKey]connector.Position{}, nil, 0, 0, ""
	if found {
		name := snapName(newest)
		ent, err := e.read(name)
		if err != nil {
			return err
		}
		for _, p := range ent.Positions {
			e.pos[posKey{p.Source, p.Partition}] = p.Position
		}
		e.n, e.snap, e.last = newest, newest, name
	}
	e.publishCover()
	return nil
}

// numbered returns n of a file named prefix + n.
func numbered(name, prefix string) (uint64, bool) {
	rest, ok := strings.CutPrefix(name, prefix)
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseUint(rest, 10, 64)
	return n, err == nil
}

func (e *eosState) read(name string) (*entry, error) {
	b, err := os.ReadFile(filepath.Join(e.dir, name))
	if err != nil {
		return nil, err
	}
	var ent entry
	if err := json.Unmarshal(b, &ent); err != nil {
		return nil, e.wrap("reading the manifest", fmt.Errorf("%s is not a manifest file (%v): it was written by an fsync before its rename, so the disk or another program damaged it; move the directory %s aside to start the positions afresh (records are then written again)", filepath.Join(e.dir, name), err, e.dir))
	}
	return &ent, nil
}

// refresh reads the entries committed since the view's, by any process.
// The caller holds the lock.
func (e *eosState) refresh() error {
	if e.last == "" || !exists(filepath.Join(e.dir, e.last)) {
		if err := e.reload(); err != nil {
			return err
		}
	}
	changed := false
	for {
		name := entryName(e.n + 1)
		ent, err := e.read(name)
		if errors.Is(err, fs.ErrNotExist) {
			break
		}
		if err != nil {
			return err
		}
		e.apply(ent)
		e.n++
		e.last = name
		changed = true
	}
	if changed {
		e.publishCover()
	}
	return nil
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// apply adds ent to the view.
func (e *eosState) apply(ent *entry) {
	for _, p := range ent.Positions {
		k := posKey{p.Source, p.Partition}
		e.pos[k] = max(e.pos[k], p.Position)
	}
	e.since = append(e.since, ent.Chunks...)
}

func (e *eosState) publishCover() {
	m := make(map[posKey]connector.Position, len(e.pos))
	for k, v := range e.pos {
		m[k] = v
	}
	e.cover.Store(&m)
}

// publish renames a committed chunk into view if it is still hidden, and
// returns the directory a name was added to ("" if none was). A chunk that
// is neither hidden nor in view was removed by someone downstream (or never
// reached the disk) and is counted.
func (e *eosState) publish(c entryChunk) (string, error) {
	tmp, final := filepath.Join(e.s.cfg.Path, c.Tmp), filepath.Join(e.s.cfg.Path, c.Final)
	err := os.Rename(tmp, final)
	switch {
	case err == nil:
		return filepath.Dir(final), nil
	case errors.Is(err, fs.ErrNotExist):
		if !exists(final) {
			e.missing.Add(1)
		}
		return "", nil
	}
	return "", e.wrap("publishing a committed chunk", err)
}

// cleanTemps removes the temporary entries of runs that have ended. The
// caller holds the lock.
func (e *eosState) cleanTemps() {
	ents, err := os.ReadDir(e.dir)
	if err != nil {
		return
	}
	for _, d := range ents {
		rest, ok := strings.CutPrefix(d.Name(), manifestTmp)
		if !ok || len(rest) < runIDLen {
			continue
		}
		id := rest[:runIDLen]
		if id == e.s.runID || !validRunID(id) || !runEnded(e.s.cfg.Path, id) {
			continue
		}
		os.Remove(filepath.Join(e.dir, d.Name()))
	}
}

// runEnded reports whether the run id has ended: its lock file is gone, or
// can be locked. A run that cannot be told counts as live.
func runEnded(path, id string) bool {
	name := filepath.Join(path, lockPrefix+id+lockSuffix)
	f, err := os.Open(name)
	if errors.Is(err, fs.ErrNotExist) {
		return true
	}
	if err != nil {
		return false
	}
	defer f.Close()
	locked, _ := tryLock(f)
	return locked
}

// keepCommitted is called by the cleaning of temporary files, for an ended
// run's files, before it removes them: those that are chunks of a committed
// group are renamed into view instead (the run died between its commit and
// its renames), and the rest are returned for removal. The run has ended,
// so it commits nothing more: the chain read now is complete for it.
func (e *eosState) keepCommitted(files []string) []string {
	var rest []string
	err := e.locked(context.Background(), func() error {
		if err := e.refresh(); err != nil {
			return err
		}
		committed := map[string]entryChunk{}
		for _, c := range e.since {
			committed[filepath.Join(e.s.cfg.Path, c.Tmp)] = c
		}
		for _, f := range files {
			c, ok := committed[f]
			if !ok {
				rest = append(rest, f)
				continue
			}
			d, err := e.publish(c)
			if err != nil {
				return err
			}
			if d != "" {
				if err := syncDir(d); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		// Not knowing which are committed, remove none.
		return nil
	}
	return rest
}

// stored returns the positions of source's partitions, read from the chain.
func (e *eosState) stored(ctx context.Context, source string, partitions []string) (map[string]connector.Position, error) {
	out := map[string]connector.Position{}
	err := e.locked(ctx, func() error {
		if err := e.refresh(); err != nil {
			return err
		}
		for _, p := range partitions {
			if pos, ok := e.pos[posKey{source, p}]; ok {
				out[p] = pos
			}
		}
		return nil
	})
	return out, err
}

// groupState is what the sink keeps of the current group for its commit:
// the positions given, and the first offset written of each partition (for
// the fence). Write's filter skips records the chain already covers.
type groupState struct {
	gpos   []connector.GroupPosition
	firsts map[posKey]int64
	// The filter's cache: the partition of the last record, its covered
	// position, and whether its first offset is noted.
	lastKey posKey
	lastPos connector.Position
	noted   bool
	cover   *map[posKey]connector.Position
}

func (g *groupState) reset() {
	g.gpos = g.gpos[:0]
	g.firsts = nil
	g.lastKey, g.lastPos, g.noted, g.cover = posKey{}, 0, false, nil
}

// skip reports whether r is covered by stored positions (Write then leaves
// it out: it is in the destination already), and notes the first offset of
// each partition written. A record without a source is never skipped.
func (e *eosState) skip(g *groupState, r *record.Record) bool {
	o := &r.Origin
	if o.Source == "" {
		return false
	}
	if g.cover == nil || o.Source != g.lastKey.source || o.Partition != g.lastKey.partition {
		if g.cover == nil {
			g.cover = e.cover.Load()
		}
		g.lastKey = posKey{o.Source, o.Partition}
		g.lastPos = (*g.cover)[g.lastKey]
		g.noted = false
	}
	if o.Offset < int64(g.lastPos) {
		e.heldSkip.Add(1)
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

// persist is a group's Persist with exactly_once: the chunks made durable,
// the entry written aside, the commit (the entry's rename) under the lock
// with the fence, and the chunks renamed into view.
func (e *eosState) persist(ctx context.Context, g *group) error {
	dirs := e.takeUnsynced()
	for _, c := range g.chunks {
		if c.f != nil {
			err := c.f.Sync()
			if cerr := c.f.Close(); err == nil {
				err = cerr
			}
			c.f = nil
			if err != nil {
				return fmt.Errorf("sink/file: completing %s: %w", c.tmp, err)
			}
		}
		if !slices.Contains(dirs, c.dir) {
			dirs = append(dirs, c.dir)
		}
	}
	for _, d := range g.created {
		if p := filepath.Dir(d); !slices.Contains(dirs, p) {
			dirs = append(dirs, p)
		}
	}
	// The temporary names must be durable before the entry that names them
	// is; the renames of the previous group's chunks become durable too.
	for _, d := range dirs {
		if err := syncDir(d); err != nil {
			return err
		}
	}
	e.at("data-durable")
	if err := e.publishOrphans(); err != nil {
		return err
	}
	if err := e.unsafePublishEarly(g); err != nil {
		return err
	}
	ent := &entry{Run: e.s.runID, Group: e.groups.Add(1)}
	for _, c := range g.chunks {
		tmp, _ := filepath.Rel(e.s.cfg.Path, c.tmp)
		final, _ := filepath.Rel(e.s.cfg.Path, c.final)
		ent.Chunks = append(ent.Chunks, entryChunk{Tmp: filepath.ToSlash(tmp), Final: filepath.ToSlash(final), Records: c.records})
	}
	for _, p := range g.state.gpos {
		ent.Positions = append(ent.Positions, entryPos{p.Source, p.Partition, p.Position})
	}
	tmp := filepath.Join(e.dir, fmt.Sprintf("%s%s-%06d", manifestTmp, e.s.runID, ent.Group))
	if err := writeSynced(tmp, ent); err != nil {
		return e.wrap("writing the manifest entry", err)
	}
	e.at("entry-written")
	committed := false
	err := e.locked(ctx, func() error {
		if err := e.refresh(); err != nil {
			return err
		}
		if err := e.fence(g); err != nil {
			return err
		}
		if !e.changes(ent) {
			return nil // nothing to store: every record was held already
		}
		name := entryName(e.n + 1)
		if err := os.Rename(tmp, filepath.Join(e.dir, name)); err != nil {
			return e.wrap("committing the manifest entry", err)
		}
		// From here the group is committed as soon as the rename is on
		// disk; its chunks must not be discarded.
		committed = true
		for _, c := range g.chunks {
			c.committed = true
		}
		e.apply(ent)
		e.n++
		e.last = name
		e.publishCover()
		if err := syncDir(e.dir); err != nil {
			return err
		}
		e.commits.Add(1)
		if e.n-e.snap >= compactEvery {
			e.compact()
		}
		return nil
	})
	if !committed {
		os.Remove(tmp)
	}
	if err != nil {
		if committed {
			// Committed, but the directory's fsync failed: the chunks stay
			// for a later Persist (or the next start) to rename into view,
			// and the records written again are found held.
			e.orphans = append(e.orphans, g.chunks...)
		}
		return err
	}
	e.at("committed")
	var published []string
	for _, c := range g.chunks {
		if err := e.publishChunk(c); err != nil {
			e.orphans = append(e.orphans, c)
			return err
		}
		if !slices.Contains(published, c.dir) {
			published = append(published, c.dir)
		}
		e.s.chunks.Add(1)
		e.s.records.Add(int64(c.records))
	}
	e.noteUnsynced(published)
	e.at("published")
	return nil
}

// fence fails the commit when an entry of another writer stored a position
// past a record of this group: those records are in the destination
// already. The caller holds the lock, with the view refreshed.
func (e *eosState) fence(g *group) error {
	for k, first := range g.state.firsts {
		if pos := e.pos[k]; int64(pos) > first {
			e.fenced.Add(1)
			return e.wrap("commit", fmt.Errorf("%w: positions stored by another writer of %s already cover %s partition %s up to %d, past this group's records from %d: the group is written again without them (another process writes the same partition: a rebalance, or a process that was stopped)",
				errFenced, e.s.cfg.Path, k.source, k.partition, pos, first))
		}
	}
	return nil
}

// changes reports whether committing ent changes anything: chunks, or a
// position above the stored one.
func (e *eosState) changes(ent *entry) bool {
	if len(ent.Chunks) > 0 {
		return true
	}
	for _, p := range ent.Positions {
		if p.Position > e.pos[posKey{p.Source, p.Partition}] {
			return true
		}
	}
	return false
}

// publishChunk renames a committed chunk of this run into view.
func (e *eosState) publishChunk(c *chunk) error {
	if c.renamed {
		return nil
	}
	err := os.Rename(c.tmp, c.final)
	if errors.Is(err, fs.ErrNotExist) && exists(c.final) {
		err = nil // a compaction or a cleaning published it first
	}
	if err != nil {
		return fmt.Errorf("sink/file: publishing chunk %s (it is committed, and is renamed into view at the next start): %w", c.final, err)
	}
	c.renamed = true
	return nil
}

// publishOrphans tries again the renames of committed chunks that failed.
func (e *eosState) publishOrphans() error {
	for len(e.orphans) > 0 {
		c := e.orphans[0]
		if err := e.publishChunk(c); err != nil {
			return err
		}
		e.noteUnsynced([]string{c.dir})
		e.orphans = e.orphans[1:]
	}
	return nil
}

// compact writes a snapshot of the positions as of entry n and deletes the
// entries it replaces, after renaming into view every chunk they commit (a
// live writer's renames of its own chunks then find them done). Failing
// leaves the chain as it was, to compact at a later commit. The caller holds
// the lock.
func (e *eosState) compact() {
	var dirs []string
	for _, c := range e.since {
		d, err := e.publish(c)
		if err != nil {
			return
		}
		if d != "" && !slices.Contains(dirs, d) {
			dirs = append(dirs, d)
		}
	}
	for _, d := range dirs {
		if syncDir(d) != nil {
			return
		}
	}
	snap := &entry{Run: e.s.runID}
	for k, v := range e.pos {
		snap.Positions = append(snap.Positions, entryPos{k.source, k.partition, v})
	}
	slices.SortFunc(snap.Positions, func(a, b entryPos) int {
		if c := strings.Compare(a.Source, b.Source); c != 0 {
			return c
		}
		return strings.Compare(a.Partition, b.Partition)
	})
	tmp := filepath.Join(e.dir, fmt.Sprintf("%s%s-snapshot", manifestTmp, e.s.runID))
	if err := writeSynced(tmp, snap); err != nil {
		os.Remove(tmp)
		return
	}
	name := snapName(e.n)
	if err := os.Rename(tmp, filepath.Join(e.dir, name)); err != nil {
		os.Remove(tmp)
		return
	}
	if syncDir(e.dir) != nil {
		return
	}
	e.snap, e.last, e.since = e.n, name, nil
	// What the snapshot replaces; a removal lost in a crash leaves files
	// that the next reload ignores (it starts from the newest snapshot).
	ents, err := os.ReadDir(e.dir)
	if err != nil {
		return
	}
	for _, d := range ents {
		if n, ok := numbered(d.Name(), entryPrefix); ok && n <= e.n {
			os.Remove(filepath.Join(e.dir, d.Name()))
		} else if n, ok := numbered(d.Name(), snapPrefix); ok && n < e.n {
			os.Remove(filepath.Join(e.dir, d.Name()))
		}
	}
}

// writeSynced writes v as JSON to a new file p and fsyncs it.
func writeSynced(p string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(append(b, '\n'))
	if serr := f.Sync(); err == nil {
		err = serr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func (e *eosState) takeUnsynced() []string {
	e.umu.Lock()
	defer e.umu.Unlock()
	d := e.unsynced
	e.unsynced = nil
	return d
}

func (e *eosState) noteUnsynced(dirs []string) {
	e.umu.Lock()
	defer e.umu.Unlock()
	for _, d := range dirs {
		if !slices.Contains(e.unsynced, d) {
			e.unsynced = append(e.unsynced, d)
		}
	}
}

// describe is the exactly-once part of the summary line.
func (e *eosState) describe() string {
	var b bytes.Buffer
	fmt.Fprintf(&b, "exactly once, %s", words.Plural(e.commits.Load(), "commit"))
	if n := e.heldSkip.Load(); n > 0 {
		fmt.Fprintf(&b, ", %s already held and left out", words.Plural(n, "record"))
	}
	if n := e.fenced.Load(); n > 0 {
		fmt.Fprintf(&b, ", %d commits fenced by another writer", n)
	}
	if n := e.missing.Load(); n > 0 {
		fmt.Fprintf(&b, ", %d committed chunks missing (removed downstream?)", n)
	}
	return b.String()
}

// Keeper is the file sink with exactly_once: a connector.PositionKeeper.
// Build returns one for a configuration with exactly_once set.
type Keeper struct{ *Sink }

// Build returns the sink for cfg: a *Keeper with exactly_once, a *Sink
// otherwise. It is what the registry builds.
func Build(name string, cfg *Config) (connector.Sink, error) {
	s, err := build(name, cfg)
	if err != nil {
		return nil, err
	}
	if s.eos != nil {
		return &Keeper{s}, nil
	}
	return s, nil
}

// StoredPositions implements connector.PositionKeeper: the positions the
// manifest holds, read from the directory (another process's commits
// included).
func (k *Keeper) StoredPositions(ctx context.Context, source string, partitions []string) (map[string]connector.Position, error) {
	return k.eos.stored(ctx, source, partitions)
}

// GroupPositions implements connector.PositionKeeper: the current group's
// positions, committed with its chunks.
func (k *Keeper) GroupPositions(ps []connector.GroupPosition) {
	k.gs.gpos = append(k.gs.gpos[:0], ps...)
}

var (
	_ connector.PositionKeeper = (*Keeper)(nil)
	_ connector.Sealer         = (*Keeper)(nil)
	_ connector.Describer      = (*Keeper)(nil)
)
