// Package fleet holds end-to-end tests of weir run -d: the real weir binary
// running a directory of pipelines, edited and driven through the
// pipelines API. The tests are behind the e2e build tag; the one with a
// Kafka pipeline is behind integration and reads the broker's address from
// WEIR_KAFKA_BROKERS (it skips without it):
//
//	go test -tags e2e -count=1 ./test/fleet/
//	WEIR_KAFKA_BROKERS=127.0.0.1:9092 go test -tags integration -count=1 ./test/fleet/
package fleet
