package kafka

// The client fetches ahead of Poll: each fetch response is buffered whole
// until the source has taken every record of it, and the next fetch from the
// same broker is sent only then. What the client holds is therefore bounded
// by the number of fetches buffered or in flight at once times the size of a
// fetch, and both are derived from the pipeline's in-flight byte limit
// (max_in_flight_bytes), which the runtime hands the source before Open
// (connector.ReadAheadLimiter):
//
//   - a fetch response is at most 1/readAheadShare of the limit
//     (kgo.FetchMaxBytes), between minFetchBytes and maxFetchBytes;
//   - one partition's part of it is at most maxPartitionFetchBytes
//     (kgo.FetchMaxPartitionBytes), and never more than the fetch;
//   - at most maxConcurrentFetches fetches are buffered or in flight at once
//     (kgo.MaxConcurrentFetches), however many brokers lead the partitions.
//
// The share is small because a fetch's size is counted as the broker sends
// it, compressed, while in memory every record is decompressed and gets a
// structure of the client's (about 160 bytes): records of ~100 bytes of
// JSON, snappy-compressed by the producer, take about 13 times their fetched
// size (a 4 MiB fetch held 200,000 of them, 52 MB). At 1/64 of the limit,
// two fetches of such records hold about 0.4 of it; and the runtime holds at
// most the limit in records (record.Record.Size), which together with the
// records the source took but has not handed out yet (max_poll_records) is
// what a Kafka source's pipeline keeps in memory. Fetches of 1 MiB (the
// default limit's) read a local broker as fast as fetches of 50 MiB (the
// client's default) did: go run ./bench/kafka, docs/kafka.md.
// fetch_max_bytes, when set, replaces the derived fetch size.
const (
	// readAheadShare is the fraction of the in-flight limit one fetch
	// response may be: 64 MiB, the runtime's default, gives 1 MiB fetches.
	readAheadShare = 64
	// maxConcurrentFetches bounds the fetches buffered or in flight: two
	// keep one broker's response arriving while another's is read.
	maxConcurrentFetches = 2
	// minFetchBytes keeps a fetch useful under a tiny limit: a partition's
	// default fetch size.
	minFetchBytes = 1 << 20
	// maxFetchBytes is the client's default fetch size, which a large limit
	// does not raise: larger responses do not read faster.
	maxFetchBytes = 50 << 20
	// maxPartitionFetchBytes is the client's default for one partition.
	maxPartitionFetchBytes = 1 << 20
	// defaultInFlightBytes is the limit assumed when the source is used
	// without a runtime that calls LimitReadAhead: the runtime's default.
	defaultInFlightBytes = 64 << 20
)

// readAhead is how much the client may fetch ahead of Poll.
type readAhead struct {
	fetchBytes     int32 // kgo.FetchMaxBytes
	partitionBytes int32 // kgo.FetchMaxPartitionBytes
	fetches        int   // kgo.MaxConcurrentFetches
}

// readAheadFor derives the client's fetch sizes from the in-flight byte
// limit (0: not known, the runtime's default), unless fetchMaxBytes (the
// fetch_max_bytes option; 0: derive it) sets the fetch size.
func readAheadFor(inFlightBytes int64, fetchMaxBytes int32) readAhead {
	if inFlightBytes <= 0 {
		inFlightBytes = defaultInFlightBytes
	}
	fetch := int64(fetchMaxBytes)
	if fetch <= 0 {
		fetch = min(max(inFlightBytes/readAheadShare, minFetchBytes), maxFetchBytes)
	}
	return readAhead{
		fetchBytes:     int32(fetch),
		partitionBytes: int32(min(fetch, maxPartitionFetchBytes)),
		fetches:        maxConcurrentFetches,
	}
}

// LimitReadAhead implements connector.ReadAheadLimiter: the runtime calls it
// before Open with the pipeline's in-flight byte limit, from which the
// client's fetch sizes are derived (see readAheadFor).
func (s *Source) LimitReadAhead(inFlightBytes int64) {
	s.inFlightBytes = inFlightBytes
}
