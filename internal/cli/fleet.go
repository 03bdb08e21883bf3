package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/weir-etl/weir/config"
	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/internal/fleet"
	"github.com/weir-etl/weir/pipeline"
	"go.yaml.in/yaml/v3"
)

// pipelineFiles are the pipeline files of -d DIR (its *.yaml and *.yml,
// not the *_test.yaml of weir test) and of every -c, by pipeline name.
type pipelineFile struct {
	name, path string
	data       []byte
}

func pipelineFiles(dir string, files []string) ([]pipelineFile, error) {
	var paths []string
	if dir != "" {
		ents, err := os.ReadDir(dir)
		if err != nil {
			return nil, fmt.Errorf("-d %s: %w", dir, err)
		}
		for _, e := range ents {
			n := e.Name()
			ext := filepath.Ext(n)
			if e.IsDir() || (ext != ".yaml" && ext != ".yml") || strings.HasSuffix(strings.TrimSuffix(n, ext), "_test") || strings.HasPrefix(n, ".") {
				continue
			}
			paths = append(paths, filepath.Join(dir, n))
		}
		sort.Strings(paths)
	}
	paths = append(paths, files...)
	var out []pipelineFile
	seen := map[string]string{}
	for _, p := range paths {
		if p == "-" {
			return nil, errors.New("-c - (stdin) cannot be one of several pipelines: give each as a file")
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("config: %w", err)
		}
		name := nameOf(p, data)
		if err := fleet.CheckName(name); err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		if other, ok := seen[name]; ok {
			return nil, fmt.Errorf("%s and %s both name a pipeline %q: rename one of the files, or set a name: of its own in one", other, p, name)
		}
		seen[name] = p
		out = append(out, pipelineFile{name: name, path: p, data: data})
	}
	return out, nil
}

// nameOf is the pipeline's name: the file's top-level name: when it has
// one, else the file's name without its extension. A file that does not
// parse keeps its file's name; loading it says what is wrong.
func nameOf(path string, data []byte) string {
	var top struct {
		Name any `yaml:"name"`
	}
	if yaml.Unmarshal(data, &top) == nil {
		if n, ok := top.Name.(string); ok && fleet.CheckName(n) == nil {
			return n
		}
	}
	base := filepath.Base(path)
	return strings.TrimSuffix(base, filepath.Ext(base))
}

// validateFleet is weir validate -d DIR: every file, every problem.
func (c *command) validateFleet(cf *configFlags, dir string, offline bool) int {
	files, err := pipelineFiles(dir, cf.files)
	if err != nil {
		return c.usageErr("weir validate", err.Error())
	}
	if len(files) == 0 {
		fmt.Fprintf(c.stderr, "weir: -d %s holds no pipeline file (*.yaml, *.yml)\n", dir)
		return ExitConfig
	}
	code := ExitOK
	for _, pf := range files {
		src := &source{name: pf.path, path: pf.path, data: pf.data, sets: cf.edits()}
		if _, err := src.loadWith(offline, func(w *config.Error) { fmt.Fprintln(c.stderr, w) }); err != nil {
			fmt.Fprintln(c.stderr, err)
			code = ExitConfig
			continue
		}
		fmt.Fprintf(c.stdout, "%s: ok (pipeline %s)\n", src.name, pf.name)
	}
	return code
}

const fleetDoc = `With -d DIR (and with several -c), every pipeline file of DIR (*.yaml,
*.yml; not *_test.yaml) runs as a pipeline of its own, named after the file:
its own checkpointer, commits, failure and reloads. One pipeline failing
never stops another; weir exits once every pipeline ended (or on an
interrupt) with 3 if one failed (1 if for its configuration), else 4 if input
was left unread, else 0, and the summary shows each pipeline. See
docs/pipelines.md.`

