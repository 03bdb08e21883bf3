package linesource

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/weir-etl/weir/connector"
)

// stateFile is the state file's content: the committed position of every
// partition, by name. Partitions of files that are gone stay in it; they
// cost a line each.
type stateFile struct {
	Positions map[string]connector.Position `json:"positions"`
}

// loadState reads the committed positions; a state file that does not exist
// yet means nothing was committed.
func loadState(path string) (map[string]connector.Position, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]connector.Position{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("linesource: reading the state file: %w", err)
	}
	var st stateFile
	if err := json.Unmarshal(data, &st); err != nil {
		return nil, fmt.Errorf("linesource: the state file %s is not valid (%v): restore it, or delete it to read every file from the start", path, err)
	}
	if st.Positions == nil {
		st.Positions = map[string]connector.Position{}
	}
	return st.Positions, nil
}

// saveState replaces the state file with positions, atomically and durably:
// the new content goes to a temporary file beside it, which is fsynced and
// renamed over the old one, and the directory is fsynced so the rename
// itself survives a crash. A crash at any point leaves the old file or the
// new one, whole. Returning nil before the fsyncs would let the runtime
// believe positions safe that a power cut takes back, and data would be
// read again (never lost, since a position only ever moves past data the
// sinks hold; but exactly-once sinks would see the replay).
func saveState(path string, positions map[string]connector.Position) error {
	data, err := json.Marshal(stateFile{Positions: positions})
	if err != nil {
		return fmt.Errorf("linesource: encoding the state: %w", err)
	}
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	tmp, err := os.CreateTemp(dir, "."+base+".*.tmp")
	if err != nil {
		return fmt.Errorf("linesource: writing the state file: %w", err)
	}
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("linesource: writing the state file: %w", err)
	}
	return syncDir(dir)
}

// syncDir makes the names in dir durable (a rename is a change of dir).
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("linesource: syncing %s: %w", dir, err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("linesource: syncing %s: %w", dir, err)
	}
	return nil
}
