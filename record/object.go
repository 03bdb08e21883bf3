package record

import (
	"slices"
	"sort"
	"time"
)

// Obj is a JSON object: the bytes it was read from, indexed once, and the
// changes made to it since. Changes are kept by member name and applied when
// the object is written out (AppendJSON):
//
//   - a member nobody changed is copied byte for byte, in its place;
//   - a member that was set is written in the place of the last member of
//     that name (earlier duplicates are dropped, since they no longer hold
//     the value), or after the members read, in the order of the changes,
//     if there was none;
//   - a deleted member, and every duplicate of it, is left out;
//   - a renamed member keeps its place under its new name.
//
// So an object that was not changed is written out as it was read, and one
// that was changed differs only in the members that changed. Between members
// the output has no whitespace; inside a member copied as read, the
// original's is kept.
//
// An Obj is not safe for concurrent use.
type Obj struct {
	raw     []byte   // the object as read; nil for an object built from nothing
	members []member // raw's top-level members, in order
	edits   []edit   // changes, in the order first made
	mbuf    [16]member
	ebuf    [4]edit
}

// edit is the change of one member name.
type edit struct {
	name  string
	val   Value
	del   bool  // the member is deleted (val unused)
	at    int32 // index in members whose place the value takes; -1: its own name's, else appended
	moved bool  // at was set by a rename
}

// NewObj returns an empty object.
func NewObj() *Obj { return &Obj{} }

// ParseObj indexes b, which must be a JSON object. The Obj shares b, which
// must not change afterwards.
func ParseObj(b []byte) (*Obj, error) {
	o := &Obj{}
	if err := o.Reset(b); err != nil {
		return nil, err
	}
	return o, nil
}

// Reset makes o the object b, unchanged, reusing o's storage. On error, or
// for a nil b, o is empty.
func (o *Obj) Reset(b []byte) error {
	clear(o.edits)
	o.edits = o.edits[:0]
	if b == nil {
		o.raw, o.members = nil, o.members[:0]
		return nil
	}
	if o.members == nil {
		o.members = o.mbuf[:0]
	}
	var err error
	o.members, err = indexObject(b, o.members[:0])
	if err != nil {
		o.raw, o.members = nil, o.members[:0]
		return err
	}
	o.raw = b
	return nil
}

// clone returns a copy of o that can be changed independently. Nested
// objects that were changed are cloned too.
func (o *Obj) clone() *Obj {
	c := &Obj{raw: o.raw}
	c.members = append(c.mbuf[:0], o.members...)
	c.edits = append(c.ebuf[:0], o.edits...)
	for i := range c.edits {
		if n, ok := c.edits[i].val.x.(*Obj); ok {
			c.edits[i].val.x = n.clone()
		}
	}
	return c
}

// Changed reports whether o differs from the bytes it was read from.
func (o *Obj) Changed() bool { return len(o.edits) > 0 || o.raw == nil }

func (o *Obj) findEdit(name string) int {
	for i := range o.edits {
		if o.edits[i].name == name {
			return i
		}
	}
	return -1
}

// lastMember returns the index of the last member named name, or -1.
func (o *Obj) lastMember(name string) int {
	members, t := o.members, keyTag(name)
	for i := len(members) - 1; i >= 0; i-- {
		if m := &members[i]; (m.tag == t || m.esc) && m.is(o.raw, name) {
			return i
		}
	}
	return -1
}

// editNaming returns the index of the change naming m, or -1. tags are the
// keyTags of the changes' names.
func (o *Obj) editNaming(m *member, tags []uint32) int {
	if m.esc {
		name := decodeKey(o.raw[m.ks:m.ke])
		for k := range o.edits {
			if o.edits[k].name == name {
				return k
			}
		}
		return -1
	}
	key := o.raw[m.ks+1 : m.ke-1]
	for k, t := range tags {
		if t == m.tag && o.edits[k].name == string(key) {
			return k
		}
	}
	return -1
}

// Get returns the member name (the last of duplicates), and whether there
// is one.
func (o *Obj) Get(name string) (Value, bool) {
	if i := o.findEdit(name); i >= 0 {
		e := &o.edits[i]
		return e.val, !e.del
	}
	if i := o.lastMember(name); i >= 0 {
		m := &o.members[i]
		return RawValue(o.raw[m.vs:m.ve]), true
	}
	return Value{}, false
}

