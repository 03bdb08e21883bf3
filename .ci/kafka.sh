#!/usr/bin/env bash
# kafka.sh starts and stops the single-node Apache Kafka broker that weir's
# Kafka integration tests run against.
#
#   bash .ci/kafka.sh start   # fetch (cached), format (once), start, wait until it answers
#   bash .ci/kafka.sh stop    # stop it (SIGTERM, then SIGKILL after a bound)
#   bash .ci/kafka.sh status  # exit 0 when the broker is running
#
# Only Java 17 and Maven are needed. The broker's jars come from Maven Central
# through a generated pom (`mvn dependency:copy-dependencies`) into
# $WEIR_CACHE/kafka-$KAFKA_VERSION/libs, so later runs start without a fetch.
# The broker runs in KRaft combined mode (broker and controller in one JVM) on
# loopback only: clients on 127.0.0.1:9092, the controller on 127.0.0.1:9093.
# Its state lives in $WEIR_KAFKA_DIR, formatted once and reused, so `start` is
# idempotent: a running broker is left alone and a stopped one resumes its log.
# Tests export WEIR_KAFKA_BROKERS=127.0.0.1:9092 to reach it.
set -euo pipefail

KAFKA_VERSION="${KAFKA_VERSION:-4.4.0}"
# The slf4j binding matches the log4j the broker's pom brings in, so the
# broker's log says when it is up (without a binding it logs nothing at all).
LOG4J_VERSION="${LOG4J_VERSION:-2.25.5}"
WEIR_CACHE="${WEIR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/weir}"
WEIR_KAFKA_DIR="${WEIR_KAFKA_DIR:-${TMPDIR:-/tmp}/weir-kafka}"
START_TIMEOUT="${WEIR_KAFKA_START_TIMEOUT:-90}"
STOP_TIMEOUT="${WEIR_KAFKA_STOP_TIMEOUT:-30}"

HOST=127.0.0.1
PORT=9092
CONTROLLER_PORT=9093

home="$WEIR_CACHE/kafka-$KAFKA_VERSION"
libs="$home/libs"
pidfile="$WEIR_KAFKA_DIR/broker.pid"
logfile="$WEIR_KAFKA_DIR/broker.log"
props="$WEIR_KAFKA_DIR/server.properties"
log4j="$WEIR_KAFKA_DIR/log4j2.properties"

jvm_opts=(-Xms256m -Xmx1g -XX:+UseG1GC -Djava.awt.headless=true
	-Dlog4j2.configurationFile="$log4j" -cp "$libs/*")

say() { echo "kafka.sh: $*" >&2; }
die() { say "$*"; exit 1; }

fetch() {
	# The marker is written last, so an interrupted fetch is redone in full
	# instead of leaving a half-filled libs folder that looks complete.
	if [[ -f "$home/.complete" ]]; then
		return
	fi
	command -v mvn >/dev/null || die "mvn not found: install Maven"
	command -v java >/dev/null || die "java not found: install Java 17 or newer"
	say "fetching Apache Kafka $KAFKA_VERSION into $libs"
	rm -rf "$libs"
	mkdir -p "$home"
	cat >"$home/pom.xml" <<EOF
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>weir.ci</groupId>
  <artifactId>kafka-broker</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency>
      <groupId>org.apache.kafka</groupId>
      <artifactId>kafka_2.13</artifactId>
      <version>$KAFKA_VERSION</version>
    </dependency>
    <dependency>
      <groupId>org.apache.logging.log4j</groupId>
      <artifactId>log4j-slf4j-impl</artifactId>
      <version>$LOG4J_VERSION</version>
    </dependency>
  </dependencies>
</project>
EOF
	mvn -B -q -Dstyle.color=never -f "$home/pom.xml" dependency:copy-dependencies \
		-DincludeScope=runtime -DoutputDirectory="$libs" >&2 ||
		die "fetching Kafka $KAFKA_VERSION with Maven failed"
	[[ -f "$libs/kafka_2.13-$KAFKA_VERSION.jar" ]] || die "kafka_2.13-$KAFKA_VERSION.jar missing after fetch"
	touch "$home/.complete"
}

