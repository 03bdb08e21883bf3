package cli

import (
	"context"
	"io"
	"log/slog"
	"os"
	"sync"

	"golang.org/x/term"
)

// console is stderr shared by the progress line and everything else written
// there (log lines, the summary, messages). The progress line is redrawn in
// place without a line break, so anything else written while it shows would
// be glued onto it: console erases the line first and draws it again after.
type console struct {
	mu   sync.Mutex
	w    io.Writer
	fd   int    // the terminal's, for its width; -1 when w is not a terminal
	line []byte // the progress line on screen; nil when none is
}

// newConsole returns the console writing to w; it shows progress only when
// w is a terminal (see progress).
func newConsole(w io.Writer) *console {
	c := &console{w: w, fd: -1}
	if f, ok := w.(*os.File); ok && isTerminal(f) {
		c.fd = int(f.Fd())
	}
	return c
}

// clearLine returns the cursor to the start of the line and erases it.
const clearLine = "\r\033[K"

// Write writes p below the progress line: the line is erased, p written,
// and the line drawn again.
func (c *console) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.around(func() (int, error) { return c.w.Write(p) })
}

// around runs write with the progress line erased, and draws it again
// after. Called with mu held.
func (c *console) around(write func() (int, error)) (int, error) {
	if c.line != nil {
		io.WriteString(c.w, clearLine)
	}
	n, err := write()
	if c.line != nil {
		c.w.Write(c.line)
	}
	return n, err
}

// progress returns where the runtime draws its progress line, or nil when
// the console is not a terminal (a file, a pipe, a log collector), where a
// line redrawn every second would only be noise.
func (c *console) progress() io.Writer {
	if c.fd < 0 {
		return nil
	}
	return progressWriter{c}
}

// progressWriter takes the runtime's progress lines: each write is a whole
// line that starts by erasing the line, and the last one only erases it.
type progressWriter struct{ c *console }

func (p progressWriter) Write(b []byte) (int, error) {
	c := p.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if string(b) == clearLine {
		c.line = nil
	} else {
		c.line = append(c.line[:0], b...)
	}
	return c.w.Write(b)
}

// Width is the terminal's width now (pipeline.ProgressWidth), so that the
// line follows a resize; 0 if it cannot be read.
func (p progressWriter) Width() int {
	w, _, err := term.GetSize(p.c.fd)
	if err != nil {
		return 0
	}
	return w
}

// consoleHandler is a log handler that writes each record below the
// progress line: it holds the console while its handler writes, so that a
// record is never glued onto the line nor the line drawn inside a record.
type consoleHandler struct {
	slog.Handler // writes to the console's writer directly
	c            *console
}

func (h consoleHandler) Handle(ctx context.Context, r slog.Record) error {
	h.c.mu.Lock()
	defer h.c.mu.Unlock()
	_, err := h.c.around(func() (int, error) { return 0, h.Handler.Handle(ctx, r) })
	return err
}

func (h consoleHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return consoleHandler{h.Handler.WithAttrs(as), h.c}
}

func (h consoleHandler) WithGroup(name string) slog.Handler {
	return consoleHandler{h.Handler.WithGroup(name), h.c}
}

// progressTo returns where a progress display on w goes: w's console when
// w is a terminal, nil otherwise.
func progressTo(w io.Writer) io.Writer { return newConsole(w).progress() }
