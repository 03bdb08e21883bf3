// Package cacheline keeps state that one goroutine writes for every record
// off the cache lines that other goroutines write.
//
// Two goroutines on two cores that write to the same cache line, even to
// different words of it, pass the line back and forth on every write (false
// sharing): a counter incremented per record then costs a cross-core
// transfer instead of a cycle. Go's allocator puts small objects of one size
// side by side, so two workers' counters made one after the other, or their
// evaluation states, share lines unless something keeps them apart. Pad does
// that inside a struct; Make does it for a slice.
package cacheline

import (
	"fmt"
	"reflect"
	"unsafe"
)

// Size is the distance that keeps two writers apart: two 64-byte lines, the
// line size of amd64 and most arm64 cores, because amd64 cores also fetch
// lines in adjacent pairs, and 128 is Apple's line size.
const Size = 128

// Pad, as the first and the last field of a struct, keeps the fields between
// on lines that no other allocation shares.
type Pad [Size]byte

// Make returns a slice of n zero Ts whose elements share no cache line with
// any other allocation. Its capacity is n: an append past it allocates a
// slice without the padding.
func Make[T any](n int) []T {
	var zero T
	size := int(unsafe.Sizeof(zero))
	if size == 0 {
		return make([]T, n)
	}
	pad := (Size + size - 1) / size
	s := make([]T, n+2*pad)
	return s[pad : pad+n : pad+n]
}

// CheckPadded reports, for the tests of a struct type that uses Pad, an
// error unless v is a struct whose first and last fields are Pads: then its
// other fields are at least Size bytes from both ends of its allocation.
func CheckPadded(v any) error {
	t := reflect.TypeOf(v)
	if t == nil || t.Kind() != reflect.Struct || t.NumField() < 3 {
		return fmt.Errorf("cacheline: %v is not a struct with fields between two Pads", t)
	}
	pad := reflect.TypeFor[Pad]()
	if first, last := t.Field(0), t.Field(t.NumField()-1); first.Type != pad || last.Type != pad {
		return fmt.Errorf("cacheline: %v's first and last fields are %s %v and %s %v, want two cacheline.Pad",
			t, first.Name, first.Type, last.Name, last.Type)
	}
	return nil
}
