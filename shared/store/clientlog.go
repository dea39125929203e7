package store

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// ClientLogEvery is how often, at most, a line of the Redis client
// library's own reports (a failed dial while Redis is down, a pub/sub
// reconnect) is logged; the next line counts those left out.
const ClientLogEvery = 10 * time.Second

// clientLogMax bounds one logged report, like every message of a log line.
const clientLogMax = 512

// LogClientTo sends the Redis client library's own reports to log, as JSON
// lines at warn level (component "redis-client"), at most one every
// ClientLogEvery. Without it the library prints plain-text lines on stderr
// about once a second per connection pool while Redis is unreachable. The
// setting is process-wide, as the library's logger is.
func LogClientTo(log *slog.Logger) {
	redis.SetLogger(&clientLogger{log: log.With("component", "redis-client"), every: ClientLogEvery})
}

type clientLogger struct {
	log   *slog.Logger
	every time.Duration

	mu         sync.Mutex
	last       time.Time
	suppressed int
}

// Printf implements the library's logging interface.
func (c *clientLogger) Printf(ctx context.Context, format string, v ...any) {
	c.mu.Lock()
	now := time.Now()
	if !c.last.IsZero() && now.Sub(c.last) < c.every {
		c.suppressed++
		c.mu.Unlock()
		return
	}
	suppressed := c.suppressed
	c.last, c.suppressed = now, 0
	c.mu.Unlock()

	msg := strings.TrimSpace(fmt.Sprintf(format, v...))
	if len(msg) > clientLogMax {
		msg = strings.ToValidUTF8(msg[:clientLogMax], "") + "…"
	}
	c.log.LogAttrs(ctx, slog.LevelWarn, "redis client", slog.String("report", msg), slog.Int("suppressed", suppressed))
}
