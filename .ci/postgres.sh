#!/usr/bin/env bash
# postgres.sh starts and stops the throw-away PostgreSQL server that weir's
# PostgreSQL integration tests (the sink and the change data capture source)
# run against.
#
#   bash .ci/postgres.sh start   # install (Debian, when missing), initdb (once), start, wait
#   bash .ci/postgres.sh stop    # stop it (fast shutdown, then immediate after a bound)
#   bash .ci/postgres.sh status  # exit 0 when the server answers
#   bash .ci/postgres.sh env     # print the variables the tests read
#
# The cluster lives in $WEIR_PG_DIR (default ${TMPDIR:-/tmp}/weir-postgres),
# owned by an unprivileged user: initdb refuses to run as root, so when this
# script runs as root it creates the system user `weirpg` and runs the server
# as that user. The server listens on 127.0.0.1:$WEIR_PG_PORT (55432, away from
# a packaged cluster's 5432) and on a Unix socket inside the data directory.
# fsync stays on: the exactly-once tests kill processes, not the machine, but
# the server must behave as in production. wal_level is logical, with room for
# the replication slots the change data capture tests create.
#
# The role `weir` (superuser, replication) logs in over TCP with a password
# (scram-sha-256) made at initdb and kept in $WEIR_PG_DIR/password (mode 0600);
# `env` prints it as WEIR_POSTGRES_PASSWORD, beside WEIR_POSTGRES_URL, a URL
# without the password: weir reads passwords from the environment, never from
# a URL it might log. Tests create databases of their own, so runs in parallel
# do not meet.
set -euo pipefail

PG_MAJOR="${PG_MAJOR:-15}"
HOST=127.0.0.1
PORT="${WEIR_PG_PORT:-55432}"
WEIR_PG_DIR="${WEIR_PG_DIR:-${TMPDIR:-/tmp}/weir-postgres}"
START_TIMEOUT="${WEIR_PG_START_TIMEOUT:-60}"
RUN_USER=weirpg

data="$WEIR_PG_DIR/data"
logfile="$WEIR_PG_DIR/server.log"
pwfile="$WEIR_PG_DIR/password"

say() { echo "postgres.sh: $*" >&2; }
die() {
	say "$*"
	exit 1
}

bindir() {
	local d="/usr/lib/postgresql/$PG_MAJOR/bin"
	if [[ -x "$d/initdb" ]]; then
		echo "$d"
		return
	fi
	d="$(dirname "$(command -v initdb 2>/dev/null || echo /nonexistent/initdb)")"
	[[ -x "$d/initdb" ]] && echo "$d"
}

install() {
	if [[ -n "$(bindir)" ]]; then
		return
	fi
	[[ $(id -u) -eq 0 ]] || die "PostgreSQL $PG_MAJOR is not installed and this is not root: install postgresql-$PG_MAJOR"
	say "installing PostgreSQL $PG_MAJOR from Debian's packages"
	apt-get update -qq
	# The package's own cluster is not wanted: the tests use the one below.
	mkdir -p /etc/postgresql-common
	echo "create_main_cluster = false" >/etc/postgresql-common/createcluster.conf
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "postgresql-$PG_MAJOR" >/dev/null
	[[ -n "$(bindir)" ]] || die "postgresql-$PG_MAJOR installed but initdb not found"
}

# as runs a command as the cluster's owner.
as() {
	if [[ $(id -u) -eq 0 ]]; then
		runuser -u "$RUN_USER" -- "$@"
	else
		"$@"
	fi
}

owner() {
	if [[ $(id -u) -ne 0 ]]; then
		return
	fi
	if ! id "$RUN_USER" >/dev/null 2>&1; then
		useradd --system --no-create-home --shell /usr/sbin/nologin "$RUN_USER"
	fi
}

random() {
	local r
	r="$(head -c 48 /dev/urandom | base64 | tr -dc 'A-Za-z0-9' | head -c 24)"
	[[ ${#r} -eq 24 ]] || die "could not generate a random string"
	echo "$r"
}

init() {
	if [[ -f "$data/PG_VERSION" ]]; then
		return
	fi
	local bin
	bin="$(bindir)"
	say "initdb $data"
	rm -rf "$data"
	mkdir -p "$WEIR_PG_DIR"
	(umask 077 && random >"$pwfile")
	if [[ $(id -u) -eq 0 ]]; then
		chown "$RUN_USER" "$WEIR_PG_DIR" "$pwfile"
	fi
	# The password file is read by initdb (as the owner) and by `env`.
	as "$bin/initdb" -D "$data" -U weir --auth-local=trust --auth-host=scram-sha-256 \
		--pwfile="$pwfile" -E UTF8 --locale=C.UTF-8 >>"$logfile" 2>&1 ||
		die "initdb failed; see $logfile"
	cat >>"$data/postgresql.conf" <<EOF
# weir test cluster
listen_addresses = '$HOST'
port = $PORT
unix_socket_directories = '$data'
fsync = on
synchronous_commit = on
wal_level = logical
max_replication_slots = 32
max_wal_senders = 32
max_connections = 200
shared_buffers = 128MB
log_min_messages = warning
log_connections = off
EOF
	cat >"$data/pg_hba.conf" <<EOF
local   all          all                  trust
local   replication  all                  trust
host    all          all   127.0.0.1/32   scram-sha-256
host    replication  all   127.0.0.1/32   scram-sha-256
EOF
}

answers() {
	"$(bindir)/pg_isready" -q -h "$HOST" -p "$PORT" 2>/dev/null
}

start() {
	install
	owner
	mkdir -p "$WEIR_PG_DIR"
	if [[ $(id -u) -eq 0 ]]; then
		chown "$RUN_USER" "$WEIR_PG_DIR"
		touch "$logfile"
		chown "$RUN_USER" "$logfile"
	fi
	init
	if answers; then
		say "already running on $HOST:$PORT"
		return
	fi
	say "starting on $HOST:$PORT (log $logfile)"
	as "$(bindir)/pg_ctl" -D "$data" -l "$logfile" -w -t "$START_TIMEOUT" start >/dev/null ||
		{
			tail -n 30 "$logfile" >&2 || true
			die "the server did not start; see $logfile"
		}
	answers || die "the server started but does not answer on $HOST:$PORT"
	say "up on $HOST:$PORT"
}

stop() {
	if [[ ! -f "$data/postmaster.pid" ]]; then
		say "not running"
		return
	fi
	as "$(bindir)/pg_ctl" -D "$data" -m fast -w -t 30 stop >/dev/null 2>&1 ||
		as "$(bindir)/pg_ctl" -D "$data" -m immediate -w stop >/dev/null 2>&1 || true
	say "stopped"
}

case "${1:-}" in
start) start ;;
stop) stop ;;
status) answers ;;
env)
	[[ -f "$pwfile" ]] || die "no $pwfile: run $0 start first"
	echo "export WEIR_POSTGRES_URL=postgres://weir@$HOST:$PORT/postgres"
	echo "export WEIR_POSTGRES_PASSWORD=$(cat "$pwfile")"
	;;
*)
	echo "usage: $0 start|stop|status|env" >&2
	exit 2
	;;
esac
