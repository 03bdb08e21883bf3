package file

import (
	"context"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/internal/preflight"
)

// Check reports, before Open, an output directory that cannot be made
// (connector.Checker).
func (s *Sink) Check(ctx context.Context) error {
	if err := preflight.Dir(s.cfg.Path); err != nil {
		return connector.Fieldf("path", "%v: choose an output directory that can be made", err)
	}
	return nil
}
