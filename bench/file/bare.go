package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"time"

	"github.com/weir-etl/weir/record"
)

// The bare loop: what a hand-written Go program does to get weir's result
// with weir's durability, and nothing else. One goroutine reads each input
// file with reads of weir's size (256 KiB), cuts lines, checks that each is
// a JSON object and finds the field the filter reads with the scanner weir
// uses (record.Lookup, the fastest validating scanner at hand; a map renames
// with record.Obj, as weir's map does), and writes the records it keeps,
// each with its line end, into chunk files of weir's group size (10,000
// records or 8 MiB) through a 256 KiB buffer: each chunk is written to a
// hidden file, fsynced, renamed and its directory fsynced, and then a
// position file (every input's offset after the last record in a durable
// chunk) is written and fsynced. With two sinks every kept record goes to
// two such chunk sequences.
//
// It never looks at acknowledgements, batches, channels or metrics; it
// validates every record once, as weir does (the sink trusts a record a
// condition already checked).

const (
	bareReadBytes    = 256 << 10 // source/file.DefaultReadBufferBytes
	bareChunkRecords = 10000     // pipeline.DefaultBatchMaxRecords
	bareChunkBytes   = 8 << 20   // pipeline.DefaultBatchMaxBytes
	bareWriteBytes   = 256 << 10 // sink/file.DefaultBufferBytes
)

// bareOut is one sink's sequence of chunk files.
type bareOut struct {
	dir   string
	seq   int
	f     *os.File
	buf   []byte
	n     int
	bytes int
}

func (o *bareOut) add(line []byte) error {
	if o.f == nil {
		o.seq++
		f, err := os.OpenFile(filepath.Join(o.dir, fmt.Sprintf(".part-%06d.tmp", o.seq)), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			return err
		}
		o.f = f
	}
	if len(o.buf)+len(line)+1 > cap(o.buf) {
		if _, err := o.f.Write(o.buf); err != nil {
			return err
		}
		o.buf = o.buf[:0]
	}
	o.buf = append(append(o.buf, line...), '\n')
	o.n++
	o.bytes += len(line) + 1
	return nil
}

func (o *bareOut) full() bool { return o.n >= bareChunkRecords || o.bytes >= bareChunkBytes }

