package linesource

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/record"
)

// Source reads the lines of the files in a directory. Build it with New.
//
// The runtime calls Open, Poll and Seek from its polling goroutine, and
// Commit from its checkpointer goroutine, at any time, Poll running or not:
// mu guards what both touch. Close comes last, once.
type Source struct {
	name string
	cfg  Config
	host connector.Host

	mu    sync.Mutex
	parts []*part                       // every file, in name order
	byID  map[connector.Partition]*part // by the id Host.Assign returned
	next  int                           // the index in parts to poll next
	// committed is what the state file holds, and the next save will.
	committed map[string]connector.Position

	// saveMu keeps state file writes in the order of the commits they save.
	// Commit holds it, not mu, while it writes: a Poll never waits for a
	// commit's fsyncs.
	saveMu sync.Mutex
}

// part is one file: one partition.
type part struct {
	name string // the file's name in dir: the partition's stable name
	id   connector.Partition
	f    *os.File
	r    *bufio.Reader      // reads f from pos
	pos  connector.Position // where the next line begins
	size int64              // the file's length; it must not change
}

// New returns a source called name (the component's name in the pipeline).
// It only checks cfg: the runtime calls Open before anything else, and
// `weir validate` builds sources it never opens.
func New(name string, cfg *Config) (*Source, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Source{name: name, cfg: *cfg, byID: map[connector.Partition]*part{}}, nil
}

// Open reads the committed positions, opens every file and assigns each at
// its committed position (0 for a file never committed). A file shorter
// than its committed position was replaced or truncated: reading it again
// from 0 could duplicate it, from the old position could skip it, so Open
// stops and says so.
func (s *Source) Open(ctx context.Context, h connector.Host) error {
	s.host = h
	// Its directory is made now, so that the first Commit does not fail
	// for want of it. (Were the directory's own entry lost in a crash, so
	// would the positions be, and the files would be read again: more than
	// once, never less.)
	if err := os.MkdirAll(filepath.Dir(s.cfg.StateFile), 0o755); err != nil {
		return fmt.Errorf("linesource: making the state file's directory: %w", err)
	}
	committed, err := loadState(s.cfg.StateFile)
	if err != nil {
		return err
	}
	s.committed = committed
	entries, err := os.ReadDir(s.cfg.Dir)
	if err != nil {
		return fmt.Errorf("linesource: %w: dir must name an existing directory", err)
	}
	for _, e := range entries { // ReadDir sorts them by name
		if match, _ := filepath.Match(s.cfg.Pattern, e.Name()); !match || !e.Type().IsRegular() || strings.HasPrefix(e.Name(), ".") {
			continue // hidden files are other programs' temporary files
		}
		p, err := s.open(e.Name())
		if err != nil {
			return err // Close, which the runtime calls even now, closes what was opened
		}
		s.parts = append(s.parts, p)
	}
	if len(s.parts) == 0 {
		h.Logger().Warn("linesource: no file to read", "dir", s.cfg.Dir, "pattern", s.cfg.Pattern)
	}
	// Host methods are called without mu held: Revoke waits for the
	// runtime's final Commit of the partitions, and Commit needs mu. Keeping
	// to that for every Host method costs nothing.
	for _, p := range s.parts {
		id := h.Assign(p.name, p.pos)
		s.mu.Lock()
		p.id = id
		s.byID[id] = p
		s.mu.Unlock()
	}
	return nil
}

// open opens a file at its committed position.
func (s *Source) open(name string) (*part, error) {
	f, err := os.Open(filepath.Join(s.cfg.Dir, name))
	if err != nil {
		return nil, fmt.Errorf("linesource: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("linesource: %w", err)
	}
	pos := s.committed[name]
	if int64(pos) > fi.Size() {
		f.Close()
		return nil, fmt.Errorf("linesource: %s has %d bytes, fewer than its committed position %d: it was truncated or replaced; restore it, or remove its entry from %s to read it from the start",
			name, fi.Size(), pos, s.cfg.StateFile)
	}
	if _, err := f.Seek(int64(pos), io.SeekStart); err != nil {
		f.Close()
		return nil, fmt.Errorf("linesource: %w", err)
	}
	return &part{name: name, f: f, r: bufio.NewReaderSize(f, s.cfg.MaxLineBytes), pos: pos, size: fi.Size()}, nil
}

// Poll fills b with up to batch_size lines of the next file that has lines
// left, taking files in turn so that one large file does not hold the others
// back. It returns connector.ErrEndOfInput when every file is read to its
// end; the runtime may still Seek a file back and Poll again.
//
// Reading a local file never waits long, so Poll checks ctx only on entry; a
// source that waits for data (a network client) must return when ctx is
// done, keeping what it has fetched for the next Poll.
func (s *Source) Poll(ctx context.Context, b *connector.Batch) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	blank, err := s.poll(b)
	s.mu.Unlock()
	if blank > 0 {
		s.host.Skip("blank", blank)
	}
	return err
}

