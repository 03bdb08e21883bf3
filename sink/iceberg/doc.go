// Package iceberg is weir's Apache Iceberg sink: each group of records
// becomes parquet data files and one snapshot of the table's main branch,
// committed through the table's catalog (iceberg-go's SQL catalog on
// PostgreSQL or SQLite, or a REST catalog), with the source positions the
// group reaches in the snapshot's summary. It is a connector.PositionKeeper:
// at a partition's assignment the runtime reads the positions back from the
// newest snapshot that holds them and never hands the sink a record they
// cover; and each commit re-reads them and commits on the condition that
// the branch did not move (the catalog's compare-and-swap), so that
// concurrent writers (members of one Kafka group) and a commit whose answer
// was lost never append a record twice.
//
// Write converts each record's JSON into a row exactly (convert.go: a 64-bit
// integer stays an integer, a decimal literal becomes a decimal with no
// float between) and rejects a record a column cannot hold, naming the
// column. Flush writes the data files and commits. At start the sink waits
// for an unreachable catalog or storage up to connect_timeout, adds the
// configured columns the table lacks, and deletes the data files an earlier
// run wrote but never committed (cleanup.go).
//
// iceberg-go, Apache Arrow and the AWS SDK are linked through this package
// alone. docs/iceberg.md describes the configuration, the type mapping, the
// positions in the summary and the maintenance story.
package iceberg
