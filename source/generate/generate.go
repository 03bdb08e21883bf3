// Package generate is a source that makes records from a template: for
// demonstrations, load tests and the conformance suite.
//
// Each partition is named "<source>/<n>" and numbers its records 0, 1, 2, ...;
// a record's position is its sequence number, and a batch ends at the next
// sequence to generate. Replays (Seek) produce exactly the same records.
package generate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/record"
)

// DefaultTemplate is the template used when none is set.
const DefaultTemplate = `{"id":{{id}},"seq":{{seq}}}`

// Config configures a generate source.
type Config struct {
	// Count is how many records to generate in all partitions together; 0 means
	// without end.
	Count int64 `yaml:"count" unit:"records" doc:"How many records to generate, over all partitions together; 0 means without end."`
	// Rate limits generation to this many records per second; 0 means as fast
	// as possible.
	Rate float64 `yaml:"rate" unit:"records/s" doc:"At most this many records per second; 0 means as fast as possible."`
	// BatchSize is the number of records per poll batch (default 500).
	BatchSize int `yaml:"batch_size" unit:"records" doc:"Records per poll batch."`
	// Partitions is the number of partitions (default 1).
	Partitions int `yaml:"partitions" doc:"Partitions, named <source>/0, <source>/1, ...; each numbers its records from 0."`
	// Template is the value of every record: {{id}} becomes a number unique
	// across partitions, {{seq}} the record's sequence number in its partition.
	Template string `yaml:"template" doc:"The value of every record: {{id}} becomes a number unique across partitions, {{seq}} the record's sequence number in its partition."`

	// Offsets, when set, keeps committed positions across instances, so a new
	// source built with the same Offsets resumes where the last one committed
	// (the conformance suite restarts sources this way). Not configurable in YAML.
	Offsets *Offsets `yaml:"-"`
}

// NewConfig returns a Config with its defaults.
func NewConfig() *Config {
	return &Config{BatchSize: 500, Partitions: 1, Template: DefaultTemplate}
}

// Validate reports every bad option, each as a *connector.FieldError naming
// it and the fix.
func (c *Config) Validate() error {
	var errs []error
	if c.Count < 0 {
		errs = append(errs, connector.Fieldf("count", "must be 0 (without end) or more"))
	}
	if !(c.Rate >= 0) { // NaN too
		errs = append(errs, connector.Fieldf("rate", "must be 0 (as fast as possible) or more"))
	}
	if c.BatchSize <= 0 {
		errs = append(errs, connector.Fieldf("batch_size", "must be more than 0"))
	}
	if c.Partitions <= 0 || c.Partitions > 1<<16 {
		errs = append(errs, connector.Fieldf("partitions", "must be between 1 and 65536"))
	}
	if c.Template == "" {
		errs = append(errs, connector.Fieldf("template", "must not be empty: write the value of every record, like %s", DefaultTemplate))
	}
	return errors.Join(errs...)
}

// Offsets holds committed positions by partition name. It is safe for
// concurrent use.
type Offsets struct {
	mu sync.Mutex
	m  map[string]connector.Position
}

// Get returns the committed position of partition name (0 if none).
func (o *Offsets) Get(name string) connector.Position {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.m[name]
}

func (o *Offsets) set(name string, p connector.Position) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.m == nil {
		o.m = map[string]connector.Position{}
	}
	o.m[name] = p
}

func init() {
	connector.RegisterSource(connector.SourceDef[Config]{
		Name:   "generate",
		Doc:    "generates records from a JSON template, for demonstrations and load tests",
		Config: NewConfig,
		Build:  func(name string, c *Config) (connector.Source, error) { return New(name, *c) },
	})
}

// Source is a generate source.
type Source struct {
	name string
	cfg  Config
	tmpl []segment

	parts []part // by connector.Partition; written by Poll and Seek
	mu    sync.Mutex
	next  int // partition to poll next
	start time.Time
	made  int64 // records generated, for the rate limit
}

type part struct {
	name  string
	seq   int64 // next sequence number
	limit int64 // records this partition generates; -1 without end
}

type segment struct {
	lit []byte
	sub byte // 0, 'i' (id) or 's' (seq)
}

// New returns a generate source called name.
func New(name string, cfg Config) (*Source, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("generate: %w", err)
	}
	if cfg.Offsets == nil {
		cfg.Offsets = new(Offsets)
	}
	return &Source{name: name, cfg: cfg, tmpl: compile(cfg.Template)}, nil
}

