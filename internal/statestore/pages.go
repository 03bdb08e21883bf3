package statestore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
)

// bbolt trusts its file: it follows page ids without bounds checks and
// panics, or faults on memory past the end of the file, when a page is
// damaged. verifyPages therefore walks the file's structure with plain reads
// before bbolt maps it: the meta pages, the freelist and every page of every
// bucket's tree, checking that each id is below the high-water mark, inside
// the file, and that each element lies inside its page. The layout is
// bbolt's on-disk format (version 2), in the machine's byte order.
//
//	page header: id u64, flags u16, count u16, overflow u32 (16 bytes)
//	meta (after the header): magic u32, version u32, page size u32, flags u32,
//	  root bucket {root page u64, sequence u64}, freelist u64, high-water
//	  mark u64, txid u64, checksum u64 (FNV-64a of the 56 bytes before it)
//	branch element: pos u32, key size u32, page u64
//	leaf element: flags u32, pos u32, key size u32, value size u32
//	bucket value: root page u64, sequence u64, then an inline leaf page if
//	  the root page is 0

const (
	pageHeader    = 16
	elementSize   = 16
	bboltMagic    = 0xED0CDAED
	bboltVersion  = 2
	branchFlag    = 0x01
	leafFlag      = 0x02
	freelistFlag  = 0x10
	bucketLeaf    = 0x01
	noFreelist    = ^uint64(0)
	maxTreeDepth  = 64
	maxPageSize   = 1 << 20
	minPageSize   = 512
	metaChecksum  = 56 // offset of the checksum in the meta
	metaRoot      = 16
	metaFreelist  = 32
	metaHighWater = 40
	metaTxid      = 48
)

var ne = binary.NativeEndian

type meta struct {
	pageSize                  int64
	root, freelist, hwm, txid uint64
	valid                     bool
}

func readMeta(r io.ReaderAt, off int64) meta {
	b := make([]byte, pageHeader+64)
	if _, err := r.ReadAt(b, off); err != nil {
		return meta{}
	}
	m := b[pageHeader:]
	h := fnv.New64a()
	h.Write(m[:metaChecksum])
	if ne.Uint32(m) != bboltMagic || ne.Uint32(m[4:]) != bboltVersion || h.Sum64() != ne.Uint64(m[metaChecksum:]) {
		return meta{}
	}
	return meta{pageSize: int64(ne.Uint32(m[8:])), root: ne.Uint64(m[metaRoot:]), freelist: ne.Uint64(m[metaFreelist:]),
		hwm: ne.Uint64(m[metaHighWater:]), txid: ne.Uint64(m[metaTxid:]), valid: true}
}

// verifyPages checks the structure bbolt will read from the file, as
// described above, and returns what is wrong.
func verifyPages(r io.ReaderAt, size int64) error {
	m0 := readMeta(r, 0)
	psz := int64(os.Getpagesize())
	if m0.valid {
		psz = m0.pageSize
	}
	if psz < minPageSize || psz > maxPageSize {
		return fmt.Errorf("page size %d is not plausible", psz)
	}
	m := readMeta(r, psz)
	if m0.valid && (!m.valid || m0.txid > m.txid) {
		m = m0
	}
	if !m.valid {
		return errors.New("neither meta page is valid")
	}
	if m.pageSize != psz {
		return fmt.Errorf("the meta pages disagree on the page size (%d, %d)", psz, m.pageSize)
	}
	if int64(m.hwm) > size/psz {
		return fmt.Errorf("the file is truncated: it has %d pages, its meta page counts %d", size/psz, m.hwm)
	}
	v := &pageWalker{r: r, psz: psz, hwm: m.hwm, seen: map[uint64]bool{}}
	if m.freelist != noFreelist {
		p, err := v.page(m.freelist)
		if err != nil {
			return fmt.Errorf("freelist: %w", err)
		}
		if ne.Uint16(p[8:])&freelistFlag == 0 {
			return fmt.Errorf("freelist page %d is not a freelist page", m.freelist)
		}
		n, at := int64(ne.Uint16(p[10:])), int64(pageHeader)
		if n == 0xFFFF { // the count does not fit the header: it is the first id slot
			if len(p) < pageHeader+8 {
				return fmt.Errorf("freelist page %d is too short", m.freelist)
			}
			n, at = int64(ne.Uint64(p[pageHeader:])), pageHeader+8
		}
		if n < 0 || at+n*8 > int64(len(p)) {
			return fmt.Errorf("freelist page %d: %d ids do not fit", m.freelist, n)
		}
	}
	return v.tree(m.root, 0)
}

