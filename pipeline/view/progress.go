package view

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// The progress display: one line, redrawn in place every interval, with the
// rates of records in and out, the totals, the errors, and the slowest
// partition (the one a status read ranks first: the longest stalled, then
// the largest lag). It fits the width it is given, dropping what matters
// least first.

// ClearLine returns the cursor to the start of the line and erases it.
const ClearLine = "\r\033[K"

// Progress is what one redraw of the progress line shows.
type Progress struct {
	In, Out         int64   // records read by the sources, and made durable by the sinks, since the start
	InRate, OutRate float64 // records per second over the last interval
	Errors          int64   // sink errors, failed commits and records rejected, since the start
	// Slowest is the slowest partition, "" if none is known; Lag is its
	// distance to the end of its partition (-1 when the source does not
	// say), Stalled how long its watermark has waited.
	Slowest string
	Lag     int64
	Stalled time.Duration
}

// ProgressLine is one refresh of the progress display: it overwrites the
// line with p, in at most width columns (0: no limit).
func ProgressLine(p Progress, width int) string {
	// Segments in the order shown; keep lists the order they are dropped in
	// when the line is too long, the first dropped first.
	segs := []string{
		fmt.Sprintf("in %s/s  out %s/s", human(p.InRate), human(p.OutRate)),
		fmt.Sprintf("read %s  written %s", human(float64(p.In)), human(float64(p.Out))),
		fmt.Sprintf("errors %d", p.Errors),
		"",
	}
	if p.Slowest != "" {
		s := "slowest " + shorten(p.Slowest, 40)
		if p.Lag >= 0 {
			s += " lag " + human(float64(p.Lag))
		}
		if p.Stalled >= time.Second {
			s += " stalled " + p.Stalled.Round(time.Second).String()
		}
		segs[3] = s
	}
	drop := []int{1, 3, 2} // totals, then the slowest partition, then errors; the rates stay
	line := joinSegs(segs)
	for _, i := range drop {
		if width <= 0 || utf8.RuneCountInString(line) < width {
			break
		}
		segs[i] = ""
		line = joinSegs(segs)
	}
	if width > 0 && utf8.RuneCountInString(line) >= width {
		// The last column is left free: writing into it makes some
		// terminals wrap, and the next redraw would start a new line.
		line = string([]rune(line)[:max(width-1, 0)])
	}
	return ClearLine + line
}

func joinSegs(segs []string) string {
	var parts []string
	for _, s := range segs {
		if s != "" {
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, "  |  ")
}

// human writes n with at most three significant digits and a suffix:
// 950, 12.3k, 1.2M, 3.4G.
func human(n float64) string {
	switch {
	case n < 1000:
		return fmt.Sprintf("%.0f", n)
	case n < 1e6:
		return trimZero(fmt.Sprintf("%.1f", n/1e3)) + "k"
	case n < 1e9:
		return trimZero(fmt.Sprintf("%.1f", n/1e6)) + "M"
	}
	return trimZero(fmt.Sprintf("%.1f", n/1e9)) + "G"
}

func trimZero(s string) string { return strings.TrimSuffix(s, ".0") }

// shorten keeps s within n runes, cutting out its middle: a file partition's
// name is its path and identity, and both ends say most.
func shorten(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	head := (n - 1) / 2
	return string(r[:head]) + "…" + string(r[len(r)-(n-1-head):])
}

// ProgressOf sets p's errors and slowest partition from m, whose
// rendering ranks each source's partitions worst first.
func ProgressOf(m *Model, p *Progress) {
	st := Render(m, 1)
	p.Errors, p.Slowest, p.Lag, p.Stalled = 0, "", -1, 0
	for _, n := range st.Nodes {
		p.Errors += n.Errors
		if n.Kind == "sink" {
			p.Errors += n.Rejected
		}
	}
	for _, s := range st.Sources {
		if len(s.Partitions) == 0 {
			continue
		}
		q := s.Partitions[0]
		stall := time.Duration(q.StallMillis) * time.Millisecond
		lag := int64(-1)
		if q.Lag != nil {
			lag = *q.Lag
		}
		if stall < time.Second && lag <= 0 {
			continue // neither stalled nor behind: not worth a place on the line
		}
		if p.Slowest == "" || stall/time.Second > p.Stalled/time.Second || (stall/time.Second == p.Stalled/time.Second && lag > p.Lag) {
			p.Slowest, p.Lag, p.Stalled = s.Name+"/"+q.Name, lag, stall
		}
	}
}
