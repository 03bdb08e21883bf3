package cli

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// Guarantee: a log line or any other text written while the progress line
// shows is never glued onto it: the line is erased first and drawn again
// after; once the display ended, text goes out as it is.
func TestConsoleKeepsLogLinesOffTheProgressLine(t *testing.T) {
	var out bytes.Buffer
	con := &console{w: &out, fd: 1 << 20} // a terminal that is not there: width unknown
	pw := con.progress()
	if pw == nil {
		t.Fatal("no progress writer on a terminal")
	}
	h := slog.NewTextHandler(con.w, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}})
	log := slog.New(consoleHandler{h, con}).With("run", 1)
	pw.Write([]byte(clearLine + "in 5/s"))
	log.Info("hello")
	con.Write([]byte("summary\n"))
	pw.Write([]byte(clearLine + "in 6/s"))
	pw.Write([]byte(clearLine)) // the display ends
	log.Warn("bye")
	want := clearLine + "in 5/s" +
		clearLine + "level=INFO msg=hello run=1\n" + clearLine + "in 5/s" +
		clearLine + "summary\n" + clearLine + "in 5/s" +
		clearLine + "in 6/s" + clearLine +
		"level=WARN msg=bye run=1\n"
	if got := out.String(); got != want {
		t.Errorf("written:\n%q\nwant\n%q", got, want)
	}
	if w, ok := pw.(interface{ Width() int }); !ok || w.Width() != 0 {
		t.Errorf("the width of no terminal is not 0")
	}
}

// Guarantee: on a terminal, weir run draws the progress line within the
// terminal's width and writes log lines and the summary on lines of their
// own.
func TestRunOnATerminal(t *testing.T) {
	tty, ptmx := openPTYPair(t)
	setWinsize(t, ptmx, 60)
	cfg := writeConfig(t, `
sources:
  in: { type: generate, rate: 2000, count: 3000 }
sinks:
  out: { type: blackhole, inputs: [in] }
checkpoint: { commit_interval: 10ms }
metrics: { address: "off" }
`)
	read := make(chan string, 1)
	go func() {
		var all bytes.Buffer
		buf := make([]byte, 4096)
		for {
			n, err := ptmx.Read(buf)
			all.Write(buf[:n])
			if err != nil || strings.Contains(all.String(), "run summary") && strings.HasSuffix(all.String(), "\n") && strings.Contains(all.String(), "sink") {
				read <- all.String()
				return
			}
		}
	}()
	code := Main([]string{"run", "-c", cfg}, &syncBuffer{}, tty)
	if code != ExitOK {
		t.Fatalf("exit %d", code)
	}
	var out string
	select {
	case out = <-read:
	case <-time.After(20 * time.Second):
		t.Fatal("no summary on the terminal")
	}
	// The terminal turns \n into \r\n.
	out = strings.ReplaceAll(out, "\r\n", "\n")
	if !strings.Contains(out, clearLine+"in ") {
		t.Fatalf("no progress line drawn:\n%q", out)
	}
	for _, seg := range strings.Split(out, clearLine) {
		line, _, _ := strings.Cut(seg, "\n")
		if strings.HasPrefix(line, "in ") && len([]rune(line)) >= 60 {
			t.Errorf("a progress line of %d columns on a terminal of 60: %q", len([]rune(line)), line)
		}
		if strings.HasPrefix(line, "in ") && strings.Contains(line, "level=") {
			t.Errorf("a log line glued onto the progress line: %q", line)
		}
	}
	for _, w := range []string{clearLine + "time=", clearLine + "run summary"} {
		if !strings.Contains(out, w) {
			t.Errorf("%q is not on a line of its own:\n%q", w, out)
		}
	}
}