type pageWalker struct {
	r    io.ReaderAt
	psz  int64
	hwm  uint64
	seen map[uint64]bool
}

// page reads page id with its overflow pages.
func (v *pageWalker) page(id uint64) ([]byte, error) {
	if id < 2 || id >= v.hwm {
		return nil, fmt.Errorf("page %d is outside [2, %d)", id, v.hwm)
	}
	h := make([]byte, pageHeader)
	if _, err := v.r.ReadAt(h, int64(id)*v.psz); err != nil {
		return nil, fmt.Errorf("page %d: %w", id, err)
	}
	if got := ne.Uint64(h); got != id {
		return nil, fmt.Errorf("page %d holds the header of page %d", id, got)
	}
	n := uint64(ne.Uint32(h[12:])) + 1
	if id+n > v.hwm {
		return nil, fmt.Errorf("page %d overflows past the high-water mark %d", id, v.hwm)
	}
	p := make([]byte, int64(n)*v.psz)
	if _, err := v.r.ReadAt(p, int64(id)*v.psz); err != nil {
		return nil, fmt.Errorf("page %d: %w", id, err)
	}
	return p, nil
}

// tree walks the bucket tree whose root is page id.
func (v *pageWalker) tree(id uint64, depth int) error {
	if depth > maxTreeDepth {
		return fmt.Errorf("page %d: the tree is deeper than %d", id, maxTreeDepth)
	}
	if v.seen[id] {
		return fmt.Errorf("page %d is referenced twice", id)
	}
	v.seen[id] = true
	p, err := v.page(id)
	if err != nil {
		return err
	}
	flags := ne.Uint16(p[8:])
	switch {
	case flags&branchFlag != 0:
		n := int(ne.Uint16(p[10:]))
		if pageHeader+n*elementSize > len(p) {
			return fmt.Errorf("branch page %d: %d elements do not fit", id, n)
		}
		for i := range n {
			e := pageHeader + i*elementSize
			if end := uint64(e) + uint64(ne.Uint32(p[e:])) + uint64(ne.Uint32(p[e+4:])); end > uint64(len(p)) {
				return fmt.Errorf("branch page %d: key %d lies outside the page", id, i)
			}
			if err := v.tree(ne.Uint64(p[e+8:]), depth+1); err != nil {
				return err
			}
		}
		return nil
	case flags&leafFlag != 0:
		return v.leaf(id, p, depth)
	}
	return fmt.Errorf("page %d is neither a branch nor a leaf (flags %#x)", id, flags)
}

// leaf checks a leaf page (or an inline bucket's page) and the buckets in it.
func (v *pageWalker) leaf(id uint64, p []byte, depth int) error {
	if depth > maxTreeDepth {
		return fmt.Errorf("page %d: the tree is deeper than %d", id, maxTreeDepth)
	}
	if len(p) < pageHeader {
		return fmt.Errorf("an inline bucket in page %d is too short", id)
	}
	n := int(ne.Uint16(p[10:]))
	if pageHeader+n*elementSize > len(p) {
		return fmt.Errorf("leaf page %d: %d elements do not fit", id, n)
	}
	for i := range n {
		e := pageHeader + i*elementSize
		pos, ks, vs := uint64(ne.Uint32(p[e+4:])), uint64(ne.Uint32(p[e+8:])), uint64(ne.Uint32(p[e+12:]))
		start := uint64(e) + pos + ks
		if start+vs > uint64(len(p)) {
			return fmt.Errorf("leaf page %d: element %d lies outside the page", id, i)
		}
		if ne.Uint32(p[e:])&bucketLeaf == 0 {
			continue
		}
		val := p[start : start+vs]
		if len(val) < 16 {
			return fmt.Errorf("leaf page %d: bucket %d has a short header", id, i)
		}
		if root := ne.Uint64(val); root != 0 {
			if err := v.tree(root, depth+1); err != nil {
				return err
			}
		} else if err := v.leaf(id, val[16:], depth+1); err != nil {
			return err
		}
	}
	return nil
}
