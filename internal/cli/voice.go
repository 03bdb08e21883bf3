package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/weir-etl/weir/config"
	"github.com/weir-etl/weir/pipeline"
)

// voice is how `weir run` says what it has to say on stderr besides the
// pipeline's log lines: the configuration's problems, the run summary, why
// it stopped. With --log-format json each of them is one JSON object on a
// line of its own, through the same logger as everything else, so that every
// line of stderr parses; as text, they are printed as they read best.
type voice struct {
	json bool
	w    io.Writer // the console
	log  *slog.Logger
}

// problems says why a configuration was refused.
func (v voice) problems(err error) {
	if !v.json {
		fmt.Fprintln(v.w, err)
		return
	}
	var es *config.Errors
	if !errors.As(err, &es) {
		v.log.Error("configuration refused", "err", err.Error())
		return
	}
	list := make([]map[string]any, 0, len(es.List))
	for _, p := range es.List {
		m := map[string]any{"file": p.File, "problem": p.Msg}
		if p.Line > 0 {
			m["line"] = p.Line
		}
		if p.Column > 0 {
			m["column"] = p.Column
		}
		if p.Field != "" {
			m["field"] = p.Field
		}
		if p.Flag != "" {
			m["flag"] = p.Flag
		}
		list = append(list, m)
	}
	v.log.Error("configuration refused", "file", es.File, "problems", list)
}

// summary prints the run's report.
func (v voice) summary(r *pipeline.Report) {
	if !v.json {
		fmt.Fprint(v.w, r.String())
		return
	}
	v.log.Info("run summary", "summary", summaryJSON(r))
}

// say prints one line of the command's own, as text or as a log record at
// level, with the attributes in JSON mode only (the text says them).
func (v voice) say(level slog.Level, text, msg string, args ...any) {
	if !v.json {
		fmt.Fprintln(v.w, text)
		return
	}
	v.log.Log(context.Background(), level, msg, args...)
}

// summaryJSON is the report as the JSON summary gives it: the fields of
// pipeline.Report in snake_case, with the dropped count of filters and
// routes, and the elapsed time in seconds.
func summaryJSON(r *pipeline.Report) map[string]any {
	var srcs, trs, sinks []map[string]any
	for _, s := range r.Sources {
		m := map[string]any{"name": s.Name, "read": s.Read, "committed_partitions": s.Partitions, "committed_positions": s.Committed}
		if len(s.Skipped) > 0 {
			m["skipped"] = s.Skipped
		}
		if len(s.Unread) > 0 {
			m["unread_bytes"] = s.Unread
		}
		if len(s.Behind) > 0 {
			m["behind"] = s.Behind
		}
		srcs = append(srcs, m)
	}
	for _, t := range r.Transforms {
		m := map[string]any{"name": t.Name, "kind": t.Kind, "in": t.In, "out": t.Out, "rejected": t.Rejected}
		if d := t.Dropped(); d >= 0 {
			m["dropped"] = d
		}
		trs = append(trs, m)
	}
	for _, s := range r.Sinks {
		m := map[string]any{"name": s.Name, "written": s.Written, "failed": s.Failed, "already_held": s.Skipped}
		if s.Failing != "" {
			m["failing"] = s.Failing
		}
		if s.Output != "" {
			m["output"] = s.Output
		}
		sinks = append(sinks, m)
	}
	return map[string]any{"elapsed_seconds": r.Elapsed.Seconds(), "sources": srcs, "transforms": trs, "sinks": sinks}
}
