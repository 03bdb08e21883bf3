package tap

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/weir-etl/weir/record"
)

// Serve writes t's lines to w until count were sent (count < 0: no
// limit), the client goes or the run ends; then a last line says why it
// ended, and how many records the reader was too slow for.
func (t *Tap) Serve(ctx context.Context, w http.ResponseWriter, count int64) {
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	flush := func() {
		if fl != nil {
			fl.Flush()
		}
	}
	flush()
	sent := int64(0)
	write := func(line []byte) bool {
		if _, err := w.Write(append(line, '\n')); err != nil {
			return false
		}
		sent++
		return true
	}
	why := "count reached"
loop:
	for count < 0 || sent < count {
		select {
		case line := <-t.lines:
			if !write(line) {
				return
			}
			// Flush when nothing else waits: a line goes out when it is
			// sampled, not when a buffer fills.
			if len(t.lines) == 0 {
				flush()
			}
		case <-ctx.Done():
			return
		case <-t.done:
			// What was sampled before the end still goes out.
			for (count < 0 || sent < count) && len(t.lines) > 0 {
				if !write(<-t.lines) {
					return
				}
			}
			why = "the pipeline stopped"
			break loop
		}
	}
	_, _ = fmt.Fprintf(w, `{"tap_end":%s,"sent":%d,"dropped":%d}`+"\n", strconv.Quote(why), sent, t.Dropped())
}

// Line appends the NDJSON line of rec, leaving the component kind and
// name, to dst: where it was read, its time, key and headers, and its value
// (JSON embedded when it is one JSON value on one line, base64 otherwise;
// the key and header values as text when they are UTF-8).
func Line(dst []byte, kind, name string, rec *record.Record) []byte {
	dst = append(dst, `{"component":`...)
	dst = record.AppendString(dst, name)
	dst = append(dst, `,"kind":"`...)
	dst = append(dst, kind...)
	dst = append(dst, `","source":`...)
	dst = record.AppendString(dst, rec.Origin.Source)
	dst = append(dst, `,"partition":`...)
	dst = record.AppendString(dst, rec.Origin.Partition)
	dst = strconv.AppendInt(append(dst, `,"offset":`...), rec.Origin.Offset, 10)
	if !rec.Time.IsZero() {
		dst = append(dst, `,"time":"`...)
		dst = rec.Time.UTC().AppendFormat(dst, time.RFC3339Nano)
		dst = append(dst, '"')
	}
	if rec.Key != nil {
		dst = appendBytes(dst, "key", rec.Key)
	}
	if len(rec.Headers) > 0 {
		dst = append(dst, `,"headers":[`...)
		for i, h := range rec.Headers {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, `{"key":`...)
			dst = record.AppendString(dst, h.Key)
			dst = appendBytes(dst, "value", h.Value)
			dst = append(dst, '}')
		}
		dst = append(dst, ']')
	}
	v := rec.Bytes()
	if embeddable(v) {
		dst = append(dst, `,"value":`...)
		dst = append(dst, v...)
	} else {
		dst = append(dst, `,"value_encoding":"base64","value":"`...)
		dst = base64.StdEncoding.AppendEncode(dst, v)
		dst = append(dst, '"')
	}
	return append(dst, '}')
}

// appendBytes appends member name: b as text when it is UTF-8, and as
// base64 with name_encoding otherwise.
func appendBytes(dst []byte, name string, b []byte) []byte {
	dst = append(dst, ',', '"')
	dst = append(dst, name...)
	dst = append(dst, '"', ':')
	if utf8.Valid(b) {
		return record.AppendString(dst, string(b))
	}
	dst = append(dst, '"')
	dst = base64.StdEncoding.AppendEncode(dst, b)
	dst = append(dst, `","`...)
	dst = append(dst, name...)
	return append(dst, `_encoding":"base64"`...)
}

// embeddable reports whether v can go into a line as JSON: one JSON value,
// UTF-8, on one line.
func embeddable(v []byte) bool {
	if len(v) == 0 || !utf8.Valid(v) || slices.Contains(v, '\n') || slices.Contains(v, '\r') {
		return false
	}
	return record.Valid(v) == nil
}
