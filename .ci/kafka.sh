#!/usr/bin/env bash
# kafka.sh starts and stops the single-node Apache Kafka broker that weir's
# Kafka integration tests run against.
#
#   bash .ci/kafka.sh start   # fetch (cached), format (once), start, wait until it answers
#   bash .ci/kafka.sh stop    # stop it (SIGTERM, then SIGKILL after a bound)
#   bash .ci/kafka.sh status  # exit 0 when the broker is running
#   bash .ci/kafka.sh env     # print the secured listeners' variables (below)
#
# Only Java 17 and Maven are needed. The broker's jars come from Maven Central
# through a generated pom (`mvn dependency:copy-dependencies`) into
# $WEIR_CACHE/kafka-$KAFKA_VERSION/libs, so later runs start without a fetch.
# The broker runs in KRaft combined mode (broker and controller in one JVM) on
# loopback only: clients on 127.0.0.1:9092, the controller on 127.0.0.1:9093.
# Its state lives in $WEIR_KAFKA_DIR, formatted once and reused, so `start` is
# idempotent: a running broker is left alone and a stopped one resumes its log.
# Tests export WEIR_KAFKA_BROKERS=127.0.0.1:9092 to reach it.
#
# Secured listeners, also on loopback only, for the TLS and SASL tests:
#   127.0.0.1:9094  SASL_PLAINTEXT: PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512
#   127.0.0.1:9095  SSL, no client certificate
#   127.0.0.1:9096  SSL, client certificate required (mutual TLS)
#   127.0.0.1:9097  SASL_SSL: the same users over TLS
# The user `weir` gets a random password when the state is formatted (the
# SCRAM credentials are written into the log directory by the format); a test
# CA, a broker certificate for 127.0.0.1/localhost and a client certificate
# are made with keytool, and a short Java program exports the client's key as
# PEM. All of it lives under $WEIR_KAFKA_DIR/secrets (mode 0700).
# $WEIR_KAFKA_DIR/client.env names the listeners and the files (never the
# password itself); the tests read it when their variables are not set.
# A state directory made by an older version of this script (another layout)
# is stopped and formatted again.
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
SASL_PORT=9094
TLS_PORT=9095
MTLS_PORT=9096
SASL_TLS_PORT=9097
SASL_USER=weir
# LAYOUT changes whenever the listeners or the format change; a state
# directory with another layout is formatted again.
LAYOUT="weir-kafka-layout-2 $KAFKA_VERSION $SASL_PORT $TLS_PORT $MTLS_PORT $SASL_TLS_PORT"
# SETTINGS changes whenever a broker setting changes that needs no new
# format; a broker running with other settings is restarted on its state.
SETTINGS="weir-kafka-settings-1 group.min.session.timeout.ms=1000"

home="$WEIR_CACHE/kafka-$KAFKA_VERSION"
libs="$home/libs"
pidfile="$WEIR_KAFKA_DIR/broker.pid"
logfile="$WEIR_KAFKA_DIR/broker.log"
props="$WEIR_KAFKA_DIR/server.properties"
log4j="$WEIR_KAFKA_DIR/log4j2.properties"
layoutfile="$WEIR_KAFKA_DIR/layout"
secrets="$WEIR_KAFKA_DIR/secrets"
clientenv="$WEIR_KAFKA_DIR/client.env"

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

# reset removes the state of another layout (an older version of this
# script): its log directory was formatted without the SCRAM users.
reset() {
	if [[ -f "$layoutfile" && "$(cat "$layoutfile")" == "$LAYOUT" ]]; then
		return
	fi
	if [[ -e "$WEIR_KAFKA_DIR/data" || -e "$secrets" ]]; then
		say "state in $WEIR_KAFKA_DIR is from another layout; formatting it again"
	fi
	rm -rf "$WEIR_KAFKA_DIR/data" "$secrets" "$clientenv"
	mkdir -p "$WEIR_KAFKA_DIR"
	echo "$LAYOUT" >"$layoutfile"
}

