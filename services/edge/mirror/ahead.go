package mirror

import (
	"sync/atomic"
	"time"

	"github.com/tokendata/tokendata/services/edge/snapshot"
	"github.com/tokendata/tokendata/services/edge/view"
)

// Rendering ahead of a boundary. A view is due again when a domain
// crosses its stale-after or its TTL (view.nextChange). Rendering then,
// on the request path, would hold every request that arrives meanwhile
// behind a render and its compressions (tens of milliseconds with
// brotli). So the refresher renders the next view shortly before the
// boundary, for the boundary's instant, and the first request or timer
// past the boundary swaps it in through one compare-and-swap: nobody
// waits. The render is a function of the state and the instant alone,
// and the state between two boundaries does not change, so the view
// rendered ahead is the one a render at the boundary would give. A new
// document published meanwhile makes it obsolete (it was rendered from
// the view it would replace, which is no longer current), and the edge
// falls back to rendering at the boundary.

// aheadView is a view rendered for base's nextChange.
type aheadView struct {
	base *view.View
	next *view.View
}

// Bounds of how long before a boundary the next view is rendered: three
// times the last render's duration, within these.
const (
	minAheadLead = 20 * time.Millisecond
	maxAheadLead = time.Second
)

// aheadLead is how long before a boundary the next view is rendered.
func aheadLead(lastRender time.Duration) time.Duration {
	return min(max(3*lastRender, minAheadLead), maxAheadLead)
}

// aheadState holds the view rendered ahead and the last render's
// duration (nanoseconds).
type aheadState struct {
	view       atomic.Pointer[aheadView]
	lastRender atomic.Int64
}

// untilPrerender is how long until the next view should be rendered
// ahead: an hour when there is no boundary or it is rendered already.
func (s *Mirror) untilPrerender() time.Duration {
	v := s.view.Load()
	if v.NextChange.IsZero() {
		return time.Hour
	}
	if a := s.ahead.view.Load(); a != nil && a.base == v {
		return time.Hour
	}
	lead := aheadLead(time.Duration(s.ahead.lastRender.Load()))
	return max(v.NextChange.Add(-lead).Sub(s.now()), time.Millisecond)
}

// Prerender renders the current view's successor for its boundary, once.
func (s *Mirror) Prerender() {
	s.refreshMu.Lock()
	defer s.refreshMu.Unlock()
	v := s.view.Load()
	if v.NextChange.IsZero() || !s.now().Before(v.NextChange) {
		return // no boundary, or past it already: it is rendered when due
	}
	if a := s.ahead.view.Load(); a != nil && a.base == v {
		return
	}
	at := v.NextChange
	start := time.Now()
	next := s.bodies.Render(snapshot.Expire(v.State, at), v, at)
	s.ahead.lastRender.Store(int64(time.Since(start)))
	s.ahead.view.Store(&aheadView{base: v, next: next})
	s.metrics.renders.Inc()
}

// advance swaps in the view rendered ahead once the current one is past
// its boundary at now. It reports false when the current view is due and
// none rendered ahead fits: the caller renders.
func (s *Mirror) advance(now time.Time) bool {
	for {
		v := s.view.Load()
		if v.NextChange.IsZero() || now.Before(v.NextChange) {
			return true // not due
		}
		a := s.ahead.view.Load()
		if a == nil || a.base != v || (!a.next.NextChange.IsZero() && !now.Before(a.next.NextChange)) {
			return false // none, of another view, or itself due already
		}
		if s.view.CompareAndSwap(v, a.next) {
			s.ahead.view.CompareAndSwap(a, nil)
			s.metrics.boundaries.WithLabelValues(BoundaryAhead).Inc()
			s.published()
			return true
		}
		// another request swapped it, or a refresh published: look again
	}
}

// crossBoundary is the refresher's timer at the current view's boundary:
// the view rendered ahead is swapped in, else the due view is rendered.
// A prerender may still be running when the timer fires (late on a busy
// machine, or a long render): the view it makes is taken once the render
// lock is ours, rather than rendered a second time.
func (s *Mirror) crossBoundary() {
	if s.advance(s.now()) {
		return
	}
	s.refreshMu.Lock()
	defer s.refreshMu.Unlock()
	s.rerenderLocked(s.now(), false)
}
