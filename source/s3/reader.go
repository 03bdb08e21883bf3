package s3

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"

	"github.com/weir-etl/weir/internal/fileformat"
	"github.com/weir-etl/weir/internal/s3client"
	"github.com/weir-etl/weir/record"
)

// errChanged is a read of an object whose ETag is no longer the one
// listed: the object was replaced after weir began reading it.
var errChanged = errors.New("the object was replaced (its ETag changed)")

// ranges reads an object in ranged GETs of read_bytes, each bounded by
// request_timeout and made with If-Match of the listed ETag, so that a
// replaced object is noticed instead of read as a mix of two. A failed GET
// is retried with backoff until ctx ends (its failure reported to fail and
// the recovery to ok); a replaced object is errChanged.
type ranges struct {
	src  *Source
	key  string
	etag string
	size int64
	off  int64  // the next byte to fetch
	buf  []byte // the bytes fetched last, read by Read; reused for the next fetch
	i    int
	ctx  context.Context // the reader's own: it lives as long as the read, not a call
}

// Read implements io.Reader.
func (r *ranges) Read(p []byte) (int, error) {
	if r.i == len(r.buf) {
		if r.off >= r.size {
			return 0, io.EOF
		}
		if err := r.fetch(); err != nil {
			return 0, err
		}
	}
	n := copy(p, r.buf[r.i:])
	r.i += n
	return n, nil
}

// ReadAt implements io.ReaderAt for parquet: one GET per call (parquet-go
// reads a footer and whole column chunks).
func (r *ranges) ReadAt(p []byte, off int64) (int, error) {
	if off >= r.size {
		return 0, io.EOF
	}
	end := min(off+int64(len(p)), r.size)
	var n int
	err := r.src.retry(r.ctx, "reading "+r.key, func(ctx context.Context) error {
		b, err := r.get(ctx, off, end, p[:0])
		n = len(b)
		return err
	})
	if err == nil && n < len(p) {
		err = io.EOF
	}
	return n, err
}

func (r *ranges) fetch() error {
	end := min(r.off+int64(r.src.cfg.ReadBytes), r.size)
	return r.src.retry(r.ctx, "reading "+r.key, func(ctx context.Context) error {
		b, err := r.get(ctx, r.off, end, r.buf[:0])
		if err != nil {
			return err
		}
		r.buf, r.i, r.off = b, 0, end
		return nil
	})
}

// get reads bytes [from, to) of the object into dst (reusing its array
// when it is large enough; Read's bytes are copied out before the next
// fetch, so one array serves a whole read).
func (r *ranges) get(ctx context.Context, from, to int64, dst []byte) ([]byte, error) {
	ctx, cancel := r.src.cfg.Timeout(ctx)
	defer cancel()
	out, err := r.src.cl.GetObject(ctx, &s3.GetObjectInput{Bucket: &r.src.cfg.Bucket, Key: &r.key,
		Range: aws.String(fmt.Sprintf("bytes=%d-%d", from, to-1)), IfMatch: aws.String(`"` + r.etag + `"`)})
	if err != nil {
		if c := s3client.Code(err); c == "PreconditionFailed" || c == "NoSuchKey" {
			return nil, permanent{errChanged}
		}
		return nil, s3client.Explain(err)
	}
	defer out.Body.Close()
	b := dst[:0]
	if int64(cap(b)) < to-from {
		b = make([]byte, 0, to-from)
	}
	b = b[:to-from]
	if _, err := io.ReadFull(out.Body, b); err != nil {
		return nil, s3client.Explain(fmt.Errorf("s3: %s: reading bytes %d-%d: %w", r.key, from, to-1, err))
	}
	return b, nil
}

// permanent marks an error no retry changes.
type permanent struct{ err error }

func (p permanent) Error() string { return p.err.Error() }
func (p permanent) Unwrap() error { return p.err }

// chunk is one batch's worth of an object, as its reader hands it to Poll.
type chunk struct {
	recs    []record.Record
	end     int64 // the position after the chunk
	eof     bool  // the object is read to its end (or to where it changed)
	changed bool  // it was replaced while being read; end is where reading stopped
	skipped int64 // records dropped (on_invalid: skip)
	err     error // a record that cannot be read, on_invalid: error; the object stops before it
}

