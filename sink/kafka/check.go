package kafka

import "context"

// Check reads the certificate files the sink names, before Open
// (connector.Checker); the brokers are not contacted.
func (s *Sink) Check(ctx context.Context) error { return s.cfg.Conn.CheckFiles() }
