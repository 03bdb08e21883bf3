package pipeline

import (
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"net"
	"net/http"
	"strings"
)

// dataGuard decides who may read the endpoints that show records or the
// program's insides: the taps (/api/v1/tap/), the status document
// (/api/v1/status: its events and errors quote records) and Go's profiles
// (/debug/pprof/). /metrics, /healthz, /readyz, /debug/stalls and the status
// page's own files show neither and stay open, for probes and scrapers.
//
//   - With a token (metrics.token_env), those endpoints answer only a
//     request that carries it as Authorization: Bearer, on any address.
//   - Without one, they are served on a loopback address and refused
//     (403, with what to do) on any other: a user who exposes /metrics to
//     a scraper does not expose the records with it.
type dataGuard struct {
	token  [sha256.Size]byte // of the token; compared in constant time
	hasTok bool
	beyond bool   // the listener is reachable beyond loopback
	addr   string // the listener's address, for the refusal's words
}

func newDataGuard(token string, addr net.Addr) dataGuard {
	g := dataGuard{hasTok: token != ""}
	if g.hasTok {
		g.token = sha256.Sum256([]byte(token))
	}
	if addr != nil {
		g.addr = addr.String()
		g.beyond = !loopback(addr)
	}
	return g
}

// loopback says whether addr accepts connections from this host only.
func loopback(addr net.Addr) bool {
	tcp, ok := addr.(*net.TCPAddr)
	return ok && tcp.IP.IsLoopback()
}

// wrap guards h, the endpoint what (its path, for the refusal).
func (g dataGuard) wrap(what string, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		switch {
		case g.hasTok:
			got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
			sum := sha256.Sum256([]byte(strings.TrimSpace(got)))
			if !ok || subtle.ConstantTimeCompare(sum[:], g.token[:]) != 1 {
				w.Header().Set("WWW-Authenticate", `Bearer realm="weir"`)
				http.Error(w, fmt.Sprintf("pipeline: %s needs the metrics token: send Authorization: Bearer and the value of the environment variable metrics.token_env names (weir tap and weir top read it from %s)", what, TokenEnvVar), http.StatusUnauthorized)
				return
			}
		case g.beyond:
			http.Error(w, fmt.Sprintf("pipeline: %s is not served on %s, an address beyond loopback, because it shows records: set metrics.token_env to serve it to requests that carry that token, or listen on loopback (127.0.0.1)", what, g.addr), http.StatusForbidden)
			return
		}
		h(w, r)
	}
}

// exposure says, for the log line of a listener beyond loopback, what
// anyone who reaches it can read.
func (g dataGuard) exposure() string {
	if g.hasTok {
		return "/metrics, /healthz, /readyz, /debug/stalls and the status page's files are open to anyone who reaches it; taps, /api/v1/status and profiles need the bearer token"
	}
	return "/metrics, /healthz, /readyz, /debug/stalls and the status page's files are open to anyone who reaches it; taps, /api/v1/status and profiles are refused there (set metrics.token_env to serve them with a token)"
}

// TokenEnvVar is the environment variable from which weir's own clients
// (weir tap, weir top) read the token to send.
const TokenEnvVar = "WEIR_METRICS_TOKEN"