// decoder turns an object's records into batches; one per read.
type decoder struct {
	src    *Source
	o      *object
	part   string
	from   int64 // the position to start at
	header []string
	fields []string
}

// compressed reports the compression of key.
func (s *Source) compression(key string) string {
	if c := s.cfg.Compression; c != "auto" {
		return c
	}
	switch {
	case strings.HasSuffix(key, ".gz"):
		return "gzip"
	case strings.HasSuffix(key, ".zst"), strings.HasSuffix(key, ".zstd"):
		return "zstd"
	}
	return "none"
}

// read reads the object from d.from to its end, sending its chunks on out,
// until ctx ends.
func (d *decoder) read(ctx context.Context, out chan<- chunk) {
	var err error
	if d.src.cfg.Format == "parquet" {
		err = d.readParquet(ctx, out)
	} else {
		err = d.readLines(ctx, out)
	}
	if err == nil || ctx.Err() != nil {
		return
	}
	c := chunk{end: d.from, eof: true}
	if errors.Is(err, errChanged) {
		c.changed = true
	} else {
		c.err = err
	}
	select {
	case out <- c:
	case <-ctx.Done():
	}
}

func (d *decoder) send(ctx context.Context, out chan<- chunk, c chunk) bool {
	select {
	case out <- c:
		return true
	case <-ctx.Done():
		return false
	}
}

// readLines reads a line format (ndjson, lines, csv). An uncompressed
// object is read from the position on (and its header, for csv, from its
// start); a compressed one from its start, skipping what was read before.
func (d *decoder) readLines(ctx context.Context, out chan<- chunk) error {
	cfg := &d.src.cfg
	rr := &ranges{src: d.src, key: d.o.key, etag: d.o.etag, size: d.o.size, ctx: ctx}
	comp := d.src.compression(d.o.key)
	csv := cfg.Format == "csv"
	var in io.Reader = rr
	base := int64(0) // the stream offset the framer starts at
	if comp == "none" && d.from > 0 {
		if csv && cfg.CSVHeader {
			h := &ranges{src: d.src, key: d.o.key, etag: d.o.etag, size: d.o.size, ctx: ctx}
			f := &framer{r: h, bufSize: 64 << 10, maxLine: cfg.MaxLineBytes, csv: true, delim: cfg.CSVDelimiter[0]}
			rec, _, fr, err := f.next()
			if err != nil {
				return err
			}
			if fr == frameRecord {
				if err := d.setHeader(rec); err != nil {
					return err
				}
			}
		}
		rr.off, base = d.from, d.from
	}
	switch comp {
	case "gzip":
		zr, err := gzip.NewReader(rr)
		if err != nil {
			return d.corrupt(err)
		}
		in = zr
	case "zstd":
		zr, err := zstd.NewReader(rr, zstd.WithDecoderConcurrency(1))
		if err != nil {
			return d.corrupt(err)
		}
		defer zr.Close()
		in = zr.IOReadCloser()
	}
	f := &framer{r: in, bufSize: min(cfg.ReadBytes, 1<<20), maxLine: cfg.MaxLineBytes, csv: csv, delim: cfg.CSVDelimiter[0], off: base}
	c := chunk{recs: make([]record.Record, 0, cfg.BatchSize)}
	size := 0
	for {
		rec, start, fr, err := f.next()
		if err != nil {
			if errors.Is(err, errChanged) || ctx.Err() != nil {
				return err
			}
			return d.corrupt(err)
		}
		switch fr {
		case frameEnd:
			c.end, c.eof = f.pos(), true
			d.send(ctx, out, c)
			return nil
		case frameTooLong:
			if start < d.from {
				continue
			}
			if cfg.OnInvalid != "skip" {
				c.end = start
				c.err = fmt.Errorf("s3: %s: record at byte %d is longer than max_line_bytes (%d)", d.o.key, start, cfg.MaxLineBytes)
				d.send(ctx, out, c)
				return nil
			}
			c.skipped++
			continue
		}
		if start < d.from {
			if csv && start == 0 && cfg.CSVHeader {
				if err := d.setHeader(rec); err != nil {
					return err
				}
			}
			continue
		}
		var r record.Record
		keep, err := d.decodeLine(rec, start, &r)
		if err != nil {
			if cfg.OnInvalid == "skip" {
				c.skipped++
				continue
			}
			c.end = start
			c.err = fmt.Errorf("s3: %s: record at byte %d: %w", d.o.key, start, err)
			d.send(ctx, out, c)
			return nil
		}
		if !keep {
			continue
		}
		r.SetOrigin(d.src.name, d.part, start)
		c.recs = append(c.recs, r)
		size += len(rec)
		if len(c.recs) >= cfg.BatchSize || size >= cfg.BatchBytes {
			c.end = f.pos()
			if !d.send(ctx, out, c) {
				return ctx.Err()
			}
			c, size = chunk{recs: make([]record.Record, 0, cfg.BatchSize)}, 0
		}
	}
}

