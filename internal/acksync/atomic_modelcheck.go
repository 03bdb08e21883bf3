//go:build modelcheck

package acksync

import (
	"sync/atomic"

	"github.com/weir-etl/weir/internal/modelcheck"
)

// Under the modelcheck tag every operation is a scheduling point: the calling
// model goroutine yields to the deterministic scheduler, which may run other
// goroutines first, and then performs the operation. Outside an exploration the
// yield does nothing and the operations are plain sync/atomic ones, so the
// package's other tests run unchanged with the tag.

// Int64 is an atomic int64. The zero value is 0.
type Int64 struct{ v atomic.Int64 }

// Add adds d and returns the new value.
func (x *Int64) Add(d int64) int64 {
	modelcheck.Yield("Int64.Add")
	return x.v.Add(d)
}

// Load returns the value.
func (x *Int64) Load() int64 {
	modelcheck.Yield("Int64.Load")
	return x.v.Load()
}

// Store sets the value.
func (x *Int64) Store(v int64) {
	modelcheck.Yield("Int64.Store")
	x.v.Store(v)
}

// Uint32 is an atomic uint32. The zero value is 0.
type Uint32 struct{ v atomic.Uint32 }

// Or sets the bits of mask and returns the old value.
func (x *Uint32) Or(mask uint32) uint32 {
	modelcheck.Yield("Uint32.Or")
	return x.v.Or(mask)
}

// Load returns the value.
func (x *Uint32) Load() uint32 {
	modelcheck.Yield("Uint32.Load")
	return x.v.Load()
}

// Store sets the value.
func (x *Uint32) Store(v uint32) {
	modelcheck.Yield("Uint32.Store")
	x.v.Store(v)
}

// Pointer is an atomic *T. The zero value is nil.
type Pointer[T any] struct{ v atomic.Pointer[T] }

// Load returns the pointer.
func (p *Pointer[T]) Load() *T {
	modelcheck.Yield("Pointer.Load")
	return p.v.Load()
}

// Store sets the pointer.
func (p *Pointer[T]) Store(v *T) {
	modelcheck.Yield("Pointer.Store")
	p.v.Store(v)
}

// Swap sets the pointer and returns the old one.
func (p *Pointer[T]) Swap(v *T) *T {
	modelcheck.Yield("Pointer.Swap")
	return p.v.Swap(v)
}
