package store

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Memory is an in-memory Backend with Redis' TTL semantics: a key past its
// TTL is gone. It serves standalone mode and unit tests.
type Memory struct {
	now func() time.Time

	mu     sync.RWMutex
	vals   map[string]memEntry
	series map[string]*memSeries
	subs   map[string]map[*memSub]struct{}
	closed bool
}

type memEntry struct {
	data    []byte
	expires time.Time
}

// NewMemory returns an empty in-memory backend.
func NewMemory() *Memory { return NewMemoryOn(time.Now) }

// NewMemoryOn returns an empty in-memory backend whose TTLs run on now: a
// test with a clock of its own sees the exact TTLs it wrote.
func NewMemoryOn(now func() time.Time) *Memory {
	return &Memory{now: now, vals: map[string]memEntry{}, series: map[string]*memSeries{},
		subs: map[string]map[*memSub]struct{}{}}
}

var errClosed = errors.New("store closed")

// Set implements Backend.
func (m *Memory) Set(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	return m.SetAll(ctx, Entry{Key: key, Value: value, TTL: ttl})
}

// SetAll implements Backend: every entry under one lock.
func (m *Memory) SetAll(_ context.Context, entries ...Entry) error {
	data := make([][]byte, len(entries))
	for i, e := range entries {
		if e.TTL <= 0 {
			return errors.New("ttl must be positive")
		}
		data[i] = append([]byte(nil), e.Value...)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return errClosed
	}
	now := m.now()
	for i, e := range entries {
		m.vals[e.Key] = memEntry{data: data[i], expires: now.Add(e.TTL)}
	}
	m.sweepLocked()
	return nil
}

// sweepLocked drops expired keys now and then, so that memory does not
// grow with churn.
func (m *Memory) sweepLocked() {
	if len(m.vals)+len(m.series) <= 64 {
		return
	}
	now := m.now()
	for k, e := range m.vals {
		if !now.Before(e.expires) {
			delete(m.vals, k)
		}
	}
	for k, s := range m.series {
		if !now.Before(s.expires) {
			delete(m.series, k)
		}
	}
}

// MGet implements Backend: a value above limit is not copied.
func (m *Memory) MGet(_ context.Context, limit int64, keys ...string) ([]Value, error) {
	if limit <= 0 {
		return nil, errors.New("read limit must be positive")
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return nil, errClosed
	}
	now := m.now()
	out := make([]Value, len(keys))
	for i, k := range keys {
		e, ok := m.vals[k]
		if !ok || !now.Before(e.expires) {
			continue
		}
		v := Value{TTL: e.expires.Sub(now), Found: true, Size: int64(len(e.data))}
		if v.Size > limit {
			v.TooLarge = true
		} else {
			v.Data = append([]byte(nil), e.data...)
		}
		out[i] = v
	}
	return out, nil
}

// Stat implements Backend.
func (m *Memory) Stat(_ context.Context, keys ...string) ([]Stat, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return nil, errClosed
	}
	now := m.now()
	out := make([]Stat, len(keys))
	for i, k := range keys {
		if e, ok := m.vals[k]; ok && now.Before(e.expires) {
			out[i] = Stat{Found: true, Size: int64(len(e.data)), TTL: e.expires.Sub(now)}
		}
	}
	return out, nil
}

// Exists implements Backend.
func (m *Memory) Exists(_ context.Context, keys ...string) ([]bool, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return nil, errClosed
	}
	now := m.now()
	out := make([]bool, len(keys))
	for i, k := range keys {
		e, ok := m.vals[k]
		out[i] = ok && now.Before(e.expires)
	}
	return out, nil
}

// Publish implements Backend. Delivery is best effort, as in Redis: a
// subscriber that does not keep up loses messages.
func (m *Memory) Publish(_ context.Context, channel, message string) error {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return errClosed
	}
	for s := range m.subs[channel] {
		select {
		case s.ch <- message:
		default:
		}
	}
	return nil
}

// Subscribe implements Backend.
func (m *Memory) Subscribe(ctx context.Context, channel string) (Subscription, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, errClosed
	}
	s := &memSub{m: m, channel: channel, ch: make(chan string, 64)}
	if m.subs[channel] == nil {
		m.subs[channel] = map[*memSub]struct{}{}
	}
	m.subs[channel][s] = struct{}{}
	return s, nil
}

// Ping implements Backend.
func (m *Memory) Ping(context.Context) error {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return errClosed
	}
	return nil
}

// Close implements Backend; it ends every subscription.
func (m *Memory) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil
	}
	m.closed = true
	for _, set := range m.subs {
		for s := range set {
			close(s.ch)
		}
	}
	clear(m.subs)
	return nil
}

type memSub struct {
	m       *Memory
	channel string
	ch      chan string
}

func (s *memSub) C() <-chan string { return s.ch }

func (s *memSub) Close() error {
	s.m.mu.Lock()
	defer s.m.mu.Unlock()
	if set, ok := s.m.subs[s.channel]; ok {
		if _, ok := set[s]; ok {
			delete(set, s)
			close(s.ch)
		}
	}
	return nil
}
