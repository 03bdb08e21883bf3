package pgcdc

import (
	"encoding/json"
	"fmt"
	"path/filepath"

	"github.com/weir-etl/weir/internal/statestore"
)

// The snapshot's progress, kept in data_dir (one bbolt file per slot) so that
// a stopped snapshot resumes where its committed positions say. The stream's
// position needs no file: the slot keeps it.
//
// Keys: "snapshot" holds the phase; "table/<schema>.<table>" each table's
// committed position and the key of the last row before it.

// phase of the snapshot of a slot.
const (
	phasePending  = "pending"  // started (or about to create the slot): resume it
	phaseComplete = "complete" // every table delivered: stream only
)

type snapshotState struct {
	Slot  string `json:"slot"`
	Phase string `json:"phase"`
	// Exact is true for a snapshot taken with the slot's exported snapshot:
	// its rows are the state at the slot's consistent point.
	Exact bool `json:"exact"`
}

// tableState is one table's committed snapshot position.
type tableState struct {
	// Rows is the position: how many rows, in key order, are delivered.
	Rows int64 `json:"rows"`
	// Key is the text of the key columns of the last delivered row; nil
	// before the first. A table without a key restarts from its first row.
	Key  []string `json:"key,omitempty"`
	Done bool     `json:"done"`
}

func stateFile(dataDir, slot string) string {
	return filepath.Join(dataDir, "postgres_cdc-"+slot+".state")
}

// loadState reads the snapshot phase and the tables' states; ok is false when
// the store holds nothing for the slot.
func loadState(st *statestore.Store, slot string) (ph snapshotState, tables map[string]tableState, ok bool, err error) {
	tables = map[string]tableState{}
	err = st.ForEach(func(k string, v []byte) error {
		switch {
		case k == "snapshot":
			if err := json.Unmarshal(v, &ph); err != nil {
				return fmt.Errorf("pgcdc: %s: snapshot state: %w", st.Path(), err)
			}
			ok = ph.Slot == slot
		case len(k) > 6 && k[:6] == "table/":
			var ts tableState
			if err := json.Unmarshal(v, &ts); err != nil {
				return fmt.Errorf("pgcdc: %s: %s: %w", st.Path(), k, err)
			}
			tables[k[6:]] = ts
		}
		return nil
	})
	return ph, tables, ok, err
}

// resetState starts a snapshot of tables from their first rows, fsynced
// before the slot is created, so that a crash at any later point resumes a
// snapshot instead of forgetting it.
func resetState(st *statestore.Store, slot string, exact bool, tables []string) error {
	// bbolt must not read in a second transaction while the update is open.
	var old []string
	if err := st.ForEach(func(k string, _ []byte) error { old = append(old, k); return nil }); err != nil {
		return err
	}
	return st.Update(func(tx statestore.Tx) error {
		for _, k := range old {
			if err := tx.Delete(k); err != nil {
				return err
			}
		}
		ph, _ := json.Marshal(snapshotState{Slot: slot, Phase: phasePending, Exact: exact})
		if err := tx.Put("snapshot", ph); err != nil {
			return err
		}
		for _, t := range tables {
			v, _ := json.Marshal(tableState{})
			if err := tx.Put("table/"+t, v); err != nil {
				return err
			}
		}
		return nil
	})
}

// setPhase records the snapshot's phase.
func setPhase(st *statestore.Store, ph snapshotState) error {
	v, _ := json.Marshal(ph)
	return st.Update(func(tx statestore.Tx) error { return tx.Put("snapshot", v) })
}

// putTables records tables' committed positions in one atomic, fsynced update.
func putTables(st *statestore.Store, ts map[string]tableState) error {
	return st.Update(func(tx statestore.Tx) error {
		for name, t := range ts {
			v, _ := json.Marshal(t)
			if err := tx.Put("table/"+name, v); err != nil {
				return err
			}
		}
		return nil
	})
}
