//go:build unsafe_s3

package s3

// unsafeForgetPositions, only under the unsafe_s3 build tag, makes the sink
// read its position objects back without their positions, as a sink that
// stores positions but never reads them would: after a crash the runtime
// replays from the source's own commit, which lags the sink's, and the
// records between the two are written again. The crash tests here and test/s3's kill loop
// must find those duplicates; it is how they prove they can fail.
const unsafeForgetPositions = true