func (d *decoder) corrupt(err error) error {
	return permanent{fmt.Errorf("s3: %s: %w", d.o.key, err)}
}

// decodeLine turns one framed record into r; keep false for a record that
// holds nothing (a blank line of ndjson or csv, a csv header).
func (d *decoder) decodeLine(raw []byte, start int64, r *record.Record) (bool, error) {
	cfg := &d.src.cfg
	if start == 0 && cfg.Format != "lines" {
		raw = bytes.TrimPrefix(raw, fileformat.BOM)
	}
	switch cfg.Format {
	case "ndjson":
		raw = fileformat.TrimCR(raw)
		if len(raw) == 0 {
			return false, nil
		}
		*r = record.New(raw)
	case "lines":
		*r = record.New(fileformat.TrimCR(raw))
	case "csv":
		if len(fileformat.TrimCR(raw)) == 0 {
			return false, nil
		}
		if start == 0 && cfg.CSVHeader {
			return false, d.setHeader(raw)
		}
		if d.header == nil {
			d.header = cfg.CSVColumns
		}
		fields, err := fileformat.SplitCSV(d.fields[:0], raw, cfg.CSVDelimiter[0])
		d.fields = fields
		if err != nil {
			return false, err
		}
		if len(fields) != len(d.header) {
			return false, fmt.Errorf("the record has %d fields, the header %d", len(fields), len(d.header))
		}
		*r = record.New(fileformat.AppendCSVObject(make([]byte, 0, fileformat.CSVObjectSize(d.header, fields)), d.header, fields))
	}
	return true, nil
}

// setHeader takes the field names from a header record.
func (d *decoder) setHeader(raw []byte) error {
	cfg := &d.src.cfg
	fields, err := fileformat.SplitCSV(nil, bytes.TrimPrefix(raw, fileformat.BOM), cfg.CSVDelimiter[0])
	if err != nil {
		return permanent{fmt.Errorf("s3: %s: the csv header does not parse: %w", d.o.key, err)}
	}
	if cols := cfg.CSVColumns; len(cols) > 0 {
		if len(fields) != len(cols) {
			return permanent{fmt.Errorf("s3: %s: the csv header has %d fields, csv_columns names %d: make them agree", d.o.key, len(fields), len(cols))}
		}
		d.header = cols
		return nil
	}
	seen := map[string]bool{}
	for _, n := range fields {
		if seen[n] {
			return permanent{fmt.Errorf("s3: %s: the csv header names %q twice: rename one, or name the fields with csv_columns", d.o.key, n)}
		}
		seen[n] = true
	}
	d.header = fields
	return nil
}