// runFleet is weir run -d DIR, or with several -c.
func (c *command) runFleet(cf *configFlags, dir string, watch, api bool, tokenFile string, lf logFlags) int {
	con := newConsole(c.stderr)
	h, err := lf.handler(con.w)
	if err != nil {
		return c.usageErr("weir run", err.Error())
	}
	log := slog.New(consoleHandler{h, con})
	prev := slog.Default()
	slog.SetDefault(log)
	defer slog.SetDefault(prev)
	vo := voice{json: lf.json(), w: con, log: log}

	// Signals are caught before anything is read, so that a SIGTERM while
	// the pipelines start is a graceful stop, not the default death.
	sigs := c.signals
	if sigs == nil {
		ch := make(chan os.Signal, 4)
		signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
		defer signal.Stop(ch)
		sigs = ch
	}
	files, err := pipelineFiles(dir, cf.files)
	if err != nil {
		return c.usageErr("weir run", err.Error())
	}
	if len(files) == 0 && !api {
		fmt.Fprintf(con, "weir: -d %s holds no pipeline file (*.yaml, *.yml); start with --api to add pipelines through the API\n", dir)
		return ExitConfig
	}
	token := os.Getenv(fleet.TokenEnvVar)
	if tokenFile != "" {
		b, err := os.ReadFile(tokenFile)
		if err != nil {
			return c.usageErr("weir run", fmt.Sprintf("--api-token-file: %v", err))
		}
		token = strings.TrimSpace(string(b))
		if token == "" {
			return c.usageErr("weir run", "--api-token-file "+tokenFile+" is empty")
		}
	}
	sets := append([]config.Set(nil), cf.sets...)
	load := func(name string, data []byte) (*pipeline.Spec, error) {
		return config.ParseWith(name, data, config.Options{Sets: sets, Warn: func(w *config.Error) { log.Warn(w.Error()) }})
	}
	// Every file is loaded before anything starts: a start is all or
	// nothing, and shows every problem of every file.
	bad := false
	for _, pf := range files {
		if _, err := load(pf.path, pf.data); err != nil {
			vo.problems(err)
			bad = true
		}
	}
	if bad {
		return ExitConfig
	}
	addr := cf.metricsAddr
	if addr == "" {
		addr = pipeline.DefaultMetricsAddress
	}
	fl := fleet.New(fleet.Options{Log: log, Load: load, API: fleet.APIOptions{Mutate: api, Token: token}})
	// The port is taken first (a busy one is refused before anything
	// starts) and served once the files' pipelines are in place, so that the
	// API never answers for a directory it has not read yet.
	var srv *http.Server
	serve := func() {}
	if addr != "off" {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			fmt.Fprintf(con, "weir: --metrics-addr %q: %v (choose a free address, or off)\n", addr, err)
			return ExitConfig
		}
		tcp, _ := ln.Addr().(*net.TCPAddr)
		beyond := tcp == nil || !tcp.IP.IsLoopback()
		if api && beyond && token == "" {
			ln.Close()
			return c.usageErr("weir run", fmt.Sprintf("--api on %s, an address beyond loopback, needs a token: set %s or --api-token-file (or listen on 127.0.0.1)", ln.Addr(), fleet.TokenEnvVar))
		}
		srv = &http.Server{Handler: fl.Handler(beyond), ReadHeaderTimeout: 10 * time.Second}
		serve = func() {
			go func() { _ = srv.Serve(ln) }()
			log.Info("pipelines API and metrics listening", "address", ln.Addr().String(), "api", api, "token", token != "")
			if c.listening != nil {
				c.listening(ln.Addr().String())
			}
		}
	} else if api {
		return c.usageErr("weir run", "--api needs a listener: --metrics-addr off serves no API")
	}
	defer func() {
		if srv != nil {
			_ = srv.Close()
		}
	}()
	// seen is each file's content as last applied: a rescan applies only
	// what changed in a file since, so that a configuration the API put in
	// place of a file's holds until that file changes again.
	seen := map[string]string{}
	for _, pf := range files {
		seen[pf.name] = string(pf.data)
		if _, err := fl.Apply(pf.name, pf.path, pf.data); err != nil {
			vo.problems(err)
		}
	}
	serve()

	var tick <-chan time.Time
	if watch {
		every := c.watchEvery
		if every <= 0 {
			every = watchInterval
		}
		t := time.NewTicker(every)
		defer t.Stop()
		tick = t.C
	}
	rescan := func(why string) {
		now, err := pipelineFiles(dir, cf.files)
		if err != nil {
			log.Error("reload refused: the pipeline files", "cause", why, "err", err)
			return
		}
		var names []string
		for _, pf := range now {
			names = append(names, pf.name)
			if last, ok := seen[pf.name]; ok && last == string(pf.data) {
				continue
			}
			seen[pf.name] = string(pf.data)
			if _, err := fl.Apply(pf.name, pf.path, pf.data); err != nil {
				fleetRefused(log, pf.name, err)
				if c.reloaded != nil {
					c.reloaded(false)
				}
			}
		}
		for n := range seen {
			if !slices.Contains(names, n) {
				delete(seen, n)
			}
		}
		if gone := fl.Remove(context.Background(), names); len(gone) > 0 {
			log.Info("reload: pipeline files removed; their pipelines were stopped", "pipelines", gone)
		}
	}
	stopped := make(chan struct{})
	var first time.Time
	keepOn := watch || api
	for {
		select {
		case <-fl.Changed():
			if !keepOn && fl.Active() == 0 {
				return c.fleetEnd(fl, vo, con)
			}
		case <-tick:
			rescan("a file changed")
		case <-stopped:
			return c.fleetEnd(fl, vo, con)
		case sig := <-sigs:
			switch {
			case sig == syscall.SIGHUP:
				log.Info("reload: reading the pipeline files again", "cause", "SIGHUP")
				rescan("SIGHUP")
			case first.IsZero():
				first = c.clock()
				log.Info("interrupt: shutting down every pipeline gracefully (interrupt again, a second or more later, to exit at once)", "signal", sig.String())
				go func() { fl.Stop(); close(stopped) }()
			case c.clock().Sub(first) < repeatWindow:
			default:
				vo.say(slog.LevelWarn, "weir: second interrupt: exiting at once; uncommitted data will be read again",
					"second interrupt: exiting at once; uncommitted data will be read again", "exit_code", ExitSignal)
				return ExitSignal
			}
		}
	}
}

