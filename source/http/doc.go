// Package http is weir's HTTP source (type http_server): it takes records
// POSTed to it and answers each request only once every record of it is
// durable in every sink it was routed to, or deliberately dropped. A request
// is a batch; the response is its acknowledgement. A client that sends a
// request again until it gets a 2xx therefore loses nothing.
//
// How a request goes (docs/http.md has the whole of it):
//
//   - Everything that needs no body is checked first: the method, the path,
//     the credentials (bearer tokens or basic auth), the in-flight limits
//     (429 with Retry-After), the declared size (413) and type (415). A
//     refused request's body is never read: the connection is closed.
//   - The body is read, decompressed (gzip, zstd) and bounded by
//     max_body_bytes; its bytes count against the in-flight byte limit as
//     they arrive. An HMAC signature, which covers the body, is checked
//     then. The body is cut into records, each a piece of the body's buffer;
//     one invalid record refuses the request (400 naming the line), so a
//     request is taken all or nothing.
//   - The records get the next offsets of their partition and wait there
//     for Poll. The request waits for Commit: the runtime commits the
//     source promptly (connector.PromptCommitter), and a commit at or past
//     the request's last offset answers it 200.
//   - The records of unanswered requests are kept, from the committed
//     position on, so that Seek (a rewind) can replay them; the in-flight
//     limits bound them. Each request holds its records in a slice of its
//     own, which Poll copies from and which is reused once the request is
//     committed.
//   - When the run stops, the source takes nothing more (503), answers 503
//     at once to requests with records that were never polled, lets the
//     others be answered by the final commit, and answers 503 to what is
//     left at Close.
//
// Positions restart at 0 in every run, so partitions are named for the run
// ("/ingest@20261201T203600Z-5f3a9c2e1b7d4a60"): a sink that stores
// positions (the exactly-once PostgreSQL sink) can never take a new run's
// records for records it already holds. The guarantee is at least once: a
// request whose answer was lost is sent again by its client and written
// twice.
//
// Goroutines. The runtime's rule is that only package pipeline starts
// goroutines; a server is the named exception, since accepting connections
// and serving them are net/http's own goroutines: Open starts the accept
// loop (Server.Serve), and net/http one goroutine per connection, which runs
// its requests' handlers. None is per byte or per record; a request's
// handler reads its body and then waits on a channel for its answer. Close
// answers every waiting request, shuts the server down and waits for the
// accept loop and every handler to return; the package's tests check with
// goleak that nothing is left.
package http
