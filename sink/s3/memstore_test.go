package s3

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// memStore is an in-memory bucket for the unit tests: objects, multipart
// uploads and their parts, with conditional puts. fail, when set, is asked
// before every request and may fail it.
type memStore struct {
	mu      sync.Mutex
	objects map[string]memObject
	uploads map[string]*memUpload
	nextID  int
	fail    func(op, key string) error
	calls   []string // op key, in order
}

type memObject struct {
	body []byte
	etag string
}

type memUpload struct {
	key   string
	parts map[int32][]byte
}

func newMemStore() *memStore {
	return &memStore{objects: map[string]memObject{}, uploads: map[string]*memUpload{}}
}

func etagOf(b []byte) string {
	sum := md5.Sum(b)
	return `"` + hex.EncodeToString(sum[:]) + `"`
}

func (m *memStore) step(op, key string) error {
	m.calls = append(m.calls, op+" "+key)
	if m.fail != nil {
		return m.fail(op, key)
	}
	return nil
}

func (m *memStore) create(ctx context.Context, key string, meta map[string]string) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.step("create", key); err != nil {
		return "", err
	}
	m.nextID++
	id := fmt.Sprintf("u%d", m.nextID)
	m.uploads[id] = &memUpload{key: key, parts: map[int32][]byte{}}
	return id, nil
}

func (m *memStore) uploadPart(ctx context.Context, key, id string, n int32, body []byte) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.step("part", key); err != nil {
		return "", err
	}
	u := m.uploads[id]
	if u == nil || u.key != key {
		return "", errNotFound
	}
	u.parts[n] = slices.Clone(body)
	return etagOf(body), nil
}

func (m *memStore) complete(ctx context.Context, key, id string, parts []part) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.step("complete", key); err != nil {
		return err
	}
	u := m.uploads[id]
	if u == nil || u.key != key {
		return errNotFound
	}
	var body []byte
	for _, p := range parts {
		b, ok := u.parts[p.N]
		if !ok || etagOf(b) != p.ETag {
			return fmt.Errorf("InvalidPart %d", p.N)
		}
		body = append(body, b...)
	}
	delete(m.uploads, id)
	m.objects[key] = memObject{body: body, etag: etagOf(body)}
	return nil
}

func (m *memStore) abortUpload(ctx context.Context, key, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.step("abort", key); err != nil {
		return err
	}
	if u := m.uploads[id]; u == nil || u.key != key {
		return errNotFound
	}
	delete(m.uploads, id)
	return nil
}

func (m *memStore) listUploads(ctx context.Context, prefix string) ([]upload, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.step("list", prefix); err != nil {
		return nil, err
	}
	var out []upload
	for id, u := range m.uploads {
		if strings.HasPrefix(u.key, prefix) {
			out = append(out, upload{key: u.key, id: id})
		}
	}
	slices.SortFunc(out, func(a, b upload) int { return strings.Compare(a.key+a.id, b.key+b.id) })
	return out, nil
}

func (m *memStore) get(ctx context.Context, key string) ([]byte, string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.step("get", key); err != nil {
		return nil, "", err
	}
	o, ok := m.objects[key]
	if !ok {
		return nil, "", errNotFound
	}
	return slices.Clone(o.body), o.etag, nil
}

func (m *memStore) put(ctx context.Context, key string, body []byte, ifMatch string, conditional bool) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.step("put", key); err != nil {
		return "", err
	}
	o, ok := m.objects[key]
	if conditional && ((ifMatch == "" && ok) || (ifMatch != "" && (!ok || o.etag != ifMatch))) {
		return "", errPrecondition
	}
	e := etagOf(body)
	m.objects[key] = memObject{body: slices.Clone(body), etag: e}
	return e, nil
}

func (m *memStore) exists(ctx context.Context, key string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.step("head", key); err != nil {
		return false, err
	}
	_, ok := m.objects[key]
	return ok, nil
}

// visible returns the keys of the objects a reader listing prefix sees,
// the sink's _weir/ folder aside, sorted.
func (m *memStore) visible(prefix string) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for k := range m.objects {
		if strings.HasPrefix(k, prefix) && !strings.HasPrefix(k, prefix+"_weir/") {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

func (m *memStore) pending() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.uploads)
}