func compile(t string) []segment {
	var segs []segment
	rest := t
	for {
		i := indexSub(rest)
		if i < 0 {
			return append(segs, segment{lit: []byte(rest)})
		}
		sub := byte('i')
		if rest[i+2] == 's' {
			sub = 's'
		}
		segs = append(segs, segment{lit: []byte(rest[:i]), sub: sub})
		if sub == 'i' {
			rest = rest[i+len("{{id}}"):]
		} else {
			rest = rest[i+len("{{seq}}"):]
		}
	}
}

func indexSub(s string) int {
	a, b := bytes.Index([]byte(s), []byte("{{id}}")), bytes.Index([]byte(s), []byte("{{seq}}"))
	switch {
	case a < 0:
		return b
	case b < 0:
		return a
	}
	return min(a, b)
}

// Open assigns every partition at its committed position.
func (s *Source) Open(ctx context.Context, h connector.Host) error {
	n := int64(s.cfg.Partitions)
	s.parts = make([]part, n)
	for i := range s.parts {
		name := fmt.Sprintf("%s/%d", s.name, i)
		limit := int64(-1)
		if s.cfg.Count > 0 {
			limit = s.cfg.Count / n
			if int64(i) < s.cfg.Count%n {
				limit++
			}
		}
		start := s.cfg.Offsets.Get(name)
		p := h.Assign(name, start)
		if int(p) != i {
			return fmt.Errorf("generate: host assigned partition %s id %d, expected %d", name, p, i)
		}
		s.parts[i] = part{name: name, seq: int64(start), limit: limit}
	}
	s.start = time.Now()
	return nil
}

// Poll generates the next batch, taking partitions in turn.
func (s *Source) Poll(ctx context.Context, b *connector.Batch) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var p *part
	var pi int
	for k := range s.parts {
		pi = (s.next + k) % len(s.parts)
		if c := &s.parts[pi]; c.limit < 0 || c.seq < c.limit {
			p = c
			break
		}
	}
	if p == nil {
		return connector.ErrEndOfInput
	}
	s.next = pi + 1
	n := int64(s.cfg.BatchSize)
	if p.limit >= 0 {
		n = min(n, p.limit-p.seq)
	}
	if err := s.throttle(ctx, n); err != nil {
		return err
	}
	// One allocation for the batch's values, not one per record.
	buf := make([]byte, 0, int(n)*(len(s.cfg.Template)+16))
	np := int64(len(s.parts))
	for k := range n {
		seq := p.seq + k
		off := len(buf)
		for _, sg := range s.tmpl {
			buf = append(buf, sg.lit...)
			switch sg.sub {
			case 'i':
				buf = strconv.AppendInt(buf, seq*np+int64(pi), 10)
			case 's':
				buf = strconv.AppendInt(buf, seq, 10)
			}
		}
		r := record.New(buf[off:len(buf):len(buf)])
		r.SetOrigin(s.name, p.name, seq)
		b.Records = append(b.Records, r)
	}
	p.seq += n
	s.made += n
	b.Partition = connector.Partition(pi)
	b.End = connector.Position(p.seq)
	return nil
}

// throttle waits until generating n more records keeps to the rate.
func (s *Source) throttle(ctx context.Context, n int64) error {
	if s.cfg.Rate <= 0 {
		return nil
	}
	due := s.start.Add(time.Duration(float64(s.made+n) / s.cfg.Rate * float64(time.Second)))
	d := time.Until(due)
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Commit records positions in the source's Offsets.
// It takes no lock shared with Poll (partition names are fixed at Open), so a
// Poll waiting for its rate never delays a commit.
func (s *Source) Commit(ctx context.Context, cs []connector.Commit) error {
	for _, c := range cs {
		if int(c.Partition) >= len(s.parts) {
			return fmt.Errorf("generate: commit of unknown partition %d", c.Partition)
		}
		name := s.parts[c.Partition].name
		if c.Position < s.cfg.Offsets.Get(name) {
			return fmt.Errorf("generate: commit of %s at %d is behind the committed %d", name, c.Position, s.cfg.Offsets.Get(name))
		}
		s.cfg.Offsets.set(name, c.Position)
	}
	return nil
}

// Seek makes partition p generate from sequence pos again.
func (s *Source) Seek(ctx context.Context, p connector.Partition, pos connector.Position) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if int(p) >= len(s.parts) {
		return fmt.Errorf("generate: seek of unknown partition %d", p)
	}
	s.parts[p].seq = int64(pos)
	return nil
}

// Close does nothing: a generate source holds no resources.
func (s *Source) Close(ctx context.Context) error { return nil }

// Offsets returns where committed positions are kept.
func (s *Source) Offsets() *Offsets { return s.cfg.Offsets }
