package file

import (
	"context"
	"errors"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/internal/preflight"
)

// Check reports, before Open, what Open would refuse of the world the
// configuration names (connector.Checker): in mode once a path that
// matches no file, and a data_dir that cannot be made.
func (s *Source) Check(ctx context.Context) error {
	var errs []error
	if s.cfg.Mode == "once" && !s.cfg.AllowEmpty {
		if err := s.checkMatches(); err != nil {
			errs = append(errs, err)
		}
	}
	if err := preflight.Dir(s.cfg.DataDir); err != nil {
		errs = append(errs, connector.Fieldf("data_dir", "%v: the read positions are kept there; choose a directory that can be made", err))
	}
	return errors.Join(errs...)
}