// finish makes the open chunk durable and visible.
func (o *bareOut) finish() error {
	if o.f == nil {
		return nil
	}
	if _, err := o.f.Write(o.buf); err != nil {
		return err
	}
	o.buf = o.buf[:0]
	if err := o.f.Sync(); err != nil {
		return err
	}
	if err := o.f.Close(); err != nil {
		return err
	}
	if err := os.Rename(o.f.Name(), filepath.Join(o.dir, fmt.Sprintf("part-%06d.ndjson", o.seq))); err != nil {
		return err
	}
	o.f, o.n, o.bytes = nil, 0, 0
	d, err := os.Open(o.dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// barePositions is the bare loops' position file: every input's offset
// after its last record in a durable chunk, rewritten and fsynced.
type barePositions struct {
	f     *os.File
	paths []string
	at    []int64 // at[i] is paths[i]'s offset
	buf   []byte
}

func openPositions(out string, paths []string) (*barePositions, error) {
	f, err := os.OpenFile(filepath.Join(out, "positions"), os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	return &barePositions{f: f, paths: paths, at: make([]int64, len(paths))}, nil
}

// persist writes the positions and fsyncs them.
func (p *barePositions) persist() error {
	p.buf = p.buf[:0]
	for i, at := range p.at {
		p.buf = fmt.Appendf(p.buf, "%s %d\n", p.paths[i], at)
	}
	if _, err := p.f.WriteAt(p.buf, 0); err != nil {
		return err
	}
	return p.f.Sync()
}

// bareRun runs the bare loop for shape ("filter", "map", "map5", "filter2":
// the filter with two sinks, or "filterp": the filter pipelined, see
// barepipe.go) over the .ndjson files in in, writing under out.
func bareRun(shape, in, out string) error {
	if shape == "filterp" {
		return barePipelined(in, out)
	}
	paths, err := filepath.Glob(filepath.Join(in, "*.ndjson"))
	if err != nil {
		return err
	}
	sinks := 1
	if shape == "filter2" {
		sinks = 2
	}
	outs := make([]*bareOut, sinks)
	for i := range outs {
		outs[i] = &bareOut{dir: filepath.Join(out, string(rune('a'+i))), buf: make([]byte, 0, bareWriteBytes)}
		if err := os.MkdirAll(outs[i].dir, 0o755); err != nil {
			return err
		}
	}
	pos, err := openPositions(out, paths)
	if err != nil {
		return err
	}
	defer pos.f.Close()
	// durable finishes every sink's chunk and persists the positions.
	durable := func() error {
		for _, o := range outs {
			if err := o.finish(); err != nil {
				return err
			}
		}
		return pos.persist()
	}

	names := []string{"id"}
	vals := make([]record.Value, 1)
	found := make([]bool, 1)
	var obj record.Obj
	var mapped []byte
	buf := make([]byte, bareReadBytes)
	for fi, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		var off int64 // file offset of buf[0]
		r, w := 0, 0  // buf[r:w] is read and not yet cut
		for {
			if r > 0 {
				copy(buf, buf[r:w])
				off += int64(r)
				w -= r
				r = 0
			}
			n, err := f.Read(buf[w:])
			w += n
			if err != nil && !errors.Is(err, io.EOF) {
				return err
			}
			if n == 0 {
				if r != w {
					return fmt.Errorf("%s: the last line has no line end", p)
				}
				break
			}
			for {
				i := bytes.IndexByte(buf[r:w], '\n')
				if i < 0 {
					break
				}
				line := buf[r : r+i]
				r += i + 1
				if len(line) == 0 {
					continue
				}
				rec := record.New(line)
				var keep []byte
				switch shape {
				case "map5":
					if err := rec.Index(&obj); err != nil {
						return fmt.Errorf("%s at %d: %v", p, off+int64(r), err)
					}
					if mapped, err = fiveComputed(&obj, mapped[:0]); err != nil {
						return fmt.Errorf("%s at %d: %v", p, off+int64(r), err)
					}
					keep = mapped
				case "map":
					if err := rec.Index(&obj); err != nil {
						return fmt.Errorf("%s at %d: %v", p, off+int64(r), err)
					}
					obj.Rename("tag", "label")
					mapped = obj.AppendJSON(mapped[:0])
					keep = mapped
				default:
					if err := rec.Lookup(names, vals, found); err != nil {
						return fmt.Errorf("%s at %d: %v", p, off+int64(r), err)
					}
					id, err := vals[0].Int()
					if err != nil || !found[0] {
						return fmt.Errorf("%s at %d: id is not an integer", p, off+int64(r))
					}
					if id%2 == 0 {
						keep = line
					}
				}
				if keep == nil {
					continue
				}
				for _, o := range outs {
					if err := o.add(keep); err != nil {
						return err
					}
				}
				pos.at[fi] = off + int64(r)
				if outs[0].full() {
					if err := durable(); err != nil {
						return err
					}
				}
			}
		}
		f.Close()
		pos.at[fi] = off + int64(w)
	}
	return durable()
}

// bareMain is the bare loop as a child process: go run ./bench/file
// -bare filter -bare-in DIR -bare-out DIR [-bare-cpuprofile FILE].
func bareMain(shape, in, out, prof string) {
	if prof != "" {
		f, err := os.Create(prof)
		if err != nil {
			log.Fatalf("bare %s: %v", shape, err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			log.Fatalf("bare %s: %v", shape, err)
		}
		defer func() {
			pprof.StopCPUProfile()
			f.Close()
		}()
	}
	if err := bareRun(shape, in, out); err != nil {
		log.Fatalf("bare %s: %v", shape, err)
	}
	fmt.Println(strconv.Quote(shape) + " done")
}

// fiveComputed is map5YAML's work by hand on an indexed record: the same
// reads and writes through weir's record model, with the computations in
// Go (a concatenation, a checked product, a conditional, time.Parse and
// AppendFormat, a nested read).
func fiveComputed(o *record.Obj, dst []byte) ([]byte, error) {
	first, _ := o.Get("first")
	last, _ := o.Get("last")
	qv, _ := o.Get("qty")
	pv, _ := o.Get("price_cents")
	ts, _ := o.Get("ts")
	user, _ := o.Get("user")
	q, err1 := qv.Int()
	pc, err2 := pv.Int()
	if err1 != nil || err2 != nil {
		return dst, fmt.Errorf("qty or price_cents is not an integer")
	}
	total := q * pc
	if pc != 0 && total/pc != q {
		return dst, fmt.Errorf("overflow")
	}
	tier := "std"
	if total > 3000 {
		tier = "gold"
	}
	t, err := time.Parse(time.RFC3339, ts.Text())
	if err != nil {
		return dst, err
	}
	addr, _ := user.Get("address")
	city, _ := addr.Get("city")
	var day [10]byte
	o.Set("name", record.StringValue(first.Text()+" "+last.Text()))
	o.Set("total", record.IntValue(total))
	o.Set("tier", record.StringValue(tier))
	o.Set("day", record.StringValue(string(t.AppendFormat(day[:0], "2006-01-02"))))
	o.Set("city", city)
	return o.AppendJSON(dst), nil
}
