// Package filerotate checks, against the real binary, that the file source
// reads every line of a log that is rotated while weir is stopped, killed or
// running: renamed within its directory, renamed into another directory that
// the `rotated` glob names, and copied then truncated (copytruncate).
//
//	go test -tags e2e ./test/filerotate/
//
// Each test writes NDJSON lines with unique ids, rotates the file the way
// logrotate does, and waits until every id is in the file sink's visible
// output. It then stops weir and checks the source's state store: the rotated
// file, read to its end, is forgotten, and only the live file is left.
package filerotate
