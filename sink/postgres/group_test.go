package postgres

import (
	"testing"

	"github.com/weir-etl/weir/record"
)

func originAt(off int64) record.Origin {
	return record.Origin{Source: "in", Partition: "p", Offset: off}
}

// The filter that leaves out rows stored positions cover: nil (all rows)
// unless some row is covered, and then exactly the rows at or past the
// position of their own partition.
func TestSelectRows(t *testing.T) {
	var g group
	add := func(part string, off int64) {
		g.buf = append(g.buf, "r\n"...)
		g.added(len(g.buf), record.Origin{Source: "in", Partition: part, Offset: off})
	}
	add("a", 10)
	add("b", 5)
	add("a", 11)
	add("b", 6)
	add("a", 12)
	s := &Sink{}
	if sel := s.selectRows(&g, map[partKey]int64{{"in", "a"}: 10, {"in", "b"}: 3}); sel != nil {
		t.Fatalf("nothing is covered, but the selection is %v", sel)
	}
	sel := s.selectRows(&g, map[partKey]int64{{"in", "a"}: 12, {"in", "b"}: 6})
	if want := []int{3, 4}; len(sel) != 2 || sel[0] != want[0] || sel[1] != want[1] {
		t.Fatalf("selection %v, want %v", sel, want)
	}
	if len(g.parts) != 2 || g.parts[0].minOff != 10 || g.parts[1].minOff != 5 {
		t.Fatalf("partitions %+v", g.parts)
	}
}
