//go:build unix

package record_test

import (
	"errors"
	"syscall"
	"testing"

	"github.com/weir-etl/weir/record"
)

// Guarantee: an object of 2 GiB or more is refused, since an Obj keeps its
// members' offsets in 32 bits; one byte less is indexed. The values are
// mapped, not allocated: only the pages the scanner reads are touched.
func TestObjectOver2GiBIsRefused(t *testing.T) {
	for _, c := range []struct {
		size int
		msg  string
	}{
		{1<<31 - 1, "unexpected byte 0x00, looking for a member name"}, // indexed: its second byte is no name
		{1 << 31, "a value over 2 GiB"},
	} {
		b, err := syscall.Mmap(-1, 0, c.size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
		if err != nil {
			t.Skipf("cannot map %d bytes: %v", c.size, err)
		}
		b[0] = '{'
		_, err = record.ParseObj(b)
		if uerr := syscall.Munmap(b); uerr != nil {
			t.Fatal(uerr)
		}
		var se *record.SyntaxError
		if !errors.As(err, &se) || se.Msg != c.msg {
			t.Errorf("ParseObj of %d bytes: %v, want %q", c.size, err, c.msg)
		}
	}
}

// Guarantee: Lookup refuses a value of 2 GiB or more as ParseObj does (it
// keeps member offsets in 32 bits too), instead of wrapping them; one byte
// less is read.
func TestLookupOver2GiBIsRefused(t *testing.T) {
	for _, c := range []struct {
		size int
		msg  string
	}{
		{1<<31 - 1, "unexpected byte 0x00, looking for a member name"},
		{1 << 31, "a value over 2 GiB"},
	} {
		b, err := syscall.Mmap(-1, 0, c.size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
		if err != nil {
			t.Skipf("cannot map %d bytes: %v", c.size, err)
		}
		b[0] = '{'
		r := record.New(b)
		var v [1]record.Value
		var found [1]bool
		err = r.Lookup([]string{"a"}, v[:], found[:])
		if uerr := syscall.Munmap(b); uerr != nil {
			t.Fatal(uerr)
		}
		var se *record.SyntaxError
		if !errors.As(err, &se) || se.Msg != c.msg {
			t.Errorf("Lookup in %d bytes: %v, want %q", c.size, err, c.msg)
		}
	}
}
