//go:build !unsafe_ack

package file

// unsafeHoldBack returns the chunks a Persist renames into view: in every
// normal build, the group's own. See unsafe_on.go, which only a build with
// the unsafe_ack tag compiles, for the deliberately broken Flush the crash
// test must catch.
func (*Sink) unsafeHoldBack(chunks []*chunk) []*chunk { return chunks }
