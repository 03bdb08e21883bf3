// Package iceberg holds the end-to-end tests of weir's exactly-once
// Iceberg sink with the real weir binary: file → filter → iceberg on a SQL
// catalog in PostgreSQL with a local warehouse, SIGKILLed at random moments
// and restarted, then read back by DuckDB and pyiceberg; and Kafka →
// iceberg with two processes in one consumer group through a rebalance and
// a SIGKILL. They need the PostgreSQL server, a Kafka broker for the Kafka
// test, and python3 with pyiceberg, psycopg2, duckdb and its avro and
// iceberg extension packages (read.py beside this file reads the tables):
//
//	bash .ci/postgres.sh start && eval "$(bash .ci/postgres.sh env)"
//	bash .ci/kafka.sh start
//	WEIR_KAFKA_BROKERS=127.0.0.1:9092 go test -tags integration -count=1 ./test/iceberg/
//	WEIR_ICEBERG_FULL=1 go test -tags integration -count=1 -run Kill -v ./test/iceberg/   # 1M lines, at least 20 kills
//	go test -tags integration -count=1 -run Kill -icekill.seed=42 -v ./test/iceberg/      # replay one kill schedule
//
// CI runs the short sizes (fewer lines and kills); WEIR_ICEBERG_FULL=1
// runs the sizes the sink is held to. TestKillUnsafeVariantIsCaught builds
// the binary with the unsafe_positions tag, whose sink writes its
// positions in a second snapshot after the data's, and asserts that the
// same checks find the records a kill between the two leaves uncovered.
package iceberg
