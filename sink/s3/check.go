package s3

import (
	"context"

	"github.com/weir-etl/weir/connector"
)

// Check reports, before Open, a credential variable that is unset
// (connector.Checker).
func (s *Sink) Check(ctx context.Context) error { return s.cfg.Conn.Check() }

var _ connector.Checker = (*Sink)(nil)
