// Package linesource is a complete weir source written as a worked example:
// docs/connectors.md walks through it. It reads the lines of the files in a
// directory, once, and is as small as a source can be while keeping every
// promise the runtime asks of one.
//
//   - Partitions: each file is a partition, named after the file, so that a
//     restart finds it again.
//   - Positions: a position is a byte offset in the file. A record's
//     Origin.Offset is where its line begins; a batch ends after its last
//     line. Seek moves the file's reader back to a position.
//   - Commits: Commit writes every partition's committed position to a small
//     JSON state file, replaced atomically (a temporary file, fsynced, renamed
//     over the old one, the directory fsynced), so a crash leaves the old
//     positions or the new ones, never a torn file. Open reads it back and
//     assigns each file at its committed position.
//   - Skipped input: blank lines hold no record; they are counted through
//     Host.Skip (reason "blank") and committed past.
//
// The files must be complete before the run and must not change during it:
// the source does not follow appends, and a file shorter than its committed
// position stops the source with an error rather than being read again from
// a guess. source/file in this repository is the production file source.
//
// Importing the package registers the source type "lines":
//
//	sources:
//	  in:
//	    type: lines
//	    dir: ./in
//	    state_file: ./state/in.json
package linesource
