package fleet

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/weir-etl/weir/config"
)

// APIOptions say who may use the pipelines API.
//
//   - Mutate (weir run --api) turns the changing routes on; without it they
//     answer 403 and the API only reads.
//   - Token (WEIR_API_TOKEN, or --api-token-file), when set, is required as
//     Authorization: Bearer on every route of the API and on the pipelines'
//     data endpoints, on any address. Without one, the API is served on a
//     loopback listener only (the command line refuses --api beyond
//     loopback without a token).
type APIOptions struct {
	Mutate bool
	Token  string
}

// TokenEnvVar is where weir run and weir pipelines read the API token.
const TokenEnvVar = "WEIR_API_TOKEN"

// maxBody is the largest configuration the API accepts.
const maxBody = 4 << 20

// route is one route of the fleet's mux. Every route is registered from
// routes, and the OpenAPI document must list exactly these (api_test.go).
type route struct {
	method, path string
	mutating     bool
	data         bool // shows configurations or records: guarded as the taps are
	h            func(f *Fleet, w http.ResponseWriter, r *http.Request)
}

var routes = []route{
	{"GET", "/api/v1/openapi.json", false, false, (*Fleet).openapi},
	{"GET", "/api/v1/pipelines", false, true, (*Fleet).list},
	{"GET", "/api/v1/pipelines/{name}", false, true, (*Fleet).getOne},
	{"PUT", "/api/v1/pipelines/{name}", true, true, (*Fleet).put},
	{"DELETE", "/api/v1/pipelines/{name}", true, true, (*Fleet).del},
	{"POST", "/api/v1/pipelines/{name}/pause", true, true, (*Fleet).pauseRoute},
	{"POST", "/api/v1/pipelines/{name}/resume", true, true, (*Fleet).resumeRoute},
	{"POST", "/api/v1/pipelines/{name}/reset", true, true, (*Fleet).resetRoute},
	{"GET", "/metrics", false, false, nil},
	{"GET", "/healthz", false, false, func(_ *Fleet, w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") }},
	{"GET", "/readyz", false, false, (*Fleet).readyz},
}

// guard applies the API's rules before h sees the request, and before its
// body is read.
type guard struct {
	token  [sha256.Size]byte
	hasTok bool
	mutate bool
	beyond bool
}

func (g guard) authorized(r *http.Request) bool {
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	sum := sha256.Sum256([]byte(strings.TrimSpace(got)))
	return ok && subtle.ConstantTimeCompare(sum[:], g.token[:]) == 1
}

// check returns the status and words of a refusal, or 0.
func (g guard) check(r *http.Request, mutating, data bool) (int, string) {
	if mutating && !g.mutate {
		return http.StatusForbidden, "the pipelines API is read-only: start weir run with --api to create, change, pause, reset or delete pipelines through it"
	}
	if !mutating && !data {
		return 0, ""
	}
	switch {
	case g.hasTok && !g.authorized(r):
		return http.StatusUnauthorized, "this route needs the API token: send Authorization: Bearer and the token weir run was given (" + TokenEnvVar + " or --api-token-file)"
	case !g.hasTok && g.beyond:
		return http.StatusForbidden, "this route is not served on an address beyond loopback without a token: set " + TokenEnvVar + " (or --api-token-file) for weir run, or listen on 127.0.0.1"
	}
	return 0, ""
}

func (f *Fleet) handler(beyond bool) http.Handler {
	g := guard{hasTok: f.o.API.Token != "", mutate: f.o.API.Mutate, beyond: beyond}
	if g.hasTok {
		g.token = sha256.Sum256([]byte(f.o.API.Token))
	}
	mux := http.NewServeMux()
	metrics := f.metricsHandler()
	for _, rt := range routes {
		rt := rt
		mux.HandleFunc(rt.method+" "+rt.path, func(w http.ResponseWriter, r *http.Request) {
			if code, why := g.check(r, rt.mutating, rt.data); code != 0 {
				if code == http.StatusUnauthorized {
					w.Header().Set("WWW-Authenticate", `Bearer realm="weir"`)
				}
				writeErr(w, code, why, nil)
				return
			}
			if rt.h == nil {
				metrics.ServeHTTP(w, r)
				return
			}
			if rt.mutating {
				r.Body = http.MaxBytesReader(w, r.Body, maxBody)
			}
			rt.h(f, w, r)
		})
	}
	// A pipeline's own endpoints (status page, /api/v1/status, taps,
	// /metrics of its running run) under /pipelines/NAME/; what shows
	// records is guarded by the API's token as well as the pipeline's own.
	mux.HandleFunc("/pipelines/{name}/", func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("name")
		rest := strings.TrimPrefix(r.URL.Path, "/pipelines/"+name)
		if strings.HasPrefix(rest, "/api/") || strings.HasPrefix(rest, "/debug/pprof") {
			if code, why := g.check(r, false, true); code != 0 {
				writeErr(w, code, why, nil)
				return
			}
		}
		p, err := f.get(name)
		if err != nil {
			writeErr(w, http.StatusNotFound, err.Error(), nil)
			return
		}
		p.mu.Lock()
		h := p.mux
		p.mu.Unlock()
		if h == nil {
			writeErr(w, http.StatusServiceUnavailable, fmt.Sprintf("pipeline %s is %s: its endpoints are served while it runs", name, p.info().State), nil)
			return
		}
		http.StripPrefix("/pipelines/"+name, h).ServeHTTP(w, r)
	})
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, "<!doctype html><title>weir pipelines</title><h1>weir pipelines</h1><ul>")
		for _, n := range f.Names() {
			p, err := f.get(n)
			if err != nil {
				continue
			}
			fmt.Fprintf(w, `<li><a href="pipelines/%s/">%s</a> %s</li>`, n, n, p.info().State)
		}
		fmt.Fprint(w, `</ul><p><a href="api/v1/pipelines">api/v1/pipelines</a> · <a href="metrics">metrics</a></p>`)
	})
	return mux
}

