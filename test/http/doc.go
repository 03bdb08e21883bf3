// Package http holds the end-to-end tests of the HTTP source and sink with
// the real weir binary: the kill loop (tag e2e) and the partition names
// against the exactly-once PostgreSQL sink (tag integration). docs/http.md
// says what each checks.
package http
