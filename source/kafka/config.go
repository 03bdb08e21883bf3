package kafka

import (
	"errors"
	"fmt"
	"regexp"
	"time"
)

// Config is the source's configuration, the options under a `type: kafka`
// source. NewConfig fills the defaults.
type Config struct {
	Conn `yaml:",inline"`
	// Group is the consumer group. Processes sharing it share the partitions.
	Group string `yaml:"group"`
	// Topics to consume; exactly one of Topics and TopicRegex is set.
	Topics []string `yaml:"topics"`
	// TopicRegex consumes every topic whose name matches (Go regexp syntax,
	// anchored by the client at both ends).
	TopicRegex string `yaml:"topic_regex"`
	// StartFrom is where a partition with no committed offset starts:
	// "earliest" or "latest".
	StartFrom string `yaml:"start_from"`
	// Balancer is the group's partition assignor: "cooperative-sticky" (the
	// default: a rebalance moves only the partitions that must move), "sticky",
	// "range" or "round-robin" (these three revoke everything on a rebalance).
	Balancer string `yaml:"balancer"`
	// MaxPollRecords bounds the records one fetch hands to the source, and so
	// the source's own buffer; the client's buffer is bounded by FetchMaxBytes.
	MaxPollRecords int `yaml:"max_poll_records"`
	// FetchMaxBytes bounds one fetch response.
	FetchMaxBytes int32 `yaml:"fetch_max_bytes"`
	// SessionTimeout is how long the group waits for a silent member before
	// it takes its partitions away.
	SessionTimeout time.Duration `yaml:"session_timeout"`
	// RebalanceTimeout is how long a rebalance waits for members to give up
	// their partitions. It must cover the pipeline's drain timeout: a revoked
	// partition's in-flight batches finish and its final offset is committed
	// within it.
	RebalanceTimeout time.Duration `yaml:"rebalance_timeout"`
	// InstanceID, if set, makes the member static (KIP-345): a restart within
	// the session timeout gets its partitions back without a rebalance.
	InstanceID string `yaml:"instance_id"`
}

// NewConfig returns a Config with the defaults filled in.
func NewConfig() *Config {
	return &Config{
		Conn:             Conn{ClientID: "weir"},
		StartFrom:        "earliest",
		Balancer:         "cooperative-sticky",
		MaxPollRecords:   10000,
		FetchMaxBytes:    50 << 20,
		SessionTimeout:   45 * time.Second,
		RebalanceTimeout: 60 * time.Second,
	}
}

// Validate reports the first problem with c, naming the option and the fix.
func (c *Config) Validate() error {
	if err := c.Conn.Validate(); err != nil {
		return err
	}
	if c.Group == "" {
		return errors.New("kafka: group is empty: name the consumer group that stores this source's offsets")
	}
	switch {
	case len(c.Topics) == 0 && c.TopicRegex == "":
		return errors.New("kafka: no topics: set topics (a list of names) or topic_regex")
	case len(c.Topics) > 0 && c.TopicRegex != "":
		return errors.New("kafka: topics and topic_regex are both set: keep one")
	}
	for i, t := range c.Topics {
		if t == "" {
			return fmt.Errorf("kafka: topics[%d] is empty", i)
		}
	}
	if c.TopicRegex != "" {
		if _, err := regexp.Compile(c.TopicRegex); err != nil {
			return fmt.Errorf("kafka: topic_regex: %w", err)
		}
	}
	switch c.StartFrom {
	case "earliest", "latest":
	default:
		return fmt.Errorf(`kafka: start_from %q is not valid: use "earliest" or "latest"`, c.StartFrom)
	}
	switch c.Balancer {
	case "cooperative-sticky", "sticky", "range", "round-robin":
	default:
		return fmt.Errorf(`kafka: balancer %q is not valid: use "cooperative-sticky", "sticky", "range" or "round-robin"`, c.Balancer)
	}
	if c.MaxPollRecords <= 0 {
		return fmt.Errorf("kafka: max_poll_records is %d: it must be positive", c.MaxPollRecords)
	}
	if c.FetchMaxBytes <= 0 {
		return fmt.Errorf("kafka: fetch_max_bytes is %d: it must be positive", c.FetchMaxBytes)
	}
	if c.SessionTimeout < time.Second {
		return fmt.Errorf("kafka: session_timeout %v is too short: use at least 1s", c.SessionTimeout)
	}
	if c.RebalanceTimeout < time.Second {
		return fmt.Errorf("kafka: rebalance_timeout %v is too short: use at least 1s", c.RebalanceTimeout)
	}
	return nil
}
