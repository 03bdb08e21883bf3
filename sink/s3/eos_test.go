package s3

import (
	"sync"
	"testing"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/connector/conformance"
)

// eosBucket is a destination of the exactly-once suite: one bucket, where
// every instance is sink "out" on prefix out/, as the processes of one
// pipeline are.
type eosBucket struct {
	// build returns a new, unopened instance over the bucket.
	build func(t *testing.T) *Sink
	// held reads the bucket as docs/s3.md tells a reader to: every object
	// under the prefix, _weir/ aside, decompressed by its extension.
	held func(t *testing.T) [][]byte
}

// eosHarness is the exactly-once suite's harness over the buckets newBucket
// makes, one per destination.
//
// Another is a second process of the pipeline on the same prefix: docs/s3.md
// lets the processes of one Kafka consumer group share it, each partition's
// position object (written with If-Match) fencing a process that lost the
// partition.
//
// The sink commits a group partition by partition, each partition's
// position object one PUT (docs/DESIGN.md, "Object storage"): a crash
// between two of them leaves some partitions of the group committed, so
// PartitionsApart is set.
//
// Crash is nil: the sink holds no lock, and a dead process's connections
// carry nothing more (the part uploads a commit starts are all done before
// its first crash point).
func eosHarness(newBucket func(t *testing.T) eosBucket) conformance.ExactlyOnceHarness {
	var mu sync.Mutex
	buckets := map[connector.Sink]eosBucket{}
	build := func(t *testing.T, b eosBucket) connector.Sink {
		s := b.build(t)
		mu.Lock()
		buckets[s] = b
		mu.Unlock()
		return s
	}
	bucketOf := func(s connector.Sink) eosBucket {
		mu.Lock()
		defer mu.Unlock()
		return buckets[s]
	}
	return conformance.ExactlyOnceHarness{
		New:             func(t *testing.T) connector.Sink { return build(t, newBucket(t)) },
		Reopen:          func(t *testing.T, s connector.Sink) connector.Sink { return build(t, bucketOf(s)) },
		Another:         func(t *testing.T, s connector.Sink) connector.Sink { return build(t, bucketOf(s)) },
		Held:            func(t *testing.T, s connector.Sink) [][]byte { return bucketOf(s).held(t) },
		CrashPoints:     func(s connector.Sink, step func(string)) { s.(*Sink).step = step },
		PartitionsApart: true,
	}
}

// memBuckets makes in-memory buckets of sinks configured by mutate.
func memBuckets(mutate func(*Config)) func(t *testing.T) eosBucket {
	return func(t *testing.T) eosBucket {
		st := newMemStore()
		return eosBucket{
			build: func(t *testing.T) *Sink { return newMemSink(t, st, mutate) },
			held:  func(t *testing.T) [][]byte { return readLines(t, st, "out/") },
		}
	}
}

// The sink passes the exactly-once suite over the in-memory bucket, in each
// line format and compression: a crash at any step of a commit leaves every
// partition's position object and the objects a reader lists in agreement,
// and a second process writing a partition at once cannot commit records
// the first holds. eos_integration_test.go runs it against a real server.
func TestExactlyOnceConforms(t *testing.T) {
	for _, fc := range [][2]string{{"ndjson", "none"}, {"ndjson", "gzip"}, {"ndjson", "zstd"}, {"lines", "none"}} {
		t.Run(fc[0]+"-"+fc[1], func(t *testing.T) {
			conformance.TestExactlyOnce(t, eosHarness(memBuckets(func(c *Config) { c.Format, c.Compression = fc[0], fc[1] })))
		})
	}
}