// errorBody is every refusal's body.
type errorBody struct {
	Error    string   `json:"error"`
	Problems []string `json:"problems,omitempty"`
}

func writeErr(w http.ResponseWriter, code int, msg string, problems []string) {
	writeJSON(w, code, errorBody{Error: msg, Problems: problems})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// failed answers err from the fleet with the status it calls for.
func failed(w http.ResponseWriter, err error) {
	var pr *Problems
	switch {
	case errors.As(err, &pr):
		var list []string
		var es *config.Errors
		if errors.As(pr.Err, &es) {
			for _, e := range es.List {
				list = append(list, e.Error())
			}
		} else {
			list = []string{pr.Err.Error()}
		}
		writeErr(w, http.StatusBadRequest, "the configuration has problems; nothing was changed (a running version goes on)", list)
	case errors.Is(err, ErrNoPipeline):
		writeErr(w, http.StatusNotFound, err.Error(), nil)
	case errors.Is(err, ErrNotPaused), errors.Is(err, errEnded):
		writeErr(w, http.StatusConflict, err.Error(), nil)
	case errors.Is(err, ErrNoState):
		writeErr(w, http.StatusBadRequest, err.Error(), nil)
	default:
		writeErr(w, http.StatusBadRequest, err.Error(), nil)
	}
}

//go:embed openapi.json
var openapiDoc []byte

func (f *Fleet) openapi(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(openapiDoc)
}

// PipelineDoc is the body of GET /api/v1/pipelines/{name}.
type PipelineDoc struct {
	Info
	Config string `json:"config"` // the configuration file as given
}

func (f *Fleet) list(w http.ResponseWriter, _ *http.Request) {
	out := struct {
		Pipelines []Info `json:"pipelines"`
	}{Pipelines: []Info{}}
	for _, n := range f.Names() {
		if p, err := f.get(n); err == nil {
			out.Pipelines = append(out.Pipelines, p.info())
		}
	}
	writeJSON(w, http.StatusOK, out)
}

func (f *Fleet) getOne(w http.ResponseWriter, r *http.Request) {
	p, err := f.get(r.PathValue("name"))
	if err != nil {
		failed(w, err)
		return
	}
	p.mu.Lock()
	doc := PipelineDoc{Info: p.infoLocked(), Config: string(p.data)}
	p.mu.Unlock()
	writeJSON(w, http.StatusOK, doc)
}

func (f *Fleet) put(w http.ResponseWriter, r *http.Request) {
	data, err := io.ReadAll(r.Body)
	if err != nil {
		writeErr(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("reading the configuration: %v (at most %d bytes)", err, maxBody), nil)
		return
	}
	name := r.PathValue("name")
	created, err := f.Apply(name, "api", data)
	if err != nil {
		failed(w, err)
		return
	}
	code := http.StatusOK
	if created {
		code = http.StatusCreated
	}
	p, err := f.get(name)
	if err != nil {
		failed(w, err)
		return
	}
	writeJSON(w, code, p.info())
}

func (f *Fleet) del(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Minute)
	defer cancel()
	name := r.PathValue("name")
	if err := f.Delete(ctx, name); err != nil {
		failed(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"deleted": name})
}

