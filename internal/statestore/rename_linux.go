package statestore

import "golang.org/x/sys/unix"

// renameNoReplace renames tmp to path unless path exists (EEXIST then).
func renameNoReplace(tmp, path string) error {
	return unix.Renameat2(unix.AT_FDCWD, tmp, unix.AT_FDCWD, path, unix.RENAME_NOREPLACE)
}