// readParquet reads a parquet object from row d.from on: each row is a JSON
// object whose members are the file's columns in its order, and its
// position is the row's index (the batch's end is the next row's).
func (d *decoder) readParquet(ctx context.Context, out chan<- chunk) error {
	rr := &ranges{src: d.src, key: d.o.key, etag: d.o.etag, size: d.o.size, ctx: ctx}
	f, err := parquet.OpenFile(rr, d.o.size, parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true))
	if err != nil {
		if errors.Is(err, errChanged) || ctx.Err() != nil {
			return err
		}
		return d.corrupt(fmt.Errorf("not a parquet file this reader can read: %w", err))
	}
	enc := newRowEncoder(f.Schema())
	rd := parquet.NewReader(f)
	defer rd.Close()
	if d.from > 0 {
		if err := rd.SeekToRow(d.from); err != nil {
			return d.corrupt(err)
		}
	}
	rows := make([]parquet.Row, min(d.src.cfg.BatchSize, 256))
	idx := d.from
	c := chunk{}
	size := 0
	for {
		n, err := rd.ReadRows(rows)
		for _, row := range rows[:n] {
			b, rerr := enc.encode(nil, row)
			if rerr != nil {
				c.end = idx
				c.err = fmt.Errorf("s3: %s: row %d: %w", d.o.key, idx, rerr)
				d.send(ctx, out, c)
				return nil
			}
			r := record.New(b)
			r.SetOrigin(d.src.name, d.part, idx)
			c.recs = append(c.recs, r)
			size += len(b)
			idx++
			if len(c.recs) >= d.src.cfg.BatchSize || size >= d.src.cfg.BatchBytes {
				c.end = idx
				if !d.send(ctx, out, c) {
					return ctx.Err()
				}
				c, size = chunk{}, 0
			}
		}
		if err == io.EOF || (err == nil && n == 0) {
			c.end, c.eof = idx, true
			d.send(ctx, out, c)
			return nil
		}
		if err != nil {
			if errors.Is(err, errChanged) || ctx.Err() != nil {
				return err
			}
			return d.corrupt(err)
		}
	}
}

// rowEncoder writes parquet rows as JSON objects, exactly: integers as
// their literals, doubles in their shortest form, decimals as decimal
// literals, dates and timestamps as strings (RFC 3339 for timestamps,
// with a Z when the column is adjusted to UTC), byte arrays as strings of
// their bytes. Nested columns (lists, structs, maps) are written from the
// reconstructed value.
type rowEncoder struct {
	schema *parquet.Schema
	fields []parquet.Field
	leaf   []int // per top-level field, its column index if it is a plain leaf, else -1
	types  []parquet.Type
}

func newRowEncoder(s *parquet.Schema) *rowEncoder {
	e := &rowEncoder{schema: s, fields: s.Fields()}
	col := 0
	for _, f := range e.fields {
		n := leaves(f)
		if f.Leaf() && !f.Repeated() {
			e.leaf = append(e.leaf, col)
		} else {
			e.leaf = append(e.leaf, -1)
		}
		e.types = append(e.types, f.Type())
		col += n
	}
	return e
}

func leaves(n parquet.Node) int {
	if n.Leaf() {
		return 1
	}
	t := 0
	for _, f := range n.Fields() {
		t += leaves(f)
	}
	return t
}

func (e *rowEncoder) encode(b []byte, row parquet.Row) ([]byte, error) {
	var nested map[string]any
	b = append(b, '{')
	for i, f := range e.fields {
		if i > 0 {
			b = append(b, ',')
		}
		b = record.AppendString(b, f.Name())
		b = append(b, ':')
		if col := e.leaf[i]; col >= 0 {
			var v parquet.Value
			found := false
			for _, x := range row {
				if x.Column() == col {
					v, found = x, true
					break
				}
			}
			if !found || v.IsNull() {
				b = append(b, "null"...)
				continue
			}
			var err error
			if b, err = appendLeaf(b, e.types[i], v); err != nil {
				return nil, fmt.Errorf("column %s: %w", f.Name(), err)
			}
			continue
		}
		if nested == nil {
			nested = map[string]any{}
			if err := e.schema.Reconstruct(&nested, row); err != nil {
				return nil, err
			}
		}
		b = appendAny(b, nested[f.Name()])
	}
	return append(b, '}'), nil
}

