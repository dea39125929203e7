package store

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// The client library's reports become JSON lines, bounded in rate and
// length, with the count of those left out.
func TestClientLoggerJSONAndRate(t *testing.T) {
	var out syncBuffer
	c := &clientLogger{log: slog.New(slog.NewJSONHandler(&out, nil)), every: time.Hour}
	for i := 0; i < 5; i++ {
		c.Printf(context.Background(), "redis: failed to dial after %d attempts: %s", i, strings.Repeat("x", 2000))
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 1 {
		t.Fatalf("%d lines within the interval, want 1:\n%s", len(lines), out.String())
	}
	var line struct {
		Level, Msg, Report string
		Suppressed         int
	}
	if err := json.Unmarshal([]byte(lines[0]), &line); err != nil {
		t.Fatalf("not a JSON line: %v: %s", err, lines[0])
	}
	if line.Level != "WARN" || line.Msg != "redis client" || !strings.HasPrefix(line.Report, "redis: failed to dial after 0 attempts") {
		t.Errorf("line %+v", line)
	}
	if len(line.Report) > clientLogMax+len("…") {
		t.Errorf("report of %d bytes, bound %d", len(line.Report), clientLogMax)
	}
	c.every = 0
	c.Printf(context.Background(), "again")
	if !strings.Contains(out.String(), `"suppressed":4`) {
		t.Errorf("the next line does not count the 4 left out:\n%s", out.String())
	}
}

// Once installed, the library's own report of an unreachable Redis arrives
// in the logger rather than on stderr.
func TestLogClientToReceivesLibraryReports(t *testing.T) {
	var out syncBuffer
	LogClientTo(slog.New(slog.NewJSONHandler(&out, nil)))
	opts, err := ParseRedisURL("redis://127.0.0.1:1/0")
	if err != nil {
		t.Fatal(err)
	}
	st := New(NewRedis(opts), "m")
	defer func() { _ = st.Close() }()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := st.Ping(ctx); err == nil {
		t.Fatal("a Redis on port 1 answered")
	}
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) && !strings.Contains(out.String(), "redis client") {
		time.Sleep(50 * time.Millisecond)
	}
	if !strings.Contains(out.String(), `"component":"redis-client"`) {
		t.Errorf("no report of the unreachable Redis in the logger: %q", out.String())
	}
}
