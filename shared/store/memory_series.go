package store

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"time"

	"github.com/tokendata/tokendata/shared/contract"
)

// memSeries is a sorted set of the in-memory backend: points by score,
// at most one per score (every op of this package removes the point at a
// score before it puts another), and the key's expiry.
type memSeries struct {
	pts     []memPoint
	expires time.Time
}

type memPoint struct {
	score  int64
	member []byte
}

// seriesLocked returns key's live series, nil when absent or expired.
func (m *Memory) seriesLocked(key string, now time.Time) *memSeries {
	s := m.series[key]
	if s == nil {
		return nil
	}
	if !now.Before(s.expires) {
		delete(m.series, key)
		return nil
	}
	return s
}

// find is the index of score in s, and whether it is there.
func (s *memSeries) find(score int64) (int, bool) {
	return slices.BinarySearchFunc(s.pts, score, func(p memPoint, t int64) int {
		switch {
		case p.score < t:
			return -1
		case p.score > t:
			return 1
		}
		return 0
	})
}

// trim drops the points below cutoff and the oldest beyond maxPoints.
func (s *memSeries) trim(cutoff, maxPoints int64) {
	i, _ := s.find(cutoff)
	if extra := len(s.pts) - i - int(maxPoints); extra > 0 {
		i += extra
	}
	if i > 0 {
		s.pts = slices.Delete(s.pts, 0, i)
	}
}

// Append implements Backend: the entries and every op under one lock.
func (m *Memory) Append(_ context.Context, entries []Entry, ops []SeriesOp) error {
	data := make([][]byte, len(entries))
	for i, e := range entries {
		if e.TTL <= 0 {
			return errors.New("ttl must be positive")
		}
		data[i] = append([]byte(nil), e.Value...)
	}
	if err := checkOps(ops); err != nil {
		return err
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
	for _, op := range ops {
		s := m.seriesLocked(op.Key, now)
		if s == nil {
			s = &memSeries{}
			m.series[op.Key] = s
		}
		p := op.Point
		i, found := s.find(p.T)
		if found && op.Mode != ModeRaw {
			var old contract.Point
			if json.Unmarshal(s.pts[i].member, &old) == nil {
				p = mergePoint(old, p, op.Mode == ModeOHLC)
			}
		}
		mp := memPoint{score: p.T, member: encodePoint(p)}
		if found {
			s.pts[i] = mp
		} else {
			s.pts = slices.Insert(s.pts, i, mp)
		}
		s.trim(op.Cutoff, op.MaxPoints)
		s.expires = now.Add(op.TTL)
	}
	m.sweepLocked()
	return nil
}

// LoadSeries implements Backend.
func (m *Memory) LoadSeries(_ context.Context, l SeriesLoad) (int, error) {
	if err := checkLoad(l); err != nil {
		return 0, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return 0, errClosed
	}
	now := m.now()
	s := m.seriesLocked(l.Key, now)
	if s == nil {
		s = &memSeries{}
	}
	below := int64(1<<63 - 1)
	if len(s.pts) > 0 {
		below = s.pts[0].score
	}
	var add []memPoint
	for _, p := range l.Points {
		if p.T < below && p.T >= l.Cutoff {
			add = append(add, memPoint{score: p.T, member: encodePoint(p)})
		}
	}
	if len(add) == 0 {
		return 0, nil
	}
	s.pts = append(add, s.pts...)
	s.trim(l.Cutoff, l.MaxPoints)
	s.expires = now.Add(l.TTL)
	m.series[l.Key] = s
	return len(add), nil
}

// ReadSeries implements Backend.
func (m *Memory) ReadSeries(_ context.Context, key string, from, to int64, limit int) (SeriesRange, error) {
	if limit <= 0 {
		return SeriesRange{}, errors.New("read limit must be positive")
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return SeriesRange{}, errClosed
	}
	now := m.now()
	s := m.series[key]
	if s == nil || !now.Before(s.expires) {
		return SeriesRange{}, nil
	}
	out := SeriesRange{Found: true, TTL: s.expires.Sub(now)}
	lo, _ := s.find(from)
	hi, found := s.find(to)
	if found {
		hi++
	}
	if hi-lo > limit {
		out.Truncated = true
		lo = hi - limit
	}
	for _, p := range s.pts[lo:hi] {
		if len(p.member) > MaxPointBytes {
			out.Oversized++
			continue
		}
		out.Members = append(out.Members, append([]byte(nil), p.member...))
	}
	return out, nil
}

// checkOps refuses ops no Store builds: they would break a key's bounds.
func checkOps(ops []SeriesOp) error {
	for _, op := range ops {
		if op.TTL <= 0 || op.MaxPoints <= 0 || op.Key == "" {
			return errors.New("series op without key, ttl or point bound")
		}
		switch op.Mode {
		case ModeRaw, ModeLast, ModeOHLC:
		default:
			return errors.New("series op of unknown mode")
		}
	}
	return nil
}

func checkLoad(l SeriesLoad) error {
	if l.TTL <= 0 || l.MaxPoints <= 0 || l.Key == "" {
		return errors.New("series load without key, ttl or point bound")
	}
	for i := 1; i < len(l.Points); i++ {
		if l.Points[i].T <= l.Points[i-1].T {
			return errors.New("series load: points not in strictly increasing time")
		}
	}
	return nil
}
