package kafka

import (
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/internal/kafkaclient"
)

// The connection settings are shared with the Kafka sink; these aliases let a
// program that configures the source in Go name them.
type (
	// Conn is how the source reaches its cluster: brokers, TLS, SASL and
	// the wait for a broker at start.
	Conn = kafkaclient.Conn
	// TLS configures encryption to the brokers.
	TLS = kafkaclient.TLS
	// SASL configures authentication to the brokers.
	SASL = kafkaclient.SASL
	// Secret is a string that fmt and slog print redacted.
	Secret = kafkaclient.Secret
)

// Config is the source's configuration, the options under a `type: kafka`
// source. NewConfig fills the defaults.
type Config struct {
	Conn `yaml:",inline"`
	// Group is the consumer group. Processes sharing it share the partitions.
	Group string `yaml:"group" doc:"The consumer group; processes sharing it share the partitions, and it stores the committed offsets."`
	// Topics to consume; exactly one of Topics and TopicRegex is set.
	Topics []string `yaml:"topics" doc:"Topics to consume; set this or topic_regex, not both."`
	// TopicRegex consumes every topic whose name matches (Go regexp syntax,
	// anchored by the client at both ends).
	TopicRegex string `yaml:"topic_regex" doc:"Consume every topic whose whole name matches this Go regular expression; set this or topics."`
	// StartFrom is where a partition with no committed offset starts:
	// "earliest" or "latest".
	StartFrom string `yaml:"start_from" doc:"Where a partition without a committed offset starts: \"earliest\" or \"latest\"."`
	// Balancer is the group's partition assignor: "cooperative-sticky" (the
	// default: a rebalance moves only the partitions that must move), "sticky",
	// "range" or "round-robin" (these three revoke everything on a rebalance).
	Balancer string `yaml:"balancer" doc:"The group's partition assignor: \"cooperative-sticky\" moves only the partitions that must move; \"sticky\", \"range\" and \"round-robin\" revoke everything on a rebalance."`
	// MaxPollRecords bounds the records one fetch hands to the source, and so
	// the source's own buffer; the client's buffer is bounded by FetchMaxBytes.
	MaxPollRecords int `yaml:"max_poll_records" doc:"Most records one poll of the client hands to the source, which bounds the source's own buffer."`
	// FetchMaxBytes bounds one fetch response; 0, the default, derives it
	// from the pipeline's max_in_flight_bytes (see readahead.go).
	FetchMaxBytes int32 `yaml:"fetch_max_bytes" doc:"Most bytes of one fetch response. 0 (the default) derives it from the source's max_in_flight_bytes (a sixty-fourth, between 1 MiB and 50 MiB), which so bounds the client's buffers too."`
	// SessionTimeout is how long the group waits for a silent member before
	// it takes its partitions away.
	SessionTimeout time.Duration `yaml:"session_timeout" doc:"How long the group waits for a silent member before it takes its partitions away (they are then lost, not revoked)."`
	// HeartbeatInterval is how often the member tells the group it is alive.
	// It must be below SessionTimeout, or the group expires the member
	// between two heartbeats; a third of it or less leaves room for a
	// heartbeat or two to come late or be lost.
	HeartbeatInterval time.Duration `yaml:"heartbeat_interval" doc:"How often the member tells the group it is alive; below session_timeout, best a third of it or less."`
	// RebalanceTimeout is how long a rebalance waits for members to give up
	// their partitions. It must cover the pipeline's drain timeout: the
	// partitions a rebalance revokes drain together, their in-flight batches
	// finishing and their final offsets committed within one drain timeout.
	RebalanceTimeout time.Duration `yaml:"rebalance_timeout" doc:"How long a rebalance waits for members to give up their partitions; keep it above the pipeline's drain_timeout, which the revoked partitions drain within, together."`
	// InstanceID, if set, makes the member static (KIP-345): a restart within
	// the session timeout gets its partitions back without a rebalance.
	InstanceID string `yaml:"instance_id" doc:"Makes the member static (KIP-345): a restart within session_timeout gets its partitions back without a rebalance."`
}

// defaultHeartbeatInterval is the heartbeat_interval of NewConfig, the
// client's own default.
const defaultHeartbeatInterval = 3 * time.Second

// NewConfig returns a Config with the defaults filled in.
func NewConfig() *Config {
	return &Config{
		Conn:              kafkaclient.DefaultConn(),
		StartFrom:         "earliest",
		Balancer:          "cooperative-sticky",
		MaxPollRecords:    10000,
		SessionTimeout:    45 * time.Second,
		HeartbeatInterval: defaultHeartbeatInterval,
		RebalanceTimeout:  60 * time.Second,
	}
}

// Validate reports every problem with c at once, as *connector.FieldError
// values joined with errors.Join, each naming its option and the fix.
func (c *Config) Validate() error {
	errs := []error{c.Conn.Validate()}
	add := func(field, format string, args ...any) {
		errs = append(errs, connector.Fieldf(field, format, args...))
	}
	if c.Group == "" {
		add("group", "is empty: name the consumer group that stores this source's offsets")
	}
	switch {
	case len(c.Topics) == 0 && c.TopicRegex == "":
		add("topics", "is empty: set topics (a list of names) or topic_regex")
	case len(c.Topics) > 0 && c.TopicRegex != "":
		add("topic_regex", "is set together with topics: keep one")
	}
	for i, t := range c.Topics {
		if t == "" {
			add(fmt.Sprintf("topics[%d]", i), "is empty: name a topic")
		}
	}
	if c.TopicRegex != "" {
		if _, err := regexp.Compile(c.TopicRegex); err != nil {
			add("topic_regex", "%q is not a valid regular expression: %v", c.TopicRegex, err)
		}
	}
	switch c.StartFrom {
	case "earliest", "latest":
	default:
		add("start_from", `%q is not valid: use "earliest" or "latest"`, c.StartFrom)
	}
	switch c.Balancer {
	case "cooperative-sticky", "sticky", "range", "round-robin":
	default:
		add("balancer", `%q is not valid: use "cooperative-sticky", "sticky", "range" or "round-robin"`, c.Balancer)
	}
	if c.MaxPollRecords <= 0 {
		add("max_poll_records", "is %d: it must be positive (the default is 10000)", c.MaxPollRecords)
	}
	if c.FetchMaxBytes < 0 {
		add("fetch_max_bytes", "is %d: it must not be negative (0, the default, derives it from max_in_flight_bytes)", c.FetchMaxBytes)
	}
	if c.SessionTimeout < time.Second {
		add("session_timeout", "%v is too short: use at least 1s (the default is 45s)", c.SessionTimeout)
	}
	switch {
	case c.HeartbeatInterval < 100*time.Millisecond:
		add("heartbeat_interval", "%v is too short: use at least 100ms (the default is %v)", c.HeartbeatInterval, defaultHeartbeatInterval)
	case c.SessionTimeout >= time.Second && c.HeartbeatInterval >= c.SessionTimeout:
		// Compared only with a valid session_timeout, which has its own error.
		add("heartbeat_interval", "%v is not below session_timeout %v: the group would expire the member between two heartbeats; use a third of session_timeout or less (%v)",
			c.HeartbeatInterval, c.SessionTimeout, (c.SessionTimeout / 3).Truncate(time.Millisecond))
	}
	if c.RebalanceTimeout < time.Second {
		add("rebalance_timeout", "%v is too short: use at least 1s (the default is 60s)", c.RebalanceTimeout)
	}
	return errors.Join(errs...)
}
