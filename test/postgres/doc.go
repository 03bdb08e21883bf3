// Package postgres holds the end-to-end tests of weir's exactly-once
// PostgreSQL sink: the real weir binary, killed with SIGKILL at random
// moments and restarted, Kafka consumer groups rebalancing between two
// processes, and rewinds caused by another sink. Each ends with the table
// holding every expected row exactly once. They need a real server (and for
// the Kafka test a real broker) and are behind the integration build tag:
//
//	bash .ci/postgres.sh start && eval "$(bash .ci/postgres.sh env)"
//	bash .ci/kafka.sh start
//	WEIR_KAFKA_BROKERS=127.0.0.1:9092 go test -tags integration -count=1 ./test/postgres/
//	go test -tags integration -count=1 ./test/postgres/ -run Kill -pgkill.seed=42 -v   # replay one kill schedule
//
// The exactly-once tests rely on the runtime not handing the sink records
// its stored positions cover (connector.PositionKeeper). TestKillUnsafeVariantIsCaught
// builds the binary with the unsafe_positions tag, whose sink stores no
// positions, and asserts that the same checks count its duplicates.
package postgres
