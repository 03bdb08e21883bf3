package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/weir-etl/weir/config"
	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/internal/fleet"
	"github.com/weir-etl/weir/internal/sdnotify"
	"github.com/weir-etl/weir/internal/statestore"
	"github.com/weir-etl/weir/internal/words"
	"github.com/weir-etl/weir/pipeline"
)

func (c *command) validate(args []string) int {
	fs := c.flagSet("validate")
	var cf configFlags
	cf.register(fs, true)
	offline := fs.Bool("offline", false, "skip the checks of what the file names outside it (paths that must match files, directories that must be creatable, certificate files)")
	dir := fs.String("d", "", "validate every pipeline file (*.yaml, *.yml) of `DIR`, as weir run -d runs them")
	if code, ok := c.parse(fs, args, "weir validate -c FILE [-c FILE]... | -d DIR [--set path=value]... [--offline]", validateDoc); !ok {
		return code
	}
	if *dir != "" {
		if fs.NArg() > 0 {
			return c.usageErr(fs.Name(), fmt.Sprintf("unexpected argument %q", fs.Arg(0)))
		}
		return c.validateFleet(&cf, *dir, *offline)
	}
	if code, ok := c.configArgs(fs, &cf, true); !ok {
		return code
	}
	// Each file is checked on its own, and all of them are, so that one
	// run of validate shows every problem of every file.
	code := ExitOK
	for _, file := range cf.files {
		src, err := c.readFile(&cf, file)
		if err == nil {
			_, err = src.loadWith(*offline, func(w *config.Error) { fmt.Fprintln(c.stderr, w) })
		}
		if err != nil {
			fmt.Fprintln(c.stderr, err)
			code = ExitConfig
			continue
		}
		fmt.Fprintf(c.stdout, "%s: ok\n", src.name)
	}
	return code
}

