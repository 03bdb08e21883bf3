package fileformat

import (
	"bytes"
	"fmt"
	"io"

	"github.com/weir-etl/weir/record"
)

// Ext is the file name extension of a chunk or object of format (ndjson,
// lines or parquet) compressed with compression (none, gzip or zstd): for
// parquet the compression is the column codec and the extension stays
// .parquet.
func Ext(format, compression string) string {
	if format == "parquet" {
		return ".parquet"
	}
	ext := ".ndjson"
	if format == "lines" {
		ext = ".txt"
	}
	switch compression {
	case "gzip":
		return ext + ".gz"
	case "zstd":
		return ext + ".zst"
	}
	return ext
}

// CheckLine returns why the value v of r cannot be one line of format
// (ndjson or lines): a line break (reading the file back would give two
// records), a carriage return at the end (readers drop it), or, for ndjson,
// a value that is not one JSON value. JSON is checked once per record: a
// condition or map that already read the value as JSON has checked it. The
// error is the record's fault; the caller prefixes its own name.
func CheckLine(format string, r *record.Record, v []byte) error {
	if bytes.IndexByte(v, '\n') >= 0 {
		return fmt.Errorf("the value holds a line break, which a line of %s cannot: it would read back as two records", format)
	}
	if len(v) > 0 && v[len(v)-1] == '\r' {
		return fmt.Errorf("the value ends with a carriage return, which readers of %s drop as part of the line ending", format)
	}
	if format == "ndjson" {
		if err := r.CheckJSON(); err != nil {
			return fmt.Errorf("the value is not one JSON value, which NDJSON requires (%v): fix the producer, or write it with format: lines", err)
		}
	}
	return nil
}

// CheckType reports whether s is a parquet column type the schema option
// takes, and if not, why.
func CheckType(s string) error {
	_, err := parseType(s)
	return err
}

// WriteInferred writes the records inf collected as one parquet file to out,
// under the schema they all fit, compressed with compression (the column
// codec), and closes the file's writer.
func WriteInferred(out io.Writer, inf *Inferred, compression string) error {
	pq := NewParquetWriter(out, inf.Schema(), compression)
	for _, v := range inf.pending {
		row, err := pq.Convert(v)
		if err != nil {
			// The schema was inferred from these very records.
			panic("fileformat: a record does not fit the schema inferred from it: " + err.Error())
		}
		if err := pq.Write(row); err != nil {
			return err
		}
	}
	return pq.Close()
}