// Set sets the member name to v. A Value holding an *Obj keeps it: changing
// that Obj later changes o.
func (o *Obj) Set(name string, v Value) {
	if i := o.findEdit(name); i >= 0 {
		e := &o.edits[i]
		e.val, e.del = v, false
		return
	}
	if o.edits == nil {
		o.edits = o.ebuf[:0]
	}
	o.edits = append(o.edits, edit{name: name, val: v, at: -1})
}

// Delete removes the member name and returns its value, if it had one.
func (o *Obj) Delete(name string) (Value, bool) {
	v, ok := o.Get(name)
	if !ok {
		return Value{}, false
	}
	if i := o.findEdit(name); i >= 0 {
		o.edits[i] = edit{name: name, del: true, at: -1}
		return v, true
	}
	if o.edits == nil {
		o.edits = o.ebuf[:0]
	}
	o.edits = append(o.edits, edit{name: name, del: true, at: -1})
	return v, true
}

// Rename moves the member from to the name to, in from's place, replacing
// any member already called to. It reports whether from existed.
func (o *Obj) Rename(from, to string) bool {
	if from == to {
		_, ok := o.Get(from)
		return ok
	}
	fi := o.findEdit(from)
	if fi >= 0 && !o.edits[fi].del && o.edits[fi].at < 0 && o.lastMember(from) < 0 {
		// from was added, not read: rename the change itself, which keeps
		// its place among the added members.
		v := o.edits[fi].val
		if ti := o.findEdit(to); ti >= 0 {
			o.edits = slices.Delete(o.edits, ti, ti+1)
			if ti < fi {
				fi--
			}
		}
		o.edits[fi] = edit{name: to, val: v, at: -1}
		if o.lastMember(to) >= 0 {
			// A member called to was read: its place is lost, it is
			// replaced where from was added.
			o.edits[fi].at = -2
		}
		return true
	}
	v, ok := o.Get(from)
	if !ok {
		return false
	}
	at := o.place(from)
	o.Delete(from)
	o.Set(to, v)
	e := &o.edits[o.findEdit(to)]
	e.at, e.moved = at, true
	return true
}

// place returns the index of the member whose place the member name takes
// when written: its edit's, or its own last one's.
func (o *Obj) place(name string) int32 {
	if i := o.findEdit(name); i >= 0 && o.edits[i].at >= 0 {
		return o.edits[i].at
	}
	return int32(o.lastMember(name))
}

// Range calls fn with each member as written out, in order, until it
// returns false.
func (o *Obj) Range(fn func(name string, v Value) bool) {
	o.write(true, func(name string, _ []byte, m *member, v *Value) bool {
		if m != nil {
			return fn(decodeKey(o.raw[m.ks:m.ke]), RawValue(o.raw[m.vs:m.ve]))
		}
		return fn(name, *v)
	})
}

// AppendJSON appends o as JSON to dst.
func (o *Obj) AppendJSON(dst []byte) []byte {
	if !o.Changed() {
		return append(dst, o.raw...)
	}
	if out, ok := o.appendInPlace(dst); ok {
		return out
	}
	return o.appendLaidOut(dst)
}

// appendInPlace appends o as JSON to dst when every change sets or deletes
// a member of its own name and no name changed is read more than once: the
// output of most maps, written in one walk over the members that looks for
// the changed names as it goes (by their tags, see keyTag and tagBit)
// rather than laying the changes out first. Otherwise it reports false and
// dst is as it was.
func (o *Obj) appendInPlace(dst []byte) ([]byte, bool) {
	edits, raw := o.edits, o.raw
	var tagBuf [8]uint32
	var seenBuf [8]bool
	tags, seen := tagBuf[:0], seenBuf[:0]
	var names uint64 // a bit for each changed name's tag: most members are in none
	for k := range edits {
		if edits[k].at != -1 { // renamed
			return dst, false
		}
		t := keyTag(edits[k].name)
		tags = append(tags, t)
		seen = append(seen, false)
		names |= tagBit(t)
	}
	start := len(dst)
	dst = append(dst, '{')
	first := true
	members := o.members
	for i := 0; i < len(members); {
		m := &members[i]
		if m.esc || names&tagBit(m.tag) != 0 {
			if k := o.editNaming(m, tags); k >= 0 {
				if seen[k] { // the name is read twice
					return dst[:start], false
				}
				seen[k] = true
				if e := &edits[k]; !e.del {
					if !first {
						dst = append(dst, ',')
					}
					first = false
					dst = append(dst, raw[m.ks:m.ke]...)
					dst = append(dst, ':')
					dst = e.val.appendJSON(dst)
				}
				i++
				continue
			}
		}
		// The members from i copied as read, in one piece while nothing
		// but a comma lies between them and no change may name them.
		j := i + 1
		for j < len(members) && members[j].ks == members[j-1].ve+1 && !members[j].esc && names&tagBit(members[j].tag) == 0 {
			j++
		}
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = append(dst, raw[m.ks:members[j-1].ve]...)
		i = j
	}
	for k := range edits {
		if e := &edits[k]; !seen[k] && !e.del {
			dst = appendAdded(dst, first, e)
			first = false
		}
	}
	return append(dst, '}'), true
}

