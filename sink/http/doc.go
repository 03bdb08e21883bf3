// Package http is weir's HTTP sink (type http): it sends a group's records
// to a receiver as NDJSON, a JSON array, or one request per record, and
// reports the group durable only once every record was answered 2xx.
//
// How a group goes (docs/http.md has the whole of it):
//
//   - Write puts each record into the request of its URL and header values
//     (a template of the record's fields), and sends a request as soon as it
//     is full (max_request_records, max_request_bytes), at most concurrency
//     at once; Flush sends the rest and waits for all of them.
//   - Each request carries an idempotency key, a digest of the sink, URL,
//     headers and the records' origins and bytes: a request sent again
//     carries the same key, so a receiver that deduplicates on it takes it
//     once.
//   - 429, 408, 425, 5xx and cut connections are sent again after a backoff,
//     never before the receiver's Retry-After; after request_retry.max_attempts the
//     group fails and the runtime's retries and failure policy take over.
//   - A status of reject_statuses (400, 422, ...) says records are at fault:
//     the request is split in halves until the refused records are found;
//     those are remembered and the Flush fails, so that the runtime writes
//     the group again and Write rejects them (connector.RejectError) to the
//     failure policy: a dead letter carries the status and the start of the
//     answer. Records the receiver took are remembered too and left out of
//     the rewrite, so they are not sent twice. 401, 403 and 404 fail the
//     group: a revoked token must stop the pipeline, not drain it into a
//     dead letter.
//
// The receiver sees records as they are sent (the sink writes through): an
// aborted group's requests may have been taken.
//
// Goroutines. The runtime's rule is that only package pipeline starts
// goroutines; this sink is a named exception, because an HTTP client's call
// blocks until its answer, so concurrency requests in flight need as many
// callers. A request's goroutine is started by Write or Flush, bounded by
// concurrency, and ends before the Flush or Abort of its group returns
// (Close waits for it too); net/http's transport keeps its own connection
// goroutines, which Close ends by closing the idle connections. The tests
// check with goleak that nothing is left.
package http
