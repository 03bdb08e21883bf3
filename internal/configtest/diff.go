package configtest

import (
	"fmt"
	"strings"
	"time"
)

// diff compares the wanted records with the records got, in order, and
// returns a line diff of them: "- " a wanted record missing, "+ " a record
// got that was not wanted, "  " one in both. It reports whether they are
// the same.
func diff(want []Rec, got []gotRec) (string, bool) {
	n, m := len(want), len(got)
	// lcs[i][j]: the longest common subsequence of want[i:] and got[j:].
	lcs := make([][]int, n+1)
	for i := range lcs {
		lcs[i] = make([]int, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if sameRecord(want[i], &got[j]) {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	if lcs[0][0] == n && n == m {
		return "", true
	}
	var b strings.Builder
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && sameRecord(want[i], &got[j]):
			fmt.Fprintf(&b, "    %s\n", showGot(&got[j]))
			i, j = i+1, j+1
		case i < n && (j == m || lcs[i+1][j] >= lcs[i][j+1]):
			fmt.Fprintf(&b, "  - %s\n", showWant(want[i]))
			i++
		default:
			fmt.Fprintf(&b, "  + %s\n", showGot(&got[j]))
			j++
		}
	}
	return b.String(), false
}

// showWant and showGot write a record on one line: its value, and the key,
// headers and time where the test gives them.
func showWant(r Rec) string {
	s := string(r.Value)
	if r.Key != nil {
		s += fmt.Sprintf("  key=%q", *r.Key)
	}
	if r.Headers != nil {
		s += fmt.Sprintf("  headers=%q", r.Headers)
	}
	if !r.Time.IsZero() {
		s += "  time=" + r.Time.UTC().Format(time.RFC3339Nano)
	}
	return s
}

func showGot(g *gotRec) string {
	s := string(g.Value)
	if g.Key != nil {
		s += fmt.Sprintf("  key=%q", g.Key)
	}
	if len(g.Headers) > 0 {
		s += fmt.Sprintf("  headers=%q", g.Headers)
	}
	if !g.Time.IsZero() {
		s += "  time=" + g.Time.UTC().Format(time.RFC3339Nano)
	}
	return s
}
