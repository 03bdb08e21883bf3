// Package s3 holds the end-to-end tests of the S3 connectors with the real
// weir binary against a real S3 server (versitygw, started by .ci/s3.sh),
// under the integration build tag:
//
//   - TestSinkKillExactlyOnce: file → s3 (parquet, zstd), weir SIGKILLed at
//     random moments, then a clean run; pyarrow's S3 filesystem reads every
//     id exactly once and boto3 finds no multipart upload left. The
//     unsafe_s3 build (a sink that never reads its positions back) must be
//     caught writing duplicates.
//   - TestSourceKillNothingMissing: s3 → file over objects of four formats
//     while new objects arrive, weir SIGKILLed at random moments; every
//     record reaches the output. TestSourceKillHeldSinkNothingMissing: the
//     same loop into the HTTP sink and a receiver that takes a request only
//     400 ms after it arrives (heldReceiver), so that kills find records
//     read and not yet durable; the unsafe_s3read build (an object taken
//     for done once read, not once committed) must be caught losing
//     records there (docs/s3.md, "How the source's kill loop proves it sees a loss").
//   - TestOutage: a second server of the test's own, stopped with SIGSTOP
//     mid-run: weir waits, /readyz and the status say so within
//     stall_warning, and weir goes on by itself when the server does.
//
// CI runs shorter versions; WEIR_S3_FULL=1 runs the sizes of the issue (1M
// lines and 20 kills for the sink, 1,000 objects and 20 kills for the
// source, an outage of 30 s).
package s3
