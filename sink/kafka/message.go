package kafka

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/internal/kafkaclient"
	"github.com/weir-etl/weir/record"
)

// message builds the Kafka message of r, for both the at-least-once and the
// exactly-once sink: its topic, its key, its value and, with headers, its
// headers. An error means r can never be written as it is (its topic or key
// cannot be computed, or it is larger than a batch may be); the caller
// rejects it.
func message(name string, cfg *Config, topic template, key []string, r *record.Record) (*kgo.Record, error) {
	t, err := topic.render(r)
	if err != nil {
		return nil, fmt.Errorf("kafka: sink %s: topic: %w", name, err)
	}
	k := r.Key
	if key != nil {
		s, err := field(r, key)
		if err != nil {
			return nil, fmt.Errorf("kafka: sink %s: key_field: %w", name, err)
		}
		k = []byte(s)
	}
	value, err := r.Value()
	if err != nil {
		return nil, fmt.Errorf("kafka: sink %s: %w", name, err)
	}
	kr := &kgo.Record{Topic: t, Key: k, Value: value, Timestamp: r.Time}
	size := len(k) + len(value)
	if cfg.Headers && len(r.Headers) > 0 {
		kr.Headers = make([]kgo.RecordHeader, len(r.Headers))
		for j, h := range r.Headers {
			kr.Headers[j] = kgo.RecordHeader{Key: h.Key, Value: h.Value}
			size += len(h.Key) + len(h.Value)
		}
	}
	// The producer fails such a record whatever is done with it: its group
	// would fail at every attempt until the retries give up. Rejected here,
	// it alone meets the failure policy, at once.
	if size > cfg.MaxMessageBytes {
		return nil, fmt.Errorf("kafka: sink %s: the record is %d bytes (key, value and headers), more than max_message_bytes (%d): no batch can hold it; raise max_message_bytes together with the topic's max.message.bytes, or make the record smaller", name, size, cfg.MaxMessageBytes)
	}
	return kr, nil
}

// produceError is the error of a failed produce, spelled out. A record too
// large for a batch or for the broker (MESSAGE_TOO_LARGE,
// RECORD_LIST_TOO_LARGE: a record near max_message_bytes once its batch's
// overhead is counted, or a topic whose max.message.bytes is below it)
// fails its group with connector.ErrTooLarge too, so that the runtime writes
// the group again in parts down to the record that fails alone, instead of
// writing the whole group again and again.
func produceError(err error) error {
	err = kafkaclient.Explain(err)
	if errors.Is(err, kerr.MessageTooLarge) || errors.Is(err, kerr.RecordListTooLarge) {
		return fmt.Errorf("%w: %w", connector.ErrTooLarge, err)
	}
	return err
}
