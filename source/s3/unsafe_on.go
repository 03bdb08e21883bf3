//go:build unsafe_s3read

package s3

// unsafeDoneAtRead, only under the unsafe_s3read build tag, records an
// object as done once it is read to its end rather than once its records
// are committed: the watermark then passes objects whose records are still
// in flight, and a crash loses them. test/s3's kill loop of the source must
// find them missing; it is how that test proves it can fail.
const unsafeDoneAtRead = true
