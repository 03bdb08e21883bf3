// Package systemd checks, against the real binary, what weir tells systemd
// under deploy/systemd/weir.service (Type=notify): the messages on a real
// unixgram socket named by NOTIFY_SOCKET, in the order systemd needs them.
//
//	go test -tags e2e ./test/systemd/
//
// The unit file itself is checked by systemd-analyze in .ci/release.sh.
package systemd
