package conformance

import "time"

// SetCancelledPollDeadline shortens the time a cancelled Poll may take, for
// the test that checks the check with a Poll that never returns.
func SetCancelledPollDeadline(d time.Duration) { cancelledPollDeadline = d }
