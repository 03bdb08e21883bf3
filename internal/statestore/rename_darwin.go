package statestore

import "golang.org/x/sys/unix"

// renameNoReplace renames tmp to path unless path exists (EEXIST then):
// renameatx_np with RENAME_EXCL, macOS's RENAME_NOREPLACE.
func renameNoReplace(tmp, path string) error {
	return unix.RenameatxNp(unix.AT_FDCWD, tmp, unix.AT_FDCWD, path, unix.RENAME_EXCL)
}
