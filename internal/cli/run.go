package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"
	"time"

	"github.com/weir-etl/weir/config"
	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/pipeline"
)

func (c *command) validate(args []string) int {
	fs := c.flagSet("validate")
	var cf configFlags
	cf.register(fs, true)
	if code, ok := c.parse(fs, args, "weir validate -c FILE [--set path=value]...", "Checks the configuration, with the --set changes, and prints every problem, one per line."); !ok {
		return code
	}
	if code, ok := c.configArgs(fs, &cf); !ok {
		return code
	}
	src, err := c.read(&cf)
	if err == nil {
		_, err = src.load()
	}
	if err != nil {
		fmt.Fprintln(c.stderr, err)
		return ExitConfig
	}
	fmt.Fprintf(c.stdout, "%s: ok\n", src.name)
	return ExitOK
}

const runDoc = `Runs the pipeline until interrupted or its input ends, then prints a summary
on stderr: records read per source (with what it skipped or left unread, and
why), in and out (and dropped) per transform, written per sink with where its
output is, and the committed positions. A run that left input unread exits
with code 4; a run stopped with data read but not delivered (a sink still
failing) exits with code 3. The first SIGINT or SIGTERM shuts down
gracefully; a second, a second or more later, exits at once with code 130
(one within a second is the same interrupt delivered twice).

SIGHUP, or with --watch a change of the file, reloads the configuration: the
new one is loaded and validated first, and if it has a problem weir logs
every problem and goes on with the one it runs. Otherwise the running
pipeline stops as on SIGTERM (polling stops, what is in flight is written
and committed) and the new one starts from the committed positions. A
Kafka source whose settings did not change is handed to the new pipeline
instead: it stays in its group with its partitions (no rebalance); every
other source is stopped and started again. The HTTP endpoints restart with
the pipeline, so an open weir tap ends. --set flags apply to every reload;
a configuration read from stdin cannot be reloaded.

On a terminal, a progress line on stderr shows the rates, totals, errors and
the slowest partition; log lines are written above it.`

// watchInterval is how often --watch looks at the configuration file.
const watchInterval = time.Second

func (c *command) run(args []string) int {
	fs := c.flagSet("run")
	var cf configFlags
	cf.register(fs, true)
	var lf logFlags
	lf.register(fs)
	watch := fs.Bool("watch", false, "reload the configuration when its file changes, as SIGHUP does")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the run to `FILE` (go tool pprof FILE)")
	if code, ok := c.parse(fs, args, "weir run -c FILE [flags]", runDoc); !ok {
		return code
	}
	if code, ok := c.configArgs(fs, &cf); !ok {
		return code
	}
	con := newConsole(c.stderr)
	h, err := lf.handler(con.w)
	if err != nil {
		return c.usageErr(fs.Name(), err.Error())
	}
	if *watch && cf.file == "-" {
		return c.usageErr(fs.Name(), "--watch needs a file: -c - reads stdin once")
	}
	log := slog.New(consoleHandler{h, con})
	src, err := c.read(&cf)
	var spec *pipeline.Spec
	if err == nil {
		spec, err = src.load()
	}
	if err != nil {
		fmt.Fprintln(con, err)
		return ExitConfig
	}
	sigs := c.signals
	if sigs == nil {
		ch := make(chan os.Signal, 4)
		signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
		defer signal.Stop(ch)
		sigs = ch
	}
	if *cpuProfile != "" {
		stopProfile, err := startCPUProfile(*cpuProfile)
		if err != nil {
			fmt.Fprintln(con, "weir:", err)
			return ExitRuntime
		}
		defer stopProfile()
	}
	r := &runner{c: c, con: con, log: log, sigs: sigs, src: src, spec: spec}
	if *watch {
		ctx, cancel := context.WithCancel(context.Background())
		every := c.watchEvery
		if every <= 0 {
			every = watchInterval
		}
		changed := make(chan struct{}, 1)
		stopped := make(chan struct{})
		go func() { defer close(stopped); watchFile(ctx, src.path, src.data, every, changed) }()
		defer func() { cancel(); <-stopped }()
		r.changed = changed
	}
	return r.loop()
}