func (s *Source) poll(b *connector.Batch) (blank int64, err error) {
	for k := range len(s.parts) {
		i := (s.next + k) % len(s.parts)
		if p := s.parts[i]; int64(p.pos) < p.size {
			s.next = i + 1
			return s.readBatch(p, b)
		}
	}
	return 0, connector.ErrEndOfInput
}

// readBatch reads up to batch_size lines of p into b, and reports how many
// blank lines it passed over. A batch of blank lines only has no record but
// still ends further on: the runtime commits past them.
func (s *Source) readBatch(p *part, b *connector.Batch) (blank int64, err error) {
	for len(b.Records) < s.cfg.BatchSize && int64(p.pos) < p.size {
		line, err := p.r.ReadSlice('\n')
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			return blank, fmt.Errorf("linesource: %s: the line at byte %d is longer than max_line_bytes (%d): raise max_line_bytes", p.name, p.pos, s.cfg.MaxLineBytes)
		case err == io.EOF && len(line) == 0:
			return blank, fmt.Errorf("linesource: %s ends at byte %d, before its length when opened (%d): files must not change while they are read", p.name, p.pos, p.size)
		case err != nil && err != io.EOF:
			return blank, fmt.Errorf("linesource: reading %s: %w", p.name, err)
		}
		// io.EOF with a line: the file's last line, without a newline. The
		// file is complete (see the package doc), so it is a line like any.
		start := p.pos
		p.pos += connector.Position(len(line))
		text := bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("\r"))
		if len(text) == 0 {
			blank++
			continue
		}
		// line points into the reader's buffer, which the next read
		// overwrites; the record keeps its bytes until every sink is done
		// with it, so it gets a copy of its own.
		r := record.New(bytes.Clone(text))
		// The record's own position: where its line begins. The runtime
		// checks it (it must lie within the batch, in order) and relies on
		// it to skip what a sink already holds when a partition is replayed.
		r.SetOrigin(s.name, p.name, int64(start))
		b.Records = append(b.Records, r)
	}
	b.Partition = p.id
	b.End = p.pos // after the batch's last line: committed once the batch is delivered
	return blank, nil
}

// Commit saves the positions in the state file and returns once they are
// durable. It runs on the runtime's checkpointer goroutine while Poll may be
// running. The runtime reuses the slice: nothing of it is kept.
func (s *Source) Commit(ctx context.Context, commits []connector.Commit) error {
	s.saveMu.Lock()
	defer s.saveMu.Unlock()
	s.mu.Lock()
	for _, c := range commits {
		if p := s.byID[c.Partition]; p != nil {
			s.committed[p.name] = c.Position
		}
	}
	positions := maps.Clone(s.committed)
	s.mu.Unlock()
	// On failure the runtime offers these positions (or later ones) again
	// at its next commit.
	return saveState(s.cfg.StateFile, positions)
}

// Seek moves partition id back to pos, a position the runtime got from this
// source (a batch's end, or an Assign's start): the next batch of the file
// begins there. The runtime calls it to replay what a sink failed to write.
func (s *Source) Seek(ctx context.Context, id connector.Partition, pos connector.Position) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.byID[id]
	if p == nil {
		return fmt.Errorf("linesource: seek of partition %d, which this source never assigned", id)
	}
	if pos < 0 || int64(pos) > p.size {
		return fmt.Errorf("linesource: seek of %s to %d, outside the file (%d bytes)", p.name, pos, p.size)
	}
	if _, err := p.f.Seek(int64(pos), io.SeekStart); err != nil {
		return fmt.Errorf("linesource: seek of %s: %w", p.name, err)
	}
	p.r.Reset(p.f) // what it had buffered was read from the old position
	p.pos = pos
	return nil
}

// Close closes the files. The runtime calls it once, after the last Poll and
// the final Commit, and also after a failed Open: it closes what Open opened.
func (s *Source) Close(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	for _, p := range s.parts {
		if err := p.f.Close(); err != nil {
			errs = append(errs, fmt.Errorf("linesource: %w", err))
		}
	}
	s.parts = nil
	return errors.Join(errs...)
}

var _ connector.Source = (*Source)(nil)
