package postgres

import (
	"io"
	"strconv"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/record"
)

// group is the rows of one group, encoded for COPY, and what the sink needs to
// know about them: where each row came from, the partitions they belong to,
// and the positions the group reaches. Write fills it on the sink's
// goroutine; Seal hands it to the persister whole, so the two never share one.
type group struct {
	buf     []byte          // the rows in COPY text format, each ending in '\n'
	ends    []int           // ends[i] is the end of row i in buf
	origins []record.Origin // origins[i] is row i's record's origin
	parts   []partInfo      // the distinct partitions of the rows, in order of first row
	last    int             // index in parts of the last row's partition

	positions []connector.GroupPosition // from GroupPositions; the runtime's claim for this group
	seq       uint64                    // sealing order, for the persister's chain (see chain)
	turn      *turn                     // a sealed group's place in the order of COPYs (see ahead.go); nil otherwise
}

// partKey names a source partition.
type partKey struct{ source, partition string }

// partInfo is one partition of a group's rows.
type partInfo struct {
	key    partKey
	minOff int64 // the smallest Origin.Offset among its rows
}

func (g *group) reset() {
	g.buf = g.buf[:0]
	g.ends = g.ends[:0]
	clear(g.origins) // drop the strings
	g.origins = g.origins[:0]
	g.parts = g.parts[:0]
	g.last = 0
	g.positions = g.positions[:0]
	g.seq = 0
	g.turn = nil
}

func (g *group) rows() int { return len(g.ends) }

// row returns the bytes of row i, newline included.
func (g *group) row(i int) []byte {
	start := 0
	if i > 0 {
		start = g.ends[i-1]
	}
	return g.buf[start:g.ends[i]]
}

// added notes that a row ending at end was appended for a record from o.
func (g *group) added(end int, o record.Origin) {
	g.ends = append(g.ends, end)
	g.origins = append(g.origins, o)
	if n := len(g.parts); n > 0 {
		p := &g.parts[g.last]
		// Rows come in runs of one partition: compare with the last first.
		if p.key.partition == o.Partition && p.key.source == o.Source {
			p.minOff = min(p.minOff, o.Offset)
			return
		}
		for i := range g.parts {
			if p := &g.parts[i]; p.key.partition == o.Partition && p.key.source == o.Source {
				p.minOff = min(p.minOff, o.Offset)
				g.last = i
				return
			}
		}
	}
	g.parts = append(g.parts, partInfo{key: partKey{o.Source, o.Partition}, minOff: o.Offset})
	g.last = len(g.parts) - 1
}

// rowReader streams rows of a group as COPY data: the rows in sel (all rows
// when sel is nil), each prefixed with its index and a tab when seq is set
// (the staging table's order column in upsert mode).
type rowReader struct {
	g    *group
	sel  []int
	seq  bool
	next int    // the next entry of sel, or row when sel is nil
	rest []byte // the unsent part of the current row
	pre  []byte
}

func newRowReader(g *group, sel []int, seq bool) *rowReader {
	return &rowReader{g: g, sel: sel, seq: seq}
}

func (r *rowReader) count() int {
	if r.sel == nil {
		return r.g.rows()
	}
	return len(r.sel)
}

// Read implements io.Reader. Without a selection or a prefix it hands over
// runs of whole rows in one copy.
func (r *rowReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		if len(r.rest) > 0 {
			c := copy(p[n:], r.rest)
			n += c
			r.rest = r.rest[c:]
			continue
		}
		if r.next >= r.count() {
			if n == 0 {
				return 0, io.EOF
			}
			return n, nil
		}
		if r.sel == nil && !r.seq {
			// Every row, as it is: the rest of the buffer at once.
			start := 0
			if r.next > 0 {
				start = r.g.ends[r.next-1]
			}
			r.rest = r.g.buf[start:]
			r.next = r.g.rows()
			continue
		}
		i := r.next
		if r.sel != nil {
			i = r.sel[i]
		}
		r.next++
		if r.seq {
			r.pre = strconv.AppendInt(r.pre[:0], int64(i), 10)
			r.pre = append(r.pre, '\t')
			c := copy(p[n:], r.pre)
			n += c
			if c < len(r.pre) {
				// Rare: p is nearly full. Send the prefix's rest first.
				r.rest = append(r.pre[c:c:c], r.pre[c:]...)
				r.rest = append(r.rest, r.g.row(i)...)
				continue
			}
		}
		r.rest = r.g.row(i)
	}
	return n, nil
}
