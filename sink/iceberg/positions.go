package iceberg

import (
	"encoding/json"
	"fmt"

	"github.com/apache/iceberg-go/table"

	"github.com/weir-etl/weir/connector"
)

// Positions live in the summary of each snapshot the sink commits, under
// one property per writer:
//
//	weir.positions.<pipeline>/<sink>  {"source": {"partition": position, ...}, ...}
//
// The value is the writer's whole map, not what the snapshot changed: the
// newest snapshot of the writer is enough to know every position, whatever
// was expired before it. A snapshot made by anyone else (another pipeline,
// a compaction, a delete) carries no such property, so the map of a writer
// is the one of the newest snapshot in the branch's ancestry that has it.
const positionsPrefix = "weir.positions."

// positionMap is a writer's stored positions: source → partition → position.
type positionMap map[string]map[string]int64

func (m positionMap) get(source, partition string) (int64, bool) {
	p, ok := m[source][partition]
	return p, ok
}

// merged returns a copy of m with ps laid over it, never lowering a
// position: a stored position only moves forward.
func (m positionMap) merged(ps []connector.GroupPosition) positionMap {
	out := make(positionMap, len(m)+1)
	for s, parts := range m {
		cp := make(map[string]int64, len(parts))
		for p, v := range parts {
			cp[p] = v
		}
		out[s] = cp
	}
	for _, gp := range ps {
		parts := out[gp.Source]
		if parts == nil {
			parts = map[string]int64{}
			out[gp.Source] = parts
		}
		if cur, ok := parts[gp.Partition]; !ok || int64(gp.Position) > cur {
			parts[gp.Partition] = int64(gp.Position)
		}
	}
	return out
}

func (m positionMap) encode() string {
	b, _ := json.Marshal(m) // map keys are sorted: the same map, the same text
	return string(b)
}

func decodePositions(s string) (positionMap, error) {
	var m positionMap
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		return nil, err
	}
	if m == nil {
		m = positionMap{}
	}
	return m, nil
}

// storedIn returns the writer's positions as of the branch head of meta:
// those of the newest snapshot in its ancestry that holds key. found is
// false when none does (a new table, or a writer that never committed);
// cut is true when the ancestry ends at an expired snapshot before one was
// found, so that positions may have been lost with it.
func storedIn(meta table.Metadata, branch, key string) (m positionMap, found, cut bool, err error) {
	head := meta.SnapshotByName(branch)
	if head == nil {
		return positionMap{}, false, false, nil
	}
	for snap := head; snap != nil; {
		if snap.Summary != nil {
			if v, ok := snap.Summary.Properties[key]; ok {
				m, err := decodePositions(v)
				if err != nil {
					return nil, false, false, fmt.Errorf("snapshot %d: summary property %s is not a positions map: %w", snap.SnapshotID, key, err)
				}
				return m, true, false, nil
			}
		}
		if snap.ParentSnapshotID == nil {
			return positionMap{}, false, false, nil
		}
		parent := meta.SnapshotByID(*snap.ParentSnapshotID)
		if parent == nil {
			return positionMap{}, false, true, nil
		}
		snap = parent
	}
	return positionMap{}, false, false, nil
}
