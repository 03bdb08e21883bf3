package kafka

// ClientOpt returns the value of one of the client's options (see
// kgo.Client.OptValue), for tests of how the source configures its client.
func ClientOpt(s *Source, opt any) any { return s.cl.OptValue(opt) }

// GroupMember returns the member id and generation the client holds in its
// group ("" and -1 before it joined).
func GroupMember(s *Source) (string, int32) { return s.cl.GroupMetadata() }
