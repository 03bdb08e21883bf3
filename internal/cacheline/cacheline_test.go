package cacheline

import (
	"cmp"
	"runtime"
	"slices"
	"sync"
	"testing"
	"unsafe"
)

// TestMakeKeepsSlicesApart makes slices one after the other, as two workers
// make their counters, and checks that no two of them have elements within
// Size bytes of each other. Without the padding the allocator puts them
// side by side (8 bytes apart for one int).
func TestMakeKeepsSlicesApart(t *testing.T) {
	type region struct{ lo, hi uintptr }
	var regions []region
	var keep [][]int
	for n := 1; n <= 64; n++ {
		s := Make[int](n%5 + 1)
		keep = append(keep, s)
		lo := uintptr(unsafe.Pointer(&s[0]))
		regions = append(regions, region{lo, lo + uintptr(len(s))*unsafe.Sizeof(s[0])})
	}
	slices.SortFunc(regions, func(a, b region) int { return cmp.Compare(a.lo, b.lo) })
	for i := 1; i < len(regions); i++ {
		if gap := regions[i].lo - regions[i-1].hi; gap < Size {
			t.Fatalf("two made slices are %d bytes apart, want at least %d", gap, Size)
		}
	}
	runtime.KeepAlive(keep) // none was freed and its memory made again meanwhile
}

func TestCheckPadded(t *testing.T) {
	type padded struct {
		_ Pad
		_ int
		_ Pad
	}
	type headOnly struct {
		_ Pad
		_ int
	}
	type tailOnly struct {
		_ int
		_ Pad
	}
	if err := CheckPadded(padded{}); err != nil {
		t.Errorf("a struct between two Pads: %v", err)
	}
	for _, v := range []any{headOnly{}, tailOnly{}, struct{ n int }{}, 3, nil} {
		if CheckPadded(v) == nil {
			t.Errorf("CheckPadded(%T) passed", v)
		}
	}
}

func TestMakeLengthAndCapacity(t *testing.T) {
	for _, n := range []int{0, 1, 3, 100} {
		s := Make[bool](n)
		if len(s) != n || cap(s) != n {
			t.Errorf("Make[bool](%d): len %d cap %d, want both %d", n, len(s), cap(s), n)
		}
		for i, b := range s {
			if b {
				t.Fatalf("Make[bool](%d)[%d] is not zero", n, i)
			}
		}
	}
	if s := Make[struct{}](4); len(s) != 4 || cap(s) != 4 {
		t.Errorf("Make of a zero-size type: len %d cap %d, want 4 and 4", len(s), cap(s))
	}
	type wide [3 * Size]byte
	if s := Make[wide](2); len(s) != 2 || cap(s) != 2 {
		t.Errorf("Make of a type wider than Size: len %d cap %d, want 2 and 2", len(s), cap(s))
	}
}

// BenchmarkCounters has two goroutines each increment a counter of its own,
// as two workers count records: made one after the other with make, and
// with Make. On this project's 2-core machine the first costs several times
// the second per increment (see docs/DESIGN.md).
func BenchmarkCounters(b *testing.B) {
	for _, c := range []struct {
		name string
		make func() []int
	}{
		{"adjacent", func() []int { return make([]int, 1) }},
		{"apart", func() []int { return Make[int](1) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			x, y := c.make(), c.make()
			var wg sync.WaitGroup
			b.ResetTimer()
			for _, s := range [][]int{x, y} {
				wg.Go(func() {
					for range b.N {
						bump(s)
					}
				})
			}
			wg.Wait()
			if x[0] != b.N || y[0] != b.N {
				b.Fatalf("counted %d and %d, want %d", x[0], y[0], b.N)
			}
		})
	}
}

// bump is one record's count. It is not inlined, so that every call stores
// to memory as the workers' counting does, instead of in a register.
//
//go:noinline
func bump(s []int) { s[0]++ }
