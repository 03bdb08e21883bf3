//go:build !linux && !darwin

package statestore

import "errors"

// renameNoReplace has no atomic form here: publish then reports the hard
// link's error, and the store is not created rather than risk replacing one.
func renameNoReplace(tmp, path string) error {
	return errors.ErrUnsupported
}
