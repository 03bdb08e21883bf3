//go:build integration

package s3

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"
)

// heldReceiver is an HTTP receiver that takes a request only after holding
// it for hold: until then its records are not durable, and a client that
// goes away (a SIGKILLed weir) before the hold ends leaves nothing behind,
// as a store that had not finished its write would. A source that calls an
// object done before its records are durable loses them in that window,
// which a sink that writes within milliseconds keeps too short for a kill
// at a random moment to find.
type heldReceiver struct {
	srv  *httptest.Server
	hold time.Duration

	mu    sync.Mutex
	seen  map[int]int
	taken int
}

func newHeldReceiver(t *testing.T, hold time.Duration) *heldReceiver {
	t.Helper()
	h := &heldReceiver{hold: hold, seen: map[int]int{}}
	h.srv = httptest.NewServer(http.HandlerFunc(h.serve))
	t.Cleanup(h.srv.Close)
	return h
}

func (h *heldReceiver) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return // cut off: nothing taken
	}
	select {
	case <-time.After(h.hold):
	case <-r.Context().Done():
		return // the client went away before the write was durable
	}
	var ids []int
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		if m := idRE.FindSubmatch(sc.Bytes()); m != nil {
			id, _ := strconv.Atoi(string(m[1]))
			ids = append(ids, id)
		}
	}
	h.mu.Lock()
	for _, id := range ids {
		h.seen[id]++
	}
	h.taken++
	h.mu.Unlock()
	w.WriteHeader(http.StatusOK)
}

// ids returns a copy of each id's count among the requests taken.
func (h *heldReceiver) ids() map[int]int {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make(map[int]int, len(h.seen))
	for id, n := range h.seen {
		out[id] = n
	}
	return out
}