// appendLaidOut appends o as JSON to dst, for any changes: the same walk as
// write, without a callback.
func (o *Obj) appendLaidOut(dst []byte) []byte {
	var orderBuf [8]placed
	var dropBuf [16]int32
	order, drop := o.layout(orderBuf[:0], dropBuf[:0])
	dst = append(dst, '{')
	first := true
	next, nd := 0, 0 // the first of order and of drop not yet written or passed
	for i := range o.members {
		m := &o.members[i]
		for next < len(order) && order[next].at == int32(i) {
			e := &o.edits[order[next].k]
			next++
			if !first {
				dst = append(dst, ',')
			}
			first = false
			if !e.moved && m.is(o.raw, e.name) {
				dst = append(dst, o.raw[m.ks:m.ke]...)
			} else {
				dst = AppendString(dst, e.name)
			}
			dst = append(dst, ':')
			dst = e.val.appendJSON(dst)
		}
		if nd < len(drop) && drop[nd] == int32(i) {
			nd++
			continue
		}
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = append(dst, o.raw[m.ks:m.ve]...)
	}
	for ; next < len(order); next++ {
		dst = appendAdded(dst, first, &o.edits[order[next].k])
		first = false
	}
	return append(dst, '}')
}

// appendAdded appends the member e sets after the members read, after a
// comma unless it is the first written.
func appendAdded(dst []byte, first bool, e *edit) []byte {
	if !first {
		dst = append(dst, ',')
	}
	dst = AppendString(dst, e.name)
	dst = append(dst, ':')
	return e.val.appendJSON(dst)
}

// placed is where a change is written: in the place of the read member at,
// or after the read members (at is appended).
type placed struct{ at, k int32 }

// appended is the place of a change written after the read members.
const appended = 1<<31 - 1

// layout returns where o's changes go when it is written out, in one pass
// that matches every read member against every changed name once: the
// changes to write, each with the index of the read member whose place its
// value takes (or appended), ordered by place and, within a place, as
// made; and the indexes of the read members not written as read because a
// change names them, in order. order and drop are buffers to append to.
func (o *Obj) layout(order []placed, drop []int32) ([]placed, []int32) {
	edits := o.edits
	var tagBuf [8]uint32
	tags := tagBuf[:0]
	var names uint64 // a bit for each changed name's tag: most members are in none
	for k := range edits {
		order = append(order, placed{-1, int32(k)})
		t := keyTag(edits[k].name)
		tags = append(tags, t)
		names |= tagBit(t)
	}
	for i := range o.members {
		m := &o.members[i]
		if !m.esc && names&tagBit(m.tag) == 0 {
			continue
		}
		k := o.editNaming(m, tags) // names are unique: one at most
		if k < 0 {
			continue
		}
		drop = append(drop, int32(i))
		if e := &edits[k]; !e.del && e.at == -1 {
			order[k].at = int32(i) // the last member of the name wins
		}
	}
	w := 0
	for k := range order {
		e := &o.edits[k]
		switch {
		case e.at >= 0: // set by a rename, never deleted
			order[k].at = e.at
		case e.del:
			continue
		case order[k].at < 0:
			order[k].at = appended
		}
		order[w] = order[k]
		w++
	}
	order = order[:w]
	// Few changes: an insertion sort, which keeps the order they were made
	// in within a place.
	for k := 1; k < len(order); k++ {
		for j := k; j > 0 && order[j].at < order[j-1].at; j-- {
			order[j], order[j-1] = order[j-1], order[j]
		}
	}
	return order, drop
}

