// Package jsonlsink is a complete weir sink written as a worked example:
// docs/connectors.md walks through it. It writes each record's value as one
// line of JSON, a group of records to one file, and makes each file visible
// only once it is complete and durable.
//
//   - A group (the records written between two Flushes) goes to a hidden
//     temporary file in the output directory.
//   - Flush writes out the file's buffer, fsyncs it, renames it to its final
//     name, PREFIX-NNNNNNNN.jsonl, and fsyncs the directory, in that order,
//     and only then returns nil: the runtime acknowledges the records, and the
//     source may commit past them, only once they survive a crash.
//   - Abort deletes the temporary file: nothing of a failed group is seen.
//   - A record whose value is not one line of JSON cannot be written as it
//     is: Write rejects it (connector.RejectError), and the sink's failure
//     policy decides (a dead letter sink takes it, or the pipeline halts).
//     The sink never rewrites a value to make it fit.
//
// Files are numbered in the order they became visible, after the highest
// number already in the directory, so a reader that sorts names reads groups
// in order. One sink owns a directory (and prefix): Open deletes the
// temporary files it finds, left by a crash, and two sinks writing the same
// names would replace each other's files.
//
// Importing the package registers the sink type "jsonl":
//
//	sinks:
//	  out:
//	    type: jsonl
//	    inputs: [in]
//	    dir: ./out
package jsonlsink