// runner runs one pipeline after another: the configuration, and the ones
// reloads bring, until a run ends by itself or is interrupted.
type runner struct {
	c       *command
	con     *console
	log     *slog.Logger
	sigs    <-chan os.Signal
	changed <-chan struct{} // --watch: the file changed

	src  *source
	spec *pipeline.Spec
	// next is the configuration a reload waits to start, once the running
	// pipeline stopped.
	next    *pipeline.Spec
	nextSrc *source

	// stop stops the running pipeline (graceful, as on SIGTERM).
	stop context.CancelFunc
	// handover carries the sources a reload keeps from one run to the next.
	handover *pipeline.Handover

	first  time.Time // of the first interrupt
	unread int64     // bytes left unread, over every run
}

func (r *runner) now() time.Time {
	if r.c.now != nil {
		return r.c.now()
	}
	return time.Now()
}

// loop runs the pipelines and returns the exit code.
func (r *runner) loop() int {
	r.handover = pipeline.NewHandover()
	defer func() {
		if err := r.handover.Close(context.Background()); err != nil {
			r.log.Warn("closing a source kept for a reload", "err", err)
		}
	}()
	for {
		var report *pipeline.Report // set before Run returns
		opts := []pipeline.Option{pipeline.WithLogger(r.log), pipeline.WithReport(func(rep *pipeline.Report) { report = rep }),
			pipeline.WithHandover(r.handover)}
		if w := r.con.progress(); w != nil {
			opts = append(opts, pipeline.WithProgress(w, time.Second))
		}
		ctx, stop := context.WithCancel(context.Background())
		r.stop = stop
		done := make(chan error, 1)
		spec := r.spec
		go func() { done <- pipeline.Run(ctx, spec, opts...) }()
		if r.c.reloaded != nil && r.src.reloaded {
			r.c.reloaded(true)
		}
		code, again := r.wait(done, &report)
		stop()
		if !again {
			return code
		}
	}
}

// wait handles signals and reloads until the run returns; it reports
// whether to start the next configuration, or else the exit code.
func (r *runner) wait(done <-chan error, report **pipeline.Report) (int, bool) {
	for {
		select {
		case err := <-done:
			r.unread += unread(*report)
			if r.next != nil && r.first.IsZero() && err == nil {
				r.log.Info("reload: the previous configuration stopped with everything delivered committed; starting the new one",
					append(reportCounts(*report), "sources_kept", r.handover.Kept())...)
				r.spec, r.src, r.next, r.nextSrc = r.next, r.nextSrc, nil, nil
				return 0, true
			}
			if *report != nil {
				// stderr, never stdout: a stdout sink's output must stay pure NDJSON.
				fmt.Fprint(r.con, (*report).String())
			}
			return r.c.exitCode(r.con, err, r.unread), false
		case <-r.changed:
			r.reload("the file changed")
		case sig := <-r.sigs:
			switch {
			case sig == syscall.SIGHUP:
				r.reload("SIGHUP")
			case r.first.IsZero():
				r.first = r.now()
				r.log.Info("interrupt: shutting down gracefully (interrupt again, a second or more later, to exit at once)", "signal", sig.String())
				if r.next != nil {
					r.log.Info("the reload waiting for the previous configuration to stop is cancelled")
					r.handover.Keep() // nothing to hand on: no run follows
				}
				r.stop()
			case r.now().Sub(r.first) < repeatWindow:
				r.log.Info("the same interrupt again within a second: still shutting down gracefully", "signal", sig.String())
			default:
				// The pipeline is left running; the process exits with this
				// code, and whatever was not committed is read again next time.
				fmt.Fprintln(r.con, "weir: second interrupt: exiting at once; uncommitted data will be read again")
				return ExitSignal, false
			}
		}
	}
}