const validateDoc = `Checks each configuration (-c may be given several times), with the --set
changes, and prints every problem, one per line, or FILE: ok. It refuses what weir run would refuse before reading a
record, in the same words: besides the file itself, what it names outside
it (a once source's paths that match no file, a state or output directory
that cannot be created, an unreadable certificate file). --offline leaves
those out, for a file checked away from where it runs. Brokers and
databases are not contacted: weir run waits for them at start.`

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
the pipeline, so an open weir tap ends, and its /metrics counts from 0 again
(weir run -d keeps them across reloads); the summary counts every run since
weir started. --set flags apply to every reload;
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
	memProfile := fs.String("memprofile", "", "write the run's allocations and its heap at the end to `FILE` (go tool pprof -sample_index=alloc_space FILE)")
	var resets listFlag
	fs.Var(&resets, "reset-state", "move the state file of `SOURCE` aside before the run (kept as FILE.reset-TIME), so that the source starts afresh as without one; for a state file that is empty or damaged, or to read again on purpose. Repeatable")
	dir := fs.String("d", "", "run every pipeline file (*.yaml, *.yml) of `DIR`, each as a pipeline of its own (docs/pipelines.md)")
	api := fs.Bool("api", false, "with -d or several -c: let the pipelines API (/api/v1/pipelines) create, change, pause, reset and delete pipelines; off, it only reads")
	tokenFile := fs.String("api-token-file", "", "read the pipelines API's bearer token from `FILE` (else from "+fleet.TokenEnvVar+"); needed for --api beyond loopback")
	if code, ok := c.parse(fs, args, "weir run -c FILE [flags] | weir run -d DIR [flags]", runDoc+"\n\n"+fleetDoc); !ok {
		return code
	}
	if *dir != "" || len(cf.files) > 1 {
		switch {
		case fs.NArg() > 0:
			return c.usageErr(fs.Name(), fmt.Sprintf("unexpected argument %q", fs.Arg(0)))
		case *cpuProfile != "" || *memProfile != "" || len(resets) > 0:
			return c.usageErr(fs.Name(), "--cpuprofile, --memprofile and --reset-state take one pipeline (-c FILE); with -d, reset a source through the API (weir pipelines reset)")
		}
		return c.runFleet(&cf, *dir, *watch, *api, *tokenFile, lf)
	}
	if *api || *tokenFile != "" {
		return c.usageErr(fs.Name(), "--api and --api-token-file are for many pipelines: weir run -d DIR (or several -c)")
	}
	if code, ok := c.configArgs(fs, &cf, false); !ok {
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
	// The one logger is the process's default while the command runs, so
	// that a connector that logs to slog.Default() (it is built before the
	// pipeline gives it a logger) and a library that writes to the standard
	// log package use it too: every line on stderr is in the chosen format.
	prev := slog.Default()
	slog.SetDefault(log)
	defer slog.SetDefault(prev)
	vo := voice{json: lf.json(), w: con, log: log}
	src, err := c.read(&cf)
	// Signals are caught once the configuration is read (a Ctrl-C while
	// weir waits on stdin still ends it at once) and before the connectors
	// are built: a SIGTERM while weir is starting is a graceful stop once
	// the run begins, not the default death.
	sigs := c.signals
	if sigs == nil {
		ch := make(chan os.Signal, 4)
		signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
		defer signal.Stop(ch)
		sigs = ch
	}
	var spec *pipeline.Spec
	if err == nil {
		spec, err = src.load(func(w *config.Error) { log.Warn(w.Error()) })
	}
	if err != nil {
		vo.problems(err)
		return ExitConfig
	}
	if err := resetState(spec, resets, log); err != nil {
		fmt.Fprintln(con, "weir:", err)
		return ExitUsage
	}
	if *cpuProfile != "" {
		stopProfile, err := startCPUProfile(*cpuProfile)
		if err != nil {
			vo.say(slog.LevelError, "weir: "+err.Error(), "cpu profile", "err", err.Error())
			return ExitRuntime
		}
		defer stopProfile()
	}
	if *memProfile != "" {
		writeHeap, err := heapProfile(*memProfile)
		if err != nil {
			vo.say(slog.LevelError, "weir: "+err.Error(), "memory profile", "err", err.Error())
			return ExitRuntime
		}
		defer func() {
			if err := writeHeap(); err != nil {
				vo.say(slog.LevelError, "weir: "+err.Error(), "memory profile", "err", err.Error())
			}
		}()
	}
	sd, err := sdnotify.FromEnv()
	if err != nil {
		log.Warn("systemd notifications: the watchdog is off", "err", err)
	}
	r := &runner{c: c, con: con, vo: vo, log: log, sigs: sigs, src: src, spec: spec, sd: sd}
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

// listFlag collects a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

// resetState moves aside the state files of the sources --reset-state
// names, before the first run (a reload never resets). A name that is not a
// source, or a source that keeps no state file, is a usage error: a reset
// that does nothing must not pass for one that worked.
func resetState(spec *pipeline.Spec, names []string, log *slog.Logger) error {
	for _, name := range names {
		i := slices.IndexFunc(spec.Sources, func(s pipeline.SourceSpec) bool { return s.Name == name })
		if i < 0 {
			var have []string
			for _, s := range spec.Sources {
				have = append(have, s.Name)
			}
			return fmt.Errorf("--reset-state %s: the configuration has no source %q (its sources: %s)", name, name, strings.Join(have, ", "))
		}
		k, ok := spec.Sources[i].Source.(statestore.Keeper)
		var files []string
		if ok {
			files = k.StateFiles()
		}
		if len(files) == 0 {
			return fmt.Errorf("--reset-state %s: source %s keeps no state file (its positions live elsewhere, such as a Kafka group or a replication slot)", name, name)
		}
		for _, f := range files {
			aside, err := statestore.Reset(f, statestore.Options{Log: log, Source: name})
			if err != nil {
				return fmt.Errorf("--reset-state %s: %w", name, err)
			}
			if aside == "" {
				log.Info("--reset-state: the source has no state file yet; nothing to reset", "source", name, "path", f)
			}
		}
	}
	return nil
}

// runner runs one pipeline after another: the configuration, and the ones
// reloads bring, until a run ends by itself or is interrupted.
type runner struct {
	c       *command
	con     *console
	vo      voice
	log     *slog.Logger
	sigs    <-chan os.Signal
	changed <-chan struct{} // --watch: the file changed
	// sd tells systemd (Type=notify) where the run is; watchdog ticks when
	// it wants pings (internal/sdnotify).
	sd       *sdnotify.Notifier
	watchdog <-chan time.Time

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
	// total sums every run's report: the summary counts since the process
	// started, not since the last reload.
	total fleet.Totals
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
	if every := r.sd.WatchdogInterval(); every > 0 {
		t := time.NewTicker(every)
		defer t.Stop()
		r.watchdog = t.C
	}
	defer func() {
		if err := r.handover.Close(context.Background()); err != nil {
			r.log.Warn("closing a source kept for a reload", "err", err)
		}
	}()
	for {
		var report *pipeline.Report // set before Run returns
		opts := []pipeline.Option{pipeline.WithLogger(r.log), pipeline.WithReport(func(rep *pipeline.Report) { report = rep }),
			pipeline.WithHandover(r.handover)}
		started := make(chan struct{}, 1)
		opts = append(opts, pipeline.WithStarted(func() { started <- struct{}{} }))
		if w := r.con.progress(); w != nil && !r.vo.json {
			// A progress line is for eyes; in JSON mode every line is a record.
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
		code, again := r.wait(done, started, &report)
		stop()
		if !again {
			return code
		}
	}
}

// wait handles signals and reloads until the run returns; it reports
// whether to start the next configuration, or else the exit code.
func (r *runner) wait(done <-chan error, started <-chan struct{}, report **pipeline.Report) (int, bool) {
	for {
		select {
		case <-started:
			r.notify(r.sd.Ready("running " + r.src.name))
		case <-r.watchdog:
			r.notify(r.sd.Watchdog())
		case err := <-done:
			select {
			case <-started: // a short run: say it started before it stopped
				r.notify(r.sd.Ready("running " + r.src.name))
			default:
			}
			r.unread += unread(*report)
			if *report != nil {
				r.total.Add(*report)
			}
			if r.next != nil && r.first.IsZero() && err == nil {
				r.log.Info("reload: the previous configuration stopped with everything delivered committed; starting the new one",
					append(reportCounts(*report), "sources_kept", r.handover.Kept())...)
				r.spec, r.src, r.next, r.nextSrc = r.next, r.nextSrc, nil, nil
				return 0, true
			}
			if r.first.IsZero() { // else the interrupt said so
				r.notify(r.sd.Stopping("stopped: " + stopCause(err)))
			}
			if sum := r.total.Report(); sum != nil {
				// stderr, never stdout: a stdout sink's output must stay pure NDJSON.
				r.vo.summary(sum)
			}
			return exitCode(r.vo, err, r.unread), false
		case <-r.changed:
			r.reload("the file changed")
		case sig := <-r.sigs:
			switch {
			case sig == syscall.SIGHUP:
				r.reload("SIGHUP")
			case r.first.IsZero():
				r.first = r.now()
				r.log.Info("interrupt: shutting down gracefully (interrupt again, a second or more later, to exit at once)", "signal", sig.String())
				r.notify(r.sd.Stopping("shutting down gracefully after " + sig.String()))
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
				r.vo.say(slog.LevelWarn, "weir: second interrupt: exiting at once; uncommitted data will be read again",
					"second interrupt: exiting at once; uncommitted data will be read again", "exit_code", ExitSignal)
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
	r.notify(r.sd.Reloading("reloading " + r.src.name + " (" + why + ")"))
	src, err := r.src.reread()
	var spec *pipeline.Spec
	if err == nil {
		spec, err = src.load(func(w *config.Error) { r.log.Warn(w.Error()) })
	}
	if err != nil {
		r.refused(err)
		return
	}
	src.reloaded = true
	r.next, r.nextSrc = spec, src
	keep := pipeline.UnchangedSources(r.spec, spec)
	r.handover.Keep(keep...)
	r.log.Info("reload: the new configuration is valid; stopping the pipeline (what is in flight is written and committed) to start it",
		"sources_to_keep", keep)
	r.stop()
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
	// The reload is over: still running, with the configuration it had.
	r.notify(r.sd.Ready("reload refused (the new configuration has problems: see the log); running the previous one"))
	if r.c.reloaded != nil {
		r.c.reloaded(false)
	}
}

// stopCause is a run's end in a few words, for systemctl status.
func stopCause(err error) string {
	if err != nil {
		return err.Error()
	}
	return "the input is done"
}

// notify logs a notification systemd did not get; the run goes on.
func (r *runner) notify(err error) {
	if err != nil {
		r.log.Warn("systemd notification not sent", "err", err)
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

// heapProfile creates path, so that an unwritable one fails before the run,
// and returns the function that writes the allocations profile (every
// allocation sampled since the start, and the heap live at the last
// collection) to it at the end.
func heapProfile(path string) (func() error, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("memprofile: %w", err)
	}
	return func() error {
		runtime.GC() // the live heap as of now, not of the last cycle
		err := pprof.Lookup("allocs").WriteTo(f, 0)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("memprofile: %w", err)
		}
		return nil
	}, nil
}

// exitCode is the exit code of a run that ended with err, having left
// unread bytes of input over all its configurations; vo says why.
func exitCode(vo voice, err error, unread int64) int {
	if err == nil {
		if unread > 0 {
			vo.say(slog.LevelWarn, fmt.Sprintf("weir: finished, but %s of input were left unread (see the summary and the warnings above)", words.Plural(unread, "byte")),
				"finished, but input was left unread (see the summary and the warnings above)", "unread_bytes", unread, "exit_code", ExitUnread)
			return ExitUnread
		}
		return ExitOK
	}
	code := ExitRuntime
	var fe *connector.FieldError
	if errors.Is(err, pipeline.ErrSpec) || errors.As(err, &fe) {
		// A connector found an option wrong only when it met the world
		// (a path that matches no file): still the configuration.
		code = ExitConfig
	}
	vo.say(slog.LevelError, "weir: "+err.Error(), "stopped", "err", err.Error(), "exit_code", code)
	return code
}

func unread(r *pipeline.Report) int64 {
	if r == nil {
		return 0
	}
	return r.UnreadBytes()
}
