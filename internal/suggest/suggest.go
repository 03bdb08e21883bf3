// Package suggest finds the name a user probably meant, for error messages
// about a misspelt name ("did you mean ...?").
package suggest

import "strings"

// Closest returns the candidate nearest to s by edit distance, ignoring case,
// if it is near enough to be a plausible typo; otherwise "".
//
// Near enough is at most one edit for a name of up to four letters, two up
// to eight and three beyond, where swapping two neighbouring letters is one
// edit: "pahts" is one edit from "paths", while "nope" is three from "file"
// and gets no suggestion, since a far-fetched one misleads more than none.
// A candidate equal to s (ignoring case) is never suggested: s is then not a
// misspelling of it, and repeating the user's own word helps nobody.
func Closest(s string, candidates []string) string {
	if s == "" {
		return ""
	}
	ls := strings.ToLower(s)
	best, bestD := "", limit(len(s))+1
	for _, c := range candidates {
		lc := strings.ToLower(c)
		if lc == ls {
			continue
		}
		if d := distance(ls, lc); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

// limit is the largest edit distance still taken for a typo of a name of n
// bytes.
func limit(n int) int {
	switch {
	case n <= 4:
		return 1
	case n <= 8:
		return 2
	default:
		return 3
	}
}

// distance is the optimal string alignment distance between a and b, in
// bytes: Levenshtein's insertions, deletions and substitutions, plus the
// transposition of two adjacent bytes as one edit.
func distance(a, b string) int {
	// Three rows: the one before the previous is needed for transpositions.
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}
