package pgcdc

import (
	"context"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/internal/preflight"
)

// Check reports, before Open, a data_dir that cannot be made
// (connector.Checker); the server is not contacted.
func (s *Source) Check(ctx context.Context) error {
	if s.cfg.Snapshot == "never" || s.cfg.DataDir == "" {
		return nil
	}
	if err := preflight.Dir(s.cfg.DataDir); err != nil {
		return connector.Fieldf("data_dir", "%v: the snapshot's progress is kept there; choose a directory that can be made", err)
	}
	return nil
}
