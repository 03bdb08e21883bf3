// Package exactlyonce holds the end-to-end tests of weir's exactly-once
// sinks with the real binary, checked by readers weir did not write: a
// Python script that reads a file sink's directory the way
// docs/file-connectors.md tells a reader to, a read_committed franz-go
// consumer of a Kafka topic, and SQL over a PostgreSQL table.
//
//   - file → filter → exactly-once file sink, SIGKILLed at random moments
//     and restarted, then a clean run: every id exactly once in the visible
//     chunks, and no reader ever sees one twice (TestFileKillExactlyOnce);
//   - Kafka → map → exactly-once Kafka, two members of one group, SIGKILL
//     and SIGSTOP cycles and rebalances, then a clean run: every record once
//     for a read_committed consumer (TestKafkaKillExactlyOnce);
//   - the same into two sinks, an exactly-once file sink both members share
//     and PostgreSQL (TestTwoSinksKillExactlyOnce).
//
// Each has a variant built with the unsafe_eos tag, whose sinks store their
// positions outside the data's atomic step, and which the same checks must
// catch (…UnsafeVariantIsCaught). They are behind the integration build tag
// and need a broker and a PostgreSQL server for the Kafka ones:
//
//	bash .ci/kafka.sh start && bash .ci/postgres.sh start && eval "$(bash .ci/postgres.sh env)"
//	WEIR_KAFKA_BROKERS=127.0.0.1:9092 go test -tags integration -count=1 ./test/exactlyonce/
//	WEIR_EOS_FULL=1 ...        # the full sizes: 1M lines, 400k records, at least 20 SIGKILLs each
//	... -eos.seed=N -v         # replay one kill schedule
//
// By default (CI) they run shorter: fewer records and kills.
package exactlyonce
