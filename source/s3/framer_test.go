package s3

import (
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
)

// The framer cuts records at line ends (for CSV, outside quotes), gives
// each its start and the position after it, ends the last record at the
// stream's end, and skips an over-long record whole, whatever the sizes of
// the reads.
func TestFramer(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		csv      bool
		max      int
		want     string // record@start ... ; ! marks a skipped one
	}{
		{"lines", "ab\ncd\n\nlast", false, 100, "ab@0 cd@3 @6 last@7"},
		{"csv quotes", "a,\"x\ny\"\nb,\"\"\"\"\n", true, 100, "a,\"x\ny\"@0 b,\"\"\"\"@8"},
		{"too long", "ok\n0123456789\nok2\n", false, 5, "ok@0 !@3 ok2@14"},
		{"too long at end", "ok\n0123456789", false, 5, "ok@0 !@3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// One byte a read, and a small buffer: every record straddles reads.
			f := &framer{r: iotest.OneByteReader(strings.NewReader(tc.in)), bufSize: 8, maxLine: tc.max, csv: tc.csv, delim: ','}
			var got []string
			for {
				rec, start, fr, err := f.next()
				if err != nil {
					t.Fatal(err)
				}
				if fr == frameEnd {
					break
				}
				if fr == frameTooLong {
					got = append(got, "!@"+itoa(start))
					continue
				}
				got = append(got, string(rec)+"@"+itoa(start))
			}
			if g := strings.Join(got, " "); g != tc.want {
				t.Fatalf("records %q, want %q", g, tc.want)
			}
			if f.pos() != int64(len(tc.in)) {
				t.Fatalf("position %d at the end, want %d", f.pos(), len(tc.in))
			}
		})
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
