// Package fileformat holds the record formats weir's file and object
// connectors share: the checks a line format makes of each value, the names
// of formats and compressions, the parquet writer with its declared or
// inferred schema, and the CSV framing of a record into named fields.
//
// It has no I/O of its own: the sinks own their files and objects (temporary
// names, renames, uploads) and the sources their reads; what is here turns
// records into bytes and bytes into records, the same way for every one of
// them.
package fileformat
