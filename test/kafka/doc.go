// Package kafka holds end-to-end tests of weir's Kafka connectors: the real
// weir binary, several processes in one consumer group, against a real
// broker. They are behind the integration build tag and read the broker's
// address from WEIR_KAFKA_BROKERS:
//
//	bash .ci/kafka.sh start
//	WEIR_KAFKA_BROKERS=127.0.0.1:9092 go test -tags integration -count=1 ./test/kafka/
package kafka
