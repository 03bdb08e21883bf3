package transform

import (
	"bytes"
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/weir-etl/weir/record"
)

// The bare loops: what a hand-written Go program does to get a filter's or
// a rename's result on the same records, and nothing else. Each validates
// the whole value (weir never passes on a record that is not one JSON value)
// with the standard library's json.Valid or with weir's own scanner
// (record.Valid), then finds the member by searching its bytes (a shortcut
// weir cannot take: it would match inside a string), and parses or copies.
// Their figures bound what the filter and map benchmarks can reach here.

var validators = []struct {
	name  string
	valid func([]byte) bool
}{
	{"stdlib", json.Valid},
	{"weirscanner", func(b []byte) bool { return record.Valid(b) == nil }},
}

// BenchmarkBareFilterOneField is BenchmarkFilterOneField's work by hand:
// validate, find "id", parse it, keep even ids.
func BenchmarkBareFilterOneField(b *testing.B) {
	member := []byte(`"id":`)
	for _, v := range validators {
		b.Run(v.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(benchValues[0])))
			kept, i := 0, 0
			for b.Loop() {
				val := benchValues[i%len(benchValues)]
				i++
				if !v.valid(val) {
					b.Fatal("invalid")
				}
				at := bytes.Index(val, member)
				if at < 0 {
					b.Fatal("no id")
				}
				n := 0
				for _, c := range val[at+len(member):] {
					if c < '0' || c > '9' {
						break
					}
					n = n*10 + int(c-'0')
				}
				if n%2 == 0 {
					kept++
				}
			}
			if kept == 0 {
				b.Fatal("nothing kept")
			}
		})
	}
}

// BenchmarkBareRenameOne is BenchmarkMapRenameOne's work by hand: validate,
// find "currency", and write a new value with the member's name replaced
// (one allocation, as the record must own its new bytes).
func BenchmarkBareRenameOne(b *testing.B) {
	from, to := []byte(`"currency":`), []byte(`"ccy":`)
	for _, v := range validators {
		b.Run(v.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(benchWide[0])))
			var out []byte
			i := 0
			for b.Loop() {
				val := benchWide[i%len(benchWide)]
				i++
				if !v.valid(val) {
					b.Fatal("invalid")
				}
				at := bytes.Index(val, from)
				if at < 0 {
					b.Fatal("no currency")
				}
				out = make([]byte, 0, len(val)-len(from)+len(to))
				out = append(append(append(out, val[:at]...), to...), val[at+len(from):]...)
			}
			if !bytes.Contains(out, to) {
				b.Fatal("not renamed")
			}
		})
	}
}

// BenchmarkBareThreeComputed is BenchmarkMapThreeComputed's work by hand:
// validate, find and parse "id", compute the three values, and write a new
// value with "amount" and "user" replaced in their places and "tags"
// appended (one allocation, as the record must own its new bytes). It finds
// the members by searching the bytes and the end of "user"'s object by its
// first '}', shortcuts that hold for these records only.
func BenchmarkBareThreeComputed(b *testing.B) {
	idKey, amountKey, userKey := []byte(`"id":`), []byte(`"amount":`), []byte(`"user":`)
	for _, v := range validators {
		b.Run(v.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(benchValues[0])))
			var out []byte
			i := 0
			for b.Loop() {
				val := benchValues[i%len(benchValues)]
				i++
				if !v.valid(val) {
					b.Fatal("invalid")
				}
				at := bytes.Index(val, idKey)
				if at < 0 {
					b.Fatal("no id")
				}
				id := int64(0)
				for _, c := range val[at+len(idKey):] {
					if c < '0' || c > '9' {
						break
					}
					id = id*10 + int64(c-'0')
				}
				as := bytes.Index(val, amountKey) + len(amountKey)
				ae := as + bytes.IndexAny(val[as:], ",}")
				us := bytes.Index(val, userKey) + len(userKey)
				ue := us + bytes.IndexByte(val[us:], '}') + 1
				out = make([]byte, 0, len(val)+32)
				out = append(out, val[:as]...)
				out = strconv.AppendFloat(out, float64((id*7919)%100000)/100, 'f', -1, 64)
				out = append(out, val[ae:us]...)
				out = append(out, `"u`...)
				out = strconv.AppendInt(out, id%1000, 10)
				out = append(out, '"')
				out = append(out, val[ue:len(val)-1]...)
				out = append(out, `,"tags":["a","b"]}`...)
			}
			if !bytes.Contains(out, []byte(`"tags":["a","b"]}`)) || !json.Valid(out) {
				b.Fatalf("wrote %s", out)
			}
		})
	}
}

// BenchmarkBareFiveComputed is BenchmarkMapFiveComputed's work by hand:
// validate, find the members by searching the bytes, compute the five
// values (time.Parse and AppendFormat for the day) and write a new value
// with the five appended (one allocation, as the record must own its
// bytes). Searching the bytes for "city" is a shortcut that holds for these
// records only.
func BenchmarkBareFiveComputed(b *testing.B) {
	str := func(val []byte, key string) []byte {
		at := bytes.Index(val, []byte(`"`+key+`":"`)) + len(key) + 4
		return val[at : at+bytes.IndexByte(val[at:], '"')]
	}
	num := func(val []byte, key string) int64 {
		at := bytes.Index(val, []byte(`"`+key+`":`)) + len(key) + 3
		n := int64(0)
		for _, c := range val[at:] {
			if c < '0' || c > '9' {
				break
			}
			n = n*10 + int64(c-'0')
		}
		return n
	}
	for _, v := range validators {
		b.Run(v.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(benchOrders[0])))
			var out []byte
			i := 0
			for b.Loop() {
				val := benchOrders[i%len(benchOrders)]
				i++
				if !v.valid(val) {
					b.Fatal("invalid")
				}
				total := num(val, "qty") * num(val, "price_cents")
				tier := "std"
				if total > 3000 {
					tier = "gold"
				}
				ts, err := time.Parse(time.RFC3339, string(str(val, "ts")))
				if err != nil {
					b.Fatal(err)
				}
				out = make([]byte, 0, len(val)+96)
				out = append(out, val[:len(val)-1]...)
				out = append(out, `,"name":"`...)
				out = append(append(append(out, str(val, "first")...), ' '), str(val, "last")...)
				out = append(out, `","total":`...)
				out = strconv.AppendInt(out, total, 10)
				out = append(append(append(out, `,"tier":"`...), tier...), `","day":"`...)
				out = ts.AppendFormat(out, "2006-01-02")
				out = append(append(append(out, `","city":"`...), str(val, "city")...), `"}`...)
			}
			if !json.Valid(out) || !bytes.Contains(out, []byte(`"city":"Lyon"}`)) {
				b.Fatalf("wrote %s", out)
			}
		})
	}
}
