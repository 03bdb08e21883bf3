package kafkaclient

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Reach's rule as a script of connection events: failing from the first
// failed dial or read after the last successful read, until the next one;
// a successful dial alone clears nothing.
func TestReachFollowsTheClientsEvents(t *testing.T) {
	refused := errors.New("dial tcp 127.0.0.1:9092: connect: connection refused")
	type step struct {
		event string // "dial", "dial-fail", "read", "read-fail"
		err   error
		// what Failing reports after it: the step whose time is since
		// (-1: not failing), the attempts, and a part of the error.
		since, n int
		msg      string
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"healthy", []step{{"dial", nil, -1, 0, ""}, {"read", nil, -1, 0, ""}}},
		{"a cluster that went away and came back", []step{
			{"read", nil, -1, 0, ""},
			{"read-fail", errors.New("EOF"), 1, 1, "EOF"},
			{"dial-fail", refused, 1, 2, "connection refused"},
			{"dial-fail", refused, 1, 3, "connection refused"},
			{"dial", nil, 1, 3, "connection refused"},
			{"read", nil, -1, 0, ""},
			{"dial-fail", refused, 6, 1, "connection refused"},
		}},
		{"a Kafka error spelled out", []step{
			{"read-fail", kerr.NotCoordinator, 0, 1, "NOT_COORDINATOR (16)"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := time.Unix(1000, 0)
			r := &Reach{now: func() time.Time { return clock }}
			var at []time.Time
			for i, s := range tc.steps {
				clock = clock.Add(time.Second)
				at = append(at, clock)
				switch s.event {
				case "dial", "dial-fail":
					r.OnBrokerConnect(kgo.BrokerMetadata{}, 0, nil, s.err)
				default:
					r.OnBrokerRead(kgo.BrokerMetadata{}, 1, 10, 0, 0, s.err)
				}
				since, n, err := r.Failing()
				if s.since < 0 {
					if !since.IsZero() || n != 0 || err != nil {
						t.Fatalf("step %d (%s): failing since %v, %d attempts, %v; want not failing", i, s.event, since, n, err)
					}
					continue
				}
				if !since.Equal(at[s.since]) || n != s.n || err == nil || !strings.Contains(err.Error(), s.msg) {
					t.Fatalf("step %d (%s): failing since %v, %d attempts, %v; want since %v, %d attempts, an error with %q", i, s.event, since, n, err, at[s.since], s.n, s.msg)
				}
			}
		})
	}
}