func (c *command) clock() time.Time {
	if c.now != nil {
		return c.now()
	}
	return time.Now()
}

// fleetRefused logs a reload refused, every problem on its own line.
func fleetRefused(log *slog.Logger, name string, err error) {
	var es *config.Errors
	if errors.As(err, &es) {
		log.Error("reload refused: the new configuration has problems; the pipeline goes on with the one it runs", "pipeline", name, "file", es.File, "problems", len(es.List))
		for _, p := range es.List {
			log.Error("reload refused", "pipeline", name, "problem", p.Error())
		}
		return
	}
	log.Error("reload refused; the pipeline goes on with the one it runs", "pipeline", name, "err", err)
}

// fleetEnd stops what still runs, prints each pipeline's summary and
// returns the exit code: 3 if a pipeline failed (1 if for its
// configuration), else 4 if input was left unread, else 0.
func (c *command) fleetEnd(fl *fleet.Fleet, vo voice, con *console) int {
	fl.Stop()
	sum := fl.Summary()
	code := ExitOK
	var failed []string
	var unread int64
	for _, p := range sum.Pipelines {
		fmt.Fprintf(con, "pipeline %s: %s after %d runs (%d reloads): %d read, %d written, %d dropped, %d errors since the process started\n",
			p.Name, p.State, p.Runs, p.Reloads, p.Counts.Read, p.Counts.Written, p.Counts.Dropped, p.Counts.Errors)
		if p.Report != nil {
			for _, line := range strings.Split(strings.TrimRight(p.Report.String(), "\n"), "\n") {
				fmt.Fprintln(con, "  "+line)
			}
		}
		unread += p.UnreadBytes
		if p.State == fleet.Failed {
			failed = append(failed, p.Name)
			var fe *connector.FieldError
			if (errors.Is(p.Err, pipeline.ErrSpec) || errors.As(p.Err, &fe)) && code != ExitRuntime {
				code = ExitConfig
			} else {
				code = ExitRuntime
			}
			vo.say(slog.LevelError, fmt.Sprintf("weir: pipeline %s failed: %s", p.Name, p.Error), "pipeline failed", "pipeline", p.Name, "err", p.Error)
		}
	}
	if len(failed) > 0 {
		vo.say(slog.LevelError, fmt.Sprintf("weir: %d of %d pipelines failed (%s); the others ran on", len(failed), len(sum.Pipelines), strings.Join(failed, ", ")),
			"pipelines failed", "failed", failed, "exit_code", code)
		return code
	}
	if unread > 0 {
		return exitCode(vo, nil, unread)
	}
	return code
}
