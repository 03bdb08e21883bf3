package s3

import (
	"context"
	"errors"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/internal/preflight"
)

// Check reports, before Open, a data_dir that cannot be made and a
// credential variable that is unset (connector.Checker).
func (s *Source) Check(ctx context.Context) error {
	errs := []error{s.cfg.Conn.Check()}
	if err := preflight.Dir(s.cfg.DataDir); err != nil {
		errs = append(errs, connector.Fieldf("data_dir", "%v: choose a directory that can be made", err))
	}
	return errors.Join(errs...)
}

var _ connector.Checker = (*Source)(nil)
