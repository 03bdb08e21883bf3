//go:build integration

package s3

import (
	"strings"
	"testing"
	"time"

	"github.com/weir-etl/weir/connector/conformance"
	"github.com/weir-etl/weir/internal/testkit/s3test"
)

// The sink passes the exactly-once suite against a real server (versitygw
// in CI): its multipart uploads, conditional PUTs of the position objects
// and listings, each destination a bucket of its own.
func TestExactlyOnceConformsOnServer(t *testing.T) {
	ep := s3test.Endpoint(t)
	cl := s3test.Client(t, ep)
	for _, cmp := range []string{"none", "zstd"} {
		t.Run(cmp, func(t *testing.T) {
			conformance.TestExactlyOnce(t, eosHarness(func(t *testing.T) eosBucket {
				bucket := s3test.Bucket(t, cl)
				return eosBucket{
					build: func(t *testing.T) *Sink {
						c := NewConfig()
						c.Bucket, c.Endpoint, c.Prefix, c.Compression = bucket, ep, "out/", cmp
						c.RequestTimeout = 10 * time.Second
						s, err := New("out", c)
						if err != nil {
							t.Fatal(err)
						}
						return s
					},
					held: func(t *testing.T) [][]byte {
						var out [][]byte
						for _, k := range s3test.Keys(t, cl, bucket, "out/") {
							if !strings.HasPrefix(k, "out/_weir/") {
								out = append(out, objectLines(t, k, s3test.Get(t, cl, bucket, k))...)
							}
						}
						return out
					},
				}
			}))
		})
	}
}