func (f *Fleet) pauseRoute(w http.ResponseWriter, r *http.Request) {
	f.setPaused(w, r, true)
}

func (f *Fleet) resumeRoute(w http.ResponseWriter, r *http.Request) {
	f.setPaused(w, r, false)
}

func (f *Fleet) setPaused(w http.ResponseWriter, r *http.Request, paused bool) {
	name := r.PathValue("name")
	op := f.Resume
	if paused {
		op = f.Pause
	}
	if err := op(name); err != nil {
		failed(w, err)
		return
	}
	p, err := f.get(name)
	if err != nil {
		failed(w, err)
		return
	}
	writeJSON(w, http.StatusOK, p.info())
}

// ResetRequest is the body of POST /api/v1/pipelines/{name}/reset.
type ResetRequest struct {
	Source string `json:"source"`
	// Confirm must be the source's name again: a reset reads the source
	// again from its start.
	Confirm string `json:"confirm"`
}

func (f *Fleet) resetRoute(w http.ResponseWriter, r *http.Request) {
	var req ResetRequest
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		writeErr(w, http.StatusBadRequest, fmt.Sprintf("the body must be JSON: {\"source\": NAME, \"confirm\": NAME}: %v", err), nil)
		return
	}
	switch {
	case req.Source == "":
		writeErr(w, http.StatusBadRequest, "source: name the source whose positions to reset", nil)
		return
	case req.Confirm != req.Source:
		writeErr(w, http.StatusBadRequest, fmt.Sprintf("confirm: a reset reads source %s again from its start; set \"confirm\" to %q to do it", req.Source, req.Source), nil)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Minute)
	defer cancel()
	name := r.PathValue("name")
	if err := f.Reset(ctx, name, req.Source); err != nil {
		failed(w, err)
		return
	}
	p, err := f.get(name)
	if err != nil {
		failed(w, err)
		return
	}
	writeJSON(w, http.StatusOK, p.info())
}

func (f *Fleet) readyz(w http.ResponseWriter, _ *http.Request) {
	out := struct {
		Ready     bool             `json:"ready"`
		Pipelines map[string]State `json:"pipelines"`
	}{Ready: true, Pipelines: map[string]State{}}
	for _, n := range f.Names() {
		p, err := f.get(n)
		if err != nil {
			continue
		}
		st := p.info().State
		out.Pipelines[n] = st
		if st != Running && st != Paused && st != Finished {
			out.Ready = false
		}
	}
	code := http.StatusOK
	if !out.Ready {
		code = http.StatusServiceUnavailable
	}
	writeJSON(w, code, out)
}