// reload loads the configuration again; if it is valid, it stops the
// running pipeline, and wait starts the new one once it stopped.
func (r *runner) reload(why string) {
	switch {
	case !r.first.IsZero():
		r.log.Info("reload ignored: shutting down", "cause", why)
		return
	case r.next != nil:
		r.log.Info("reload ignored: a reload is already waiting for the pipeline to stop", "cause", why)
		return
	}
	r.log.Info("reload: loading the configuration", "cause", why, "file", r.src.name)
	src, err := r.src.reread()
	var spec *pipeline.Spec
	if err == nil {
		spec, err = src.load()
	}
	if err != nil {
		r.refused(err)
		return
	}
	src.reloaded = true
	r.next, r.nextSrc = spec, src
	keep := unchangedSources(r.spec, spec)
	r.handover.Keep(keep...)
	r.log.Info("reload: the new configuration is valid; stopping the pipeline (what is in flight is written and committed) to start it",
		"sources_to_keep", keep)
	r.stop()
}

// unchangedSources names the sources of next that a reload can hand on
// from the running configuration: same settings, and a source that keeps
// what it owns across runs (pipeline.SameSource).
func unchangedSources(running, next *pipeline.Spec) []string {
	keep := []string{}
	for _, n := range next.Sources {
		for _, o := range running.Sources {
			if o.Name == n.Name && pipeline.SameSource(o, n) {
				keep = append(keep, n.Name)
			}
		}
	}
	return keep
}

// refused logs why a reload was refused, every problem on its own line.
func (r *runner) refused(err error) {
	var es *config.Errors
	if errors.As(err, &es) {
		r.log.Error("reload refused: the new configuration has problems; still running the current one", "file", es.File, "problems", len(es.List))
		for _, p := range es.List {
			r.log.Error("reload refused", "problem", p.Error())
		}
	} else {
		r.log.Error("reload refused; still running the current configuration", "err", err)
	}
	if r.c.reloaded != nil {
		r.c.reloaded(false)
	}
}

// reportCounts are a stopped run's totals, for the reload's log line.
func reportCounts(rep *pipeline.Report) []any {
	if rep == nil {
		return nil
	}
	var read, written int64
	for _, s := range rep.Sources {
		read += s.Read
	}
	for _, s := range rep.Sinks {
		written += s.Written
	}
	return []any{"read", read, "written", written, "elapsed", rep.Elapsed.Round(time.Millisecond)}
}

// watchFile sends on changed (without waiting) whenever the file at path
// holds something else than it last did, looking every interval until ctx
// ends. A file that is missing for a moment (an editor replacing it) is
// looked at again at the next interval.
func watchFile(ctx context.Context, path string, data []byte, every time.Duration, changed chan<- struct{}) {
	t := time.NewTicker(every)
	defer t.Stop()
	last := data
	var lastInfo os.FileInfo
	if fi, err := os.Stat(path); err == nil {
		lastInfo = fi
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		fi, err := os.Stat(path)
		if err != nil || (lastInfo != nil && fi.Size() == lastInfo.Size() && fi.ModTime().Equal(lastInfo.ModTime())) {
			continue
		}
		lastInfo = fi
		now, err := os.ReadFile(path)
		if err != nil || bytes.Equal(now, last) {
			continue
		}
		last = now
		select {
		case changed <- struct{}{}:
		default: // one is already waiting
		}
	}
}

// startCPUProfile starts writing a CPU profile to path and returns the
// function that stops it and closes the file.
func startCPUProfile(path string) (func(), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("cpuprofile: %w", err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

// exitCode is the exit code of a run that ended with err, having left
// unread bytes of input over all its configurations; messages go to w.
func (c *command) exitCode(w io.Writer, err error, unread int64) int {
	if err == nil {
		if unread > 0 {
			fmt.Fprintf(w, "weir: finished, but %d bytes of input were left unread (see the summary and the warnings above)\n", unread)
			return ExitUnread
		}
		return ExitOK
	}
	fmt.Fprintln(w, "weir:", err)
	var fe *connector.FieldError
	if errors.Is(err, pipeline.ErrSpec) || errors.As(err, &fe) {
		// A connector found an option wrong only when it met the world
		// (a path that matches no file): still the configuration.
		return ExitConfig
	}
	return ExitRuntime
}

func unread(r *pipeline.Report) int64 {
	if r == nil {
		return 0
	}
	return r.UnreadBytes()
}
