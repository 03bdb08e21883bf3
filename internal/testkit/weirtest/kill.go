package weirtest

import "time"

// KillBound is a kill loop's next bound on its random delay before a kill,
// after kill number kills of the at least minKills a test needs, when the
// share done of the work is finished. The schedule aims to end the input
// ten kills past minKills: ahead of it the bound shrinks to six tenths (not
// below floor), behind it the bound grows by 15% (not above ceiling). A
// bound that grows fast while behind carries several kills' worth of
// progress in one run, and a loop aiming four kills past its minimum,
// growing by 30%, finished after 19 kills of the 20 it needed.
func KillBound(bound time.Duration, done float64, kills, minKills int, floor, ceiling time.Duration) time.Duration {
	if done > float64(kills)/float64(minKills+10) {
		return max(floor, bound*6/10)
	}
	return min(ceiling, bound*23/20)
}
