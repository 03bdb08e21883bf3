#!/usr/bin/env bash
# s3.sh starts and stops the S3 server that weir's object storage and Iceberg
# integration tests run against: versitygw, an Apache-2.0 S3 gateway written in
# Go that serves a POSIX directory (one bucket per top-level folder).
#
#   bash .ci/s3.sh install  # go install the pinned versitygw (cached in GOPATH/bin)
#   bash .ci/s3.sh start    # install (when missing), start, wait until it answers
#   bash .ci/s3.sh stop     # stop it (SIGTERM, then SIGKILL after a bound)
#   bash .ci/s3.sh status   # exit 0 when the server answers
#   bash .ci/s3.sh env      # print the variables the tests read
#
# The server listens on loopback only, 127.0.0.1:$WEIR_S3_PORT (7070), in
# single-account mode: the root access key `weir` and a random secret made at
# the first start and kept in $WEIR_S3_DIR/secret (mode 0600). An unsigned or
# wrongly signed request gets 403, as from AWS. `env` prints the endpoint, the
# region and the credentials in the AWS SDKs' own variable names, so that
# weir, boto3 and pyarrow all find them through the default credential chain.
# Data lives in $WEIR_S3_DIR/data; tests create buckets of their own, named
# after the test, so runs in parallel do not meet. `start` is idempotent.
set -euo pipefail

VERSITYGW_VERSION="${VERSITYGW_VERSION:-v1.8.0}"
HOST=127.0.0.1
PORT="${WEIR_S3_PORT:-7070}"
WEIR_S3_DIR="${WEIR_S3_DIR:-${TMPDIR:-/tmp}/weir-s3}"
START_TIMEOUT="${WEIR_S3_START_TIMEOUT:-60}"
ACCESS_KEY=weir

data="$WEIR_S3_DIR/data"
logfile="$WEIR_S3_DIR/server.log"
pidfile="$WEIR_S3_DIR/server.pid"
secretfile="$WEIR_S3_DIR/secret"

say() { echo "s3.sh: $*" >&2; }
die() {
	say "$*"
	exit 1
}

bin() { echo "$(go env GOPATH)/bin/versitygw"; }

install() {
	# The binary's own build information names the module version it was built from.
	if [[ -x "$(bin)" ]] && go version -m "$(bin)" 2>/dev/null | grep -qE "^\s+mod\s+github.com/versity/versitygw\s+$VERSITYGW_VERSION\s"; then
		return
	fi
	say "installing versitygw $VERSITYGW_VERSION (a few minutes on a fresh module cache)"
	go install "github.com/versity/versitygw/cmd/versitygw@$VERSITYGW_VERSION"
	[[ -x "$(bin)" ]] || die "go install finished but $(bin) is missing"
}

answers() {
	# Any HTTP answer (403 to an unsigned request) means the server is up.
	local code
	code="$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "http://$HOST:$PORT/" 2>/dev/null || true)"
	[[ -n "$code" && "$code" != "000" ]]
}

running() {
	[[ -f "$pidfile" ]] && kill -0 "$(cat "$pidfile")" 2>/dev/null
}

start() {
	install
	mkdir -p "$data"
	if [[ ! -f "$secretfile" ]]; then
		(umask 077 && head -c 48 /dev/urandom | base64 | tr -dc 'A-Za-z0-9' | head -c 32 >"$secretfile")
	fi
	if running && answers; then
		say "already running on $HOST:$PORT"
		return
	fi
	say "starting on $HOST:$PORT (log $logfile)"
	ROOT_ACCESS_KEY="$ACCESS_KEY" ROOT_SECRET_KEY="$(cat "$secretfile")" \
		nohup "$(bin)" --port "$HOST:$PORT" posix "$data" >>"$logfile" 2>&1 &
	echo $! >"$pidfile"
	local i
	for ((i = 0; i < START_TIMEOUT * 10; i++)); do
		if answers; then
			say "up on $HOST:$PORT (pid $(cat "$pidfile"))"
			return
		fi
		running || { tail -n 30 "$logfile" >&2 || true; die "the server exited; see $logfile"; }
		sleep 0.1
	done
	die "the server did not answer within ${START_TIMEOUT}s; see $logfile"
}

stop() {
	if ! running; then
		say "not running"
		return
	fi
	local pid i
	pid="$(cat "$pidfile")"
	kill "$pid" 2>/dev/null || true
	for ((i = 0; i < 100; i++)); do
		kill -0 "$pid" 2>/dev/null || { rm -f "$pidfile"; say "stopped"; return; }
		sleep 0.1
	done
	kill -9 "$pid" 2>/dev/null || true
	rm -f "$pidfile"
	say "killed"
}

case "${1:-}" in
install) install ;;
start) start ;;
stop) stop ;;
status) answers ;;
env)
	[[ -f "$secretfile" ]] || die "no $secretfile: run $0 start first"
	echo "export WEIR_S3_ENDPOINT=http://$HOST:$PORT"
	echo "export AWS_ENDPOINT_URL_S3=http://$HOST:$PORT"
	echo "export AWS_REGION=us-east-1"
	echo "export AWS_ACCESS_KEY_ID=$ACCESS_KEY"
	echo "export AWS_SECRET_ACCESS_KEY=$(cat "$secretfile")"
	;;
*)
	echo "usage: $0 install|start|stop|status|env" >&2
	exit 2
	;;
esac