# random prints a random alphanumeric string.
random() {
	local r
	r="$(head -c 48 /dev/urandom | base64 | tr -dc 'A-Za-z0-9' | head -c 24)"
	[[ ${#r} -eq 24 ]] || die "could not generate a random string"
	echo "$r"
}

# pemkey exports the private key of a PKCS#12 store as PKCS#8 PEM (keytool
# cannot). The store password comes from the environment, not the command line.
pemkey() {
	local src="$secrets/PemKey.java"
	cat >"$src" <<'EOF'
import java.io.FileInputStream;
import java.security.Key;
import java.security.KeyStore;
import java.util.Base64;

public class PemKey {
	public static void main(String[] args) throws Exception {
		char[] pw = System.getenv("WEIR_STORE_PASSWORD").toCharArray();
		KeyStore ks = KeyStore.getInstance("PKCS12");
		try (FileInputStream in = new FileInputStream(args[0])) {
			ks.load(in, pw);
		}
		Key k = ks.getKey(args[1], pw);
		String b64 = Base64.getMimeEncoder(64, new byte[] {'\n'}).encodeToString(k.getEncoded());
		System.out.print("-----BEGIN PRIVATE KEY-----\n" + b64 + "\n-----END PRIVATE KEY-----\n");
	}
}
EOF
	WEIR_STORE_PASSWORD="$(cat "$secrets/store-password")" java "$src" "$1" "$2"
}

# certs makes, once, a test CA, a broker certificate for 127.0.0.1 and
# localhost, and a client certificate, all signed by the CA. The broker reads
# PKCS#12 stores; clients read PEM files.
certs() {
	if [[ -f "$secrets/.certs-complete" ]]; then
		return
	fi
	command -v keytool >/dev/null || die "keytool not found: it ships with the JDK"
	say "making a test CA and certificates in $secrets"
	rm -f "$secrets"/*.p12 "$secrets"/*.pem "$secrets"/*.csr
	local pw kt
	pw="$(cat "$secrets/store-password")"
	kt=(keytool -noprompt -storetype PKCS12 -storepass "$pw" -keypass "$pw")
	{
		"${kt[@]}" -genkeypair -keystore "$secrets/ca.p12" -alias ca -keyalg EC -groupname secp256r1 \
			-dname "CN=weir test CA" -validity 3650 -ext bc:c -ext ku:c=keyCertSign,cRLSign
		"${kt[@]}" -exportcert -rfc -keystore "$secrets/ca.p12" -alias ca -file "$secrets/ca.pem"
		"${kt[@]}" -importcert -keystore "$secrets/truststore.p12" -alias ca -file "$secrets/ca.pem"
		local who
		for who in broker client; do
			local eku=serverAuth san=(-ext "san=ip:127.0.0.1,dns:localhost")
			if [[ $who == client ]]; then
				eku=clientAuth san=()
			fi
			"${kt[@]}" -genkeypair -keystore "$secrets/$who.p12" -alias "$who" -keyalg EC -groupname secp256r1 \
				-dname "CN=weir test $who" -validity 3650
			"${kt[@]}" -certreq -keystore "$secrets/$who.p12" -alias "$who" -file "$secrets/$who.csr"
			"${kt[@]}" -gencert -keystore "$secrets/ca.p12" -alias ca -infile "$secrets/$who.csr" \
				-outfile "$secrets/$who-signed.pem" -rfc -validity 3650 "${san[@]}" -ext "eku=$eku"
			"${kt[@]}" -importcert -keystore "$secrets/$who.p12" -alias ca -file "$secrets/ca.pem"
			"${kt[@]}" -importcert -keystore "$secrets/$who.p12" -alias "$who" -file "$secrets/$who-signed.pem"
			rm -f "$secrets/$who.csr"
		done
	} >>"$logfile" 2>&1 || die "making certificates with keytool failed; see $logfile"
	"${kt[@]}" -exportcert -rfc -keystore "$secrets/client.p12" -alias client -file "$secrets/client.pem" >>"$logfile" 2>&1 ||
		die "exporting the client certificate failed; see $logfile"
	pemkey "$secrets/client.p12" client >"$secrets/client-key.pem" 2>>"$logfile" ||
		die "exporting the client key failed; see $logfile"
	touch "$secrets/.certs-complete"
}

configure() {
	reset
	mkdir -p "$WEIR_KAFKA_DIR/data"
	(umask 077 && mkdir -p "$secrets")
	chmod 700 "$secrets"
	local f
	for f in sasl-password store-password; do
		if [[ ! -s "$secrets/$f" ]]; then
			(umask 077 && random >"$secrets/$f")
		fi
	done
	certs
	local pass spw
	pass="$(cat "$secrets/sasl-password")"
	spw="$(cat "$secrets/store-password")"
	# The properties hold the passwords: readable by this user only.
	(umask 077 && : >"$props")
	chmod 600 "$props"
	cat >"$props" <<EOF
# $LAYOUT
# $SETTINGS
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@$HOST:$CONTROLLER_PORT
listeners=PLAINTEXT://$HOST:$PORT,CONTROLLER://$HOST:$CONTROLLER_PORT,SASL_PLAINTEXT://$HOST:$SASL_PORT,SSL://$HOST:$TLS_PORT,MTLS://$HOST:$MTLS_PORT,SASL_SSL://$HOST:$SASL_TLS_PORT
advertised.listeners=PLAINTEXT://$HOST:$PORT,SASL_PLAINTEXT://$HOST:$SASL_PORT,SSL://$HOST:$TLS_PORT,MTLS://$HOST:$MTLS_PORT,SASL_SSL://$HOST:$SASL_TLS_PORT
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,SSL:SSL,MTLS:SSL,SASL_SSL:SASL_SSL
sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512
listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_$SASL_USER="$pass";
listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
listener.name.sasl_ssl.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_$SASL_USER="$pass";
listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
ssl.keystore.type=PKCS12
ssl.keystore.location=$secrets/broker.p12
ssl.keystore.password=$spw
ssl.key.password=$spw
ssl.truststore.type=PKCS12
ssl.truststore.location=$secrets/truststore.p12
ssl.truststore.password=$spw
ssl.client.auth=none
listener.name.mtls.ssl.client.auth=required
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
# Sessions as short as weir's session_timeout allows (1s; the broker's
# default least is 6s): the exactly-once chaos tests use 2s sessions, so
# that a member stopped for a few seconds is evicted from its group.
group.min.session.timeout.ms=1000
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
	cat >"$clientenv" <<EOF
WEIR_KAFKA_SASL_BROKERS=$HOST:$SASL_PORT
WEIR_KAFKA_SASL_TLS_BROKERS=$HOST:$SASL_TLS_PORT
WEIR_KAFKA_SASL_USER=$SASL_USER
WEIR_KAFKA_SASL_PASSWORD_FILE=$secrets/sasl-password
WEIR_KAFKA_TLS_BROKERS=$HOST:$TLS_PORT
WEIR_KAFKA_MTLS_BROKERS=$HOST:$MTLS_PORT
WEIR_KAFKA_TLS_CA=$secrets/ca.pem
WEIR_KAFKA_TLS_CERT=$secrets/client.pem
WEIR_KAFKA_TLS_KEY=$secrets/client-key.pem
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
	# The SCRAM credentials are part of the format: the broker has no
	# controller-free way to add them later.
	local m pass scram=()
	pass="$(cat "$secrets/sasl-password")"
	for m in SCRAM-SHA-256 SCRAM-SHA-512; do
		scram+=(--add-scram "$m=[name=$SASL_USER,password=$pass]")
	done
	java_cmd kafka.tools.StorageTool format -t "$id" -c "$props" --ignore-formatted "${scram[@]}" >>"$logfile" 2>&1 ||
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
	# A broker started with another layout's properties (an older version of
	# this script, even on state formatted by this one) lacks the listeners;
	# one started with other settings, the settings the tests count on.
	if running && ! { grep -qxF "# $LAYOUT" "$props" && grep -qxF "# $SETTINGS" "$props"; } 2>/dev/null; then
		say "the running broker is from another layout or has other settings; restarting it"
		stop
	fi
	if running; then
		if answers; then
			say "already running (pid $(cat "$pidfile")) on $HOST:$PORT"
			return
		fi
	elif (exec 3<>"/dev/tcp/$HOST/$PORT") 2>/dev/null; then
		die "$HOST:$PORT is in use by another process; stop it first"
	else
		fetch
		mkdir -p "$WEIR_KAFKA_DIR"
		: >"$logfile"
		configure
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
env)
	[[ -f "$clientenv" ]] || die "no $clientenv: run $0 start first"
	sed 's/^/export /' "$clientenv"
	;;
*)
	echo "usage: $0 start|stop|status|env" >&2
	exit 2
	;;
esac