configure() {
	mkdir -p "$WEIR_KAFKA_DIR/data"
	cat >"$props" <<EOF
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@$HOST:$CONTROLLER_PORT
listeners=PLAINTEXT://$HOST:$PORT,CONTROLLER://$HOST:$CONTROLLER_PORT
advertised.listeners=PLAINTEXT://$HOST:$PORT
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
log.dirs=$WEIR_KAFKA_DIR/data
num.partitions=1
auto.create.topics.enable=true
offsets.topic.replication.factor=1
offsets.topic.num.partitions=4
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=4
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
# Tests start consumers right after the broker; no need to wait for more members.
group.initial.rebalance.delay.ms=0
# Keep test data small on disk.
log.segment.bytes=67108864
EOF
	cat >"$log4j" <<EOF
status = warn
appender.out.type = Console
appender.out.name = out
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.out.ref = out
logger.kafka.name = kafka
logger.kafka.level = INFO
logger.state.name = state.change.logger
logger.state.level = WARN
logger.request.name = kafka.request.logger
logger.request.level = WARN
EOF
}

java_cmd() {
	java "${jvm_opts[@]}" "$@"
}

format() {
	if [[ -f "$WEIR_KAFKA_DIR/data/meta.properties" ]]; then
		return
	fi
	local id
	id="$(java_cmd kafka.tools.StorageTool random-uuid 2>/dev/null | tail -n1)"
	[[ -n "$id" ]] || die "could not generate a cluster id"
	say "formatting $WEIR_KAFKA_DIR/data (cluster $id)"
	java_cmd kafka.tools.StorageTool format -t "$id" -c "$props" --ignore-formatted >>"$logfile" 2>&1 ||
		die "formatting the log directory failed; see $logfile"
}

running() {
	[[ -f "$pidfile" ]] && kill -0 "$(cat "$pidfile")" 2>/dev/null
}

answers() {
	# A bare TCP connect is not enough (the socket opens before the broker has
	# joined its own controller quorum), so also require the log line the
	# broker prints once it serves requests.
	(exec 3<>"/dev/tcp/$HOST/$PORT") 2>/dev/null &&
		grep -q "Kafka Server started" "$logfile" 2>/dev/null
}

start() {
	if running; then
		if answers; then
			say "already running (pid $(cat "$pidfile")) on $HOST:$PORT"
			return
		fi
	elif (exec 3<>"/dev/tcp/$HOST/$PORT") 2>/dev/null; then
		die "$HOST:$PORT is in use by another process; stop it first"
	else
		fetch
		configure
		: >"$logfile"
		format
		say "starting broker on $HOST:$PORT (log $logfile)"
		# setsid puts the broker in its own session so that it outlives this
		# script and a terminal's hang-up, and `stop` can signal exactly it.
		setsid java "${jvm_opts[@]}" kafka.Kafka "$props" >>"$logfile" 2>&1 </dev/null &
		echo $! >"$pidfile"
	fi
	local deadline=$((SECONDS + START_TIMEOUT))
	until answers; do
		if ! running; then
			tail -n 40 "$logfile" >&2 || true
			die "broker exited during start; see $logfile"
		fi
		if ((SECONDS >= deadline)); then
			tail -n 40 "$logfile" >&2 || true
			die "broker did not answer on $HOST:$PORT within ${START_TIMEOUT}s; see $logfile"
		fi
		sleep 0.5
	done
	say "broker up on $HOST:$PORT (pid $(cat "$pidfile"))"
}

stop() {
	if ! running; then
		rm -f "$pidfile"
		say "not running"
		return
	fi
	local pid
	pid="$(cat "$pidfile")"
	kill -TERM "$pid" 2>/dev/null || true
	local deadline=$((SECONDS + STOP_TIMEOUT))
	while kill -0 "$pid" 2>/dev/null; do
		if ((SECONDS >= deadline)); then
			say "broker did not stop within ${STOP_TIMEOUT}s; killing it"
			kill -KILL "$pid" 2>/dev/null || true
			break
		fi
		sleep 0.2
	done
	rm -f "$pidfile"
	say "stopped"
}

case "${1:-}" in
start) start ;;
stop) stop ;;
status) running && answers ;;
*)
	echo "usage: $0 start|stop|status" >&2
	exit 2
	;;
esac