// write walks o's members as they are written out. For a member copied as
// read, m is set; otherwise name and v are, and key is the quoted name as
// read when the member keeps its own place. With semantic, of duplicate
// members read only the last is given, as a decoder sees them; otherwise
// duplicates nobody changed are written as they were.
func (o *Obj) write(semantic bool, fn func(name string, key []byte, m *member, v *Value) bool) {
	if len(o.edits) == 0 {
		for i := range o.members {
			if semantic && !o.isLastOf(i) {
				continue
			}
			if !fn("", nil, &o.members[i], nil) {
				return
			}
		}
		return
	}
	var orderBuf [8]placed
	var dropBuf [16]int32
	order, drop := o.layout(orderBuf[:0], dropBuf[:0])
	next, nd := 0, 0 // the first of order and of drop not yet given or passed
	for i := range o.members {
		m := &o.members[i]
		for next < len(order) && order[next].at == int32(i) {
			e := &o.edits[order[next].k]
			next++
			var key []byte
			if !e.moved && m.is(o.raw, e.name) {
				key = o.raw[m.ks:m.ke]
			}
			if !fn(e.name, key, nil, &e.val) {
				return
			}
		}
		if nd < len(drop) && drop[nd] == int32(i) {
			nd++
			continue
		}
		if semantic && !o.isLastOf(i) {
			continue
		}
		if !fn("", nil, m, nil) {
			return
		}
	}
	for ; next < len(order); next++ {
		e := &o.edits[order[next].k]
		if !fn(e.name, nil, nil, &e.val) {
			return
		}
	}
}

// isLastOf reports whether no member after i has i's name. Duplicates are
// rare; the common case is settled without decoding by comparing the raw
// keys.
func (o *Obj) isLastOf(i int) bool {
	m := &o.members[i]
	key := o.raw[m.ks:m.ke]
	for j := i + 1; j < len(o.members); j++ {
		n := &o.members[j]
		if !m.esc && !n.esc {
			if string(o.raw[n.ks:n.ke]) == string(key) {
				return false
			}
			continue
		}
		if decodeKey(o.raw[n.ks:n.ke]) == decodeKey(key) {
			return false
		}
	}
	return true
}

// AppendJSON appends v as JSON to dst.
func (v Value) AppendJSON(dst []byte) []byte { return v.appendJSON(dst) }

// appendJSON is AppendJSON without copying v: the writers of objects and
// arrays call it for every value they hold.
func (v *Value) appendJSON(dst []byte) []byte {
	switch v.kind {
	case Null:
		return append(dst, "null"...)
	case Bool:
		if v.n != 0 {
			return append(dst, "true"...)
		}
		return append(dst, "false"...)
	case Int:
		return appendInt(dst, int64(v.n))
	case Float:
		return appendFloat(dst, floatOf(*v))
	case Number:
		return append(dst, v.s...)
	case String:
		if v.raw {
			return append(dst, v.s...)
		}
		return AppendString(dst, v.s)
	case Object:
		if o := v.objView(); o != nil {
			return o.AppendJSON(dst)
		}
		return append(dst, v.s...)
	case Array:
		e, ok := v.x.([]Value)
		if !ok || v.s != "" {
			return append(dst, v.s...)
		}
		dst = append(dst, '[')
		for i := range e {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = e[i].appendJSON(dst)
		}
		return append(dst, ']')
	case Time:
		dst = append(dst, '"')
		dst = v.Time().AppendFormat(dst, time.RFC3339Nano)
		return append(dst, '"')
	case Duration:
		return AppendString(dst, v.Duration().String())
	}
	return append(dst, "null"...)
}

// SortedObj returns an object of the members of m, sorted by name (Go maps
// have no order of their own).
func SortedObj(m map[string]Value) *Obj {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	o := &Obj{}
	o.edits = make([]edit, 0, len(names))
	for _, k := range names {
		o.edits = append(o.edits, edit{name: k, val: m[k], at: -1})
	}
	return o
}