// appendLeaf writes one scalar value of type t.
func appendLeaf(b []byte, t parquet.Type, v parquet.Value) ([]byte, error) {
	lt := t.LogicalType()
	var lv format.LogicalTypeValue
	if lt != nil {
		lv = lt.Value
	}
	switch v.Kind() {
	case parquet.Boolean:
		return strconv.AppendBool(b, v.Boolean()), nil
	case parquet.Int32, parquet.Int64:
		i := v.Int64()
		if v.Kind() == parquet.Int32 {
			i = int64(v.Int32())
		}
		switch x := lv.(type) {
		case *format.DateType:
			return strconv.AppendQuote(b, time.Unix(i*86400, 0).UTC().Format(time.DateOnly)), nil
		case *format.TimestampType:
			return appendTimestamp(b, i, x), nil
		case *format.DecimalType:
			return appendDecimal(b, big.NewInt(i), int(x.Scale)), nil
		}
		return strconv.AppendInt(b, i, 10), nil
	case parquet.Float, parquet.Double:
		f := v.Double()
		if v.Kind() == parquet.Float {
			f = float64(v.Float())
		}
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, fmt.Errorf("%v has no JSON form", f)
		}
		return strconv.AppendFloat(b, f, 'g', -1, 64), nil
	case parquet.ByteArray, parquet.FixedLenByteArray:
		if x, ok := lv.(*format.DecimalType); ok {
			return appendDecimal(b, twos(v.ByteArray()), int(x.Scale)), nil
		}
		return record.AppendString(b, string(v.ByteArray())), nil
	case parquet.Int96:
		return strconv.AppendQuote(b, v.Int96().String()), nil
	}
	return nil, fmt.Errorf("a value of kind %v this reader does not know", v.Kind())
}

func appendTimestamp(b []byte, n int64, t *format.TimestampType) []byte {
	var ts time.Time
	switch t.Unit.Value.(type) {
	case *format.MilliSeconds:
		ts = time.UnixMilli(n)
	case *format.NanoSeconds:
		ts = time.Unix(0, n)
	default:
		ts = time.UnixMicro(n)
	}
	ts = ts.UTC()
	layout := "2006-01-02T15:04:05.999999999Z07:00"
	if !t.IsAdjustedToUTC {
		layout = "2006-01-02T15:04:05.999999999"
	}
	return strconv.AppendQuote(b, ts.Format(layout))
}

// twos reads big-endian two's complement.
func twos(p []byte) *big.Int {
	u := new(big.Int).SetBytes(p)
	if len(p) > 0 && p[0]&0x80 != 0 {
		u.Sub(u, new(big.Int).Lsh(big.NewInt(1), uint(8*len(p))))
	}
	return u
}

// appendDecimal writes u × 10^-scale as a decimal literal.
func appendDecimal(b []byte, u *big.Int, scale int) []byte {
	s := u.String()
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	if neg {
		b = append(b, '-')
	}
	if scale <= 0 {
		return append(b, s...)
	}
	for len(s) <= scale {
		s = "0" + s
	}
	return append(append(append(b, s[:len(s)-scale]...), '.'), s[len(s)-scale:]...)
}

// appendAny writes a reconstructed nested value.
func appendAny(b []byte, v any) []byte {
	switch x := v.(type) {
	case nil:
		return append(b, "null"...)
	case bool:
		return strconv.AppendBool(b, x)
	case int32:
		return strconv.AppendInt(b, int64(x), 10)
	case int64:
		return strconv.AppendInt(b, x, 10)
	case int:
		return strconv.AppendInt(b, int64(x), 10)
	case float32:
		return strconv.AppendFloat(b, float64(x), 'g', -1, 32)
	case float64:
		return strconv.AppendFloat(b, x, 'g', -1, 64)
	case string:
		return record.AppendString(b, x)
	case []byte:
		return record.AppendString(b, string(x))
	case time.Time:
		return strconv.AppendQuote(b, x.Format(time.RFC3339Nano))
	case []any:
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendAny(b, e)
		}
		return append(b, ']')
	case map[string]any:
		b = append(b, '{')
		first := true
		for _, k := range sortedKeys(x) {
			if !first {
				b = append(b, ',')
			}
			first = false
			b = record.AppendString(b, k)
			b = append(b, ':')
			b = appendAny(b, x[k])
		}
		return append(b, '}')
	}
	return strconv.AppendQuote(b, fmt.Sprint(v))
}
