package kafkaclient

import (
	"context"
	"log/slog"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Logger returns a client option that routes the client's own log lines at
// warnings and above into l, with Kafka error codes spelled out (Explain).
// Below warnings the client is too chatty for a pipeline's log.
func Logger(l *slog.Logger) kgo.Opt {
	return kgo.WithLogger(&clientLog{l: l})
}

// clientLog is a kgo.Logger. The client calls it from its own goroutines,
// concurrently; it keeps no state.
type clientLog struct{ l *slog.Logger }

func (*clientLog) Level() kgo.LogLevel { return kgo.LogLevelWarn }

func (c *clientLog) Log(level kgo.LogLevel, msg string, keyvals ...any) {
	lvl := slog.LevelWarn
	switch level {
	case kgo.LogLevelError:
		lvl = slog.LevelError
	case kgo.LogLevelWarn:
	default:
		return
	}
	args := make([]any, 0, len(keyvals)+2)
	for i, kv := range keyvals {
		if i%2 == 1 {
			kv = explainValue(keyvals[i-1], kv)
		}
		args = append(args, kv)
	}
	args = append(args, "component", "kafka-client")
	c.l.Log(context.Background(), lvl, "kafka client: "+msg, args...)
}

// explainValue spells out a value the client logs: an error as Explain
// does, and a bare Kafka error code (the client logs "error_code", 25 for a
// failed offset commit) by its name, as weir names codes everywhere else.
func explainValue(key, v any) any {
	switch x := v.(type) {
	case error:
		return Explain(x).Error()
	case int16:
		if k, _ := key.(string); k == "error_code" || k == "err_code" {
			if err := ForCode(x); err != nil {
				return err.Error()
			}
		}
	}
	return v
}
