//go:build !modelcheck

package acksync

import "sync/atomic"

// Int64 is an atomic int64. The zero value is 0.
type Int64 struct{ v atomic.Int64 }

// Add adds d and returns the new value.
func (x *Int64) Add(d int64) int64 { return x.v.Add(d) }

// Load returns the value.
func (x *Int64) Load() int64 { return x.v.Load() }

// Store sets the value.
func (x *Int64) Store(v int64) { x.v.Store(v) }

// Uint32 is an atomic uint32. The zero value is 0.
type Uint32 struct{ v atomic.Uint32 }

// Or sets the bits of mask and returns the old value.
func (x *Uint32) Or(mask uint32) uint32 { return x.v.Or(mask) }

// Load returns the value.
func (x *Uint32) Load() uint32 { return x.v.Load() }

// Store sets the value.
func (x *Uint32) Store(v uint32) { x.v.Store(v) }

// Pointer is an atomic *T. The zero value is nil.
type Pointer[T any] struct{ v atomic.Pointer[T] }

// Load returns the pointer.
func (p *Pointer[T]) Load() *T { return p.v.Load() }

// Store sets the pointer.
func (p *Pointer[T]) Store(v *T) { p.v.Store(v) }

// Swap sets the pointer and returns the old one.
func (p *Pointer[T]) Swap(v *T) *T { return p.v.Swap(v) }
