#!/usr/bin/env bash
# iceberg-rest.sh starts and stops a real Apache Iceberg REST catalog server
# for weir's REST catalog tests: Iceberg's own RESTCatalogAdapter and
# RESTCatalogServlet (the pieces its REST fixture image runs), over a
# JdbcCatalog on SQLite and HadoopFileIO on a local warehouse directory,
# served by Jetty on loopback only.
#
#   bash .ci/iceberg-rest.sh start   # fetch (cached), compile the launcher, start, wait until it answers
#   bash .ci/iceberg-rest.sh stop    # stop it (SIGTERM, then SIGKILL after a bound)
#   bash .ci/iceberg-rest.sh status  # exit 0 when it answers
#   bash .ci/iceberg-rest.sh env     # print the variables the tests read
#
# Only Java 17 and Maven are needed: the jars come from Maven Central through
# a generated pom (iceberg-core and its tests jar, which holds the adapter and
# servlet, Jetty 11, sqlite-jdbc, the shaded Hadoop client) into
# $WEIR_CACHE/iceberg-rest-$ICEBERG_VERSION/libs, so later runs start without
# a fetch. The server's warehouse and catalog file live in
# $WEIR_ICEBERG_REST_DIR; `start` is idempotent. Tests read
# WEIR_ICEBERG_REST_URI and WEIR_ICEBERG_REST_WAREHOUSE.
set -euo pipefail

ICEBERG_VERSION="${ICEBERG_VERSION:-1.10.0}"
HOST=127.0.0.1
PORT="${WEIR_ICEBERG_REST_PORT:-8181}"
WEIR_CACHE="${WEIR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/weir}"
DIR="${WEIR_ICEBERG_REST_DIR:-${TMPDIR:-/tmp}/weir-iceberg-rest}"
START_TIMEOUT="${WEIR_ICEBERG_REST_START_TIMEOUT:-90}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

home="$WEIR_CACHE/iceberg-rest-$ICEBERG_VERSION"
libs="$home/libs"
classes="$home/classes"
pidfile="$DIR/server.pid"
logfile="$DIR/server.log"

say() { echo "iceberg-rest.sh: $*" >&2; }
die() { say "$*"; exit 1; }

fetch() {
	if [[ -f "$home/.complete" && "$classes/WeirRestCatalog.class" -nt "$here/iceberg-rest/WeirRestCatalog.java" ]]; then
		return
	fi
	command -v mvn >/dev/null || die "mvn not found: install Maven"
	command -v javac >/dev/null || die "javac not found: install a Java 17 JDK"
	if [[ ! -f "$home/.complete" ]]; then
		say "fetching Apache Iceberg $ICEBERG_VERSION's REST catalog into $libs"
		rm -rf "$libs"
		mkdir -p "$home"
		cat >"$home/pom.xml" <<POM
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>weir</groupId><artifactId>iceberg-rest-catalog</artifactId><version>1</version>
  <dependencies>
    <dependency><groupId>org.apache.iceberg</groupId><artifactId>iceberg-core</artifactId><version>$ICEBERG_VERSION</version></dependency>
    <dependency><groupId>org.apache.iceberg</groupId><artifactId>iceberg-core</artifactId><version>$ICEBERG_VERSION</version><classifier>tests</classifier></dependency>
    <dependency><groupId>org.eclipse.jetty</groupId><artifactId>jetty-servlet</artifactId><version>11.0.25</version></dependency>
    <dependency><groupId>org.xerial</groupId><artifactId>sqlite-jdbc</artifactId><version>3.49.1.0</version></dependency>
    <dependency><groupId>org.apache.hadoop</groupId><artifactId>hadoop-client-api</artifactId><version>3.4.1</version></dependency>
    <dependency><groupId>org.apache.hadoop</groupId><artifactId>hadoop-client-runtime</artifactId><version>3.4.1</version></dependency>
    <dependency><groupId>org.slf4j</groupId><artifactId>slf4j-simple</artifactId><version>2.0.16</version></dependency>
  </dependencies>
</project>
POM
		(cd "$home" && mvn -q -B dependency:copy-dependencies -DoutputDirectory="$libs") >&2
		touch "$home/.complete"
	fi
	mkdir -p "$classes"
	javac -d "$classes" -cp "$libs/*" "$here/iceberg-rest/WeirRestCatalog.java"
}

answers() { curl -fsS -o /dev/null --max-time 2 "http://$HOST:$PORT/v1/config" 2>/dev/null; }

start() {
	if answers; then
		return
	fi
	fetch
	mkdir -p "$DIR/warehouse" "$DIR/state"
	say "starting on $HOST:$PORT (log $logfile)"
	nohup java -Xms64m -Xmx512m -cp "$libs/*:$classes" WeirRestCatalog "$HOST" "$PORT" "$DIR/warehouse" "$DIR/state" \
		>"$logfile" 2>&1 </dev/null &
	echo $! >"$pidfile"
	for ((i = 0; i < START_TIMEOUT * 4; i++)); do
		if answers; then
			say "up"
			return
		fi
		if ! kill -0 "$(cat "$pidfile")" 2>/dev/null; then
			tail -20 "$logfile" >&2
			die "the server exited"
		fi
		sleep 0.25
	done
	tail -20 "$logfile" >&2
	die "no answer on $HOST:$PORT after ${START_TIMEOUT}s"
}

stop() {
	[[ -f "$pidfile" ]] || return 0
	local pid
	pid="$(cat "$pidfile")"
	if kill -0 "$pid" 2>/dev/null; then
		kill "$pid"
		for ((i = 0; i < 60; i++)); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.25
		done
		kill -9 "$pid" 2>/dev/null || true
	fi
	rm -f "$pidfile"
}

case "${1:-}" in
start) start ;;
stop) stop ;;
status) answers ;;
env)
	echo "export WEIR_ICEBERG_REST_URI=http://$HOST:$PORT"
	echo "export WEIR_ICEBERG_REST_WAREHOUSE=$DIR/warehouse"
	;;
*) die "usage: $0 start|stop|status|env" ;;
esac
