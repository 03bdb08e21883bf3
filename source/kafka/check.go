package kafka

import "context"

// Check reads the certificate files the source names, before Open
// (connector.Checker); the brokers are not contacted.
func (s *Source) Check(ctx context.Context) error { return s.cfg.Conn.CheckFiles() }
