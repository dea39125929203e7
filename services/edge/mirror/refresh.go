package mirror

import (
	"context"
	"time"

	"github.com/tokendata/tokendata/services/edge/snapshot"
	"github.com/tokendata/tokendata/services/edge/view"
	"github.com/tokendata/tokendata/shared/contract"
	"github.com/tokendata/tokendata/shared/store"
)

// refresh is Refresh fetching only the fetch domains and the documents
// whose size or expiry moved (store.Reader); a value above
// EDGE_MAX_DOCUMENT_BYTES is refused unread.
func (s *Mirror) refresh(ctx context.Context, fetch ...contract.Domain) {
	// The store read holds readMu only: a request at a boundary (Current)
	// waits for a render at most, never for the store.
	s.readMu.Lock()
	defer s.readMu.Unlock()
	rctx, cancel := context.WithTimeout(ctx, s.cfg.StoreTimeout)
	defer cancel()
	// A remaining TTL counts from some instant of the read: counted from
	// its start, a copy never outlives the key.
	sent := s.now()
	snap, err := s.reader.Read(rctx, fetch...)
	docs, errs, statuses := snap.Docs, snap.Errs, snap.Statuses
	now := s.now()
	prevHealth := s.health.Load()
	if err != nil {
		s.metrics.refreshes.WithLabelValues("error").Inc()
		s.metrics.storeErrs.Inc()
		why := "store unreachable or timed out"
		if store.IsAuthError(err) {
			why = "REDIS_URL: authentication failed (wrong password?)"
		}
		h := &snapshot.StoreHealth{OK: false, CheckedAt: now, LastOK: prevHealth.LastOK, Err: why}
		s.health.Store(h)
		if prevHealth.OK || prevHealth.CheckedAt.IsZero() {
			s.log.Warn("store read failed; serving the last snapshot", "error", s.Redact(err.Error()))
		}
		s.refreshMu.Lock()
		s.rerenderLocked(now, false)
		s.refreshMu.Unlock()
		s.firstCheck()
		return
	}
	s.metrics.refreshes.WithLabelValues("ok").Inc()
	if !prevHealth.OK && !prevHealth.CheckedAt.IsZero() {
		s.log.Info("store reachable again")
	}
	s.health.Store(&snapshot.StoreHealth{OK: true, CheckedAt: now, LastOK: now})
	read := make(map[contract.Domain]snapshot.ReadDoc, len(docs))
	for d, doc := range docs {
		rd := snapshot.ReadDoc{Env: doc.Envelope}
		if doc.TTL > 0 {
			rd.Expires = sent.Add(doc.TTL.Round(time.Millisecond)) // Redis counts in ms
		}
		read[d] = rd
	}
	s.refreshMu.Lock()
	defer s.refreshMu.Unlock()
	cur := s.view.Load()
	next, problems := snapshot.Merge(cur.State, read, errs, statuses, now)
	for _, p := range problems {
		s.log.Warn("stored document refused; keeping the previous one", "problem", s.Redact(p))
	}
	async := s.histAsync.Load()
	if !s.loaded.Load() && !async {
		// the first view of a start carries the history: no history body
		// answers empty for want of a read (a first read that comes
		// later, the store having been down at the start, leaves it to
		// the history goroutine: until it has read, the history answers
		// 503 data_unavailable, and the data waits for nothing)
		s.histMu.Lock()
		if hist, changed := s.readHistory(ctx, cur.State, next, now); changed {
			next.Hist = hist
		}
		s.histMu.Unlock()
	}
	s.firstRead.CompareAndSwap(0, now.UnixNano())
	// The status records go out after the documents of the same read
	// (and before OnPublish hears of either): a status that names a
	// failed run is never shown beside data older than the good runs
	// before it; the records may lag the documents, a moment.
	changed := !sameState(cur.State, next) || (!cur.NextChange.IsZero() && !now.Before(cur.NextChange))
	if changed {
		s.storeView(next, now)
	}
	s.statuses.Store(&statuses)
	if changed {
		s.published()
	}
	// ready only once the view of the first read is out: a request let in
	// by readiness never finds the empty view of the start
	wasLoaded := s.loaded.Swap(true)
	s.firstCheck()
	// The documents first, then their history: reading up to 15 series
	// never holds back a new price or supply. Under the refresher, its
	// history goroutine reads them, so that the next refresh and the
	// boundaries do not wait either.
	if async {
		select {
		case s.histWake <- struct{}{}:
		default: // a read is already asked for
		}
		return
	}
	if wasLoaded {
		s.updateHistoryLocked(ctx)
	}
}

// Current is the view to serve now: the published one, re-rendered first
// when a domain crossed its stale-after or TTL since and the refresher has
// not done it yet (its timer late on a busy machine), so that no answer
// outlives its data's TTL or misses its stale flag because a goroutine
// was not scheduled. It waits for a render under way at most (never for
// a store read): the first request past the boundary renders, the others
// find the new view.
func (s *Mirror) Current() *view.View {
	if s.advance(s.now()) {
		return s.view.Load()
	}
	s.refreshMu.Lock()
	s.rerenderLocked(s.now(), false)
	s.refreshMu.Unlock()
	return s.view.Load()
}

// Rerender re-renders the current state when a domain crossed a boundary.
func (s *Mirror) Rerender() {
	s.refreshMu.Lock()
	defer s.refreshMu.Unlock()
	s.rerenderLocked(s.now(), true)
}

func (s *Mirror) rerenderLocked(now time.Time, force bool) {
	cur := s.view.Load()
	if !force && (cur.NextChange.IsZero() || now.Before(cur.NextChange)) {
		return
	}
	if !force && s.advance(now) {
		return // the view rendered ahead is in
	}
	if !cur.NextChange.IsZero() && !now.Before(cur.NextChange) {
		s.metrics.boundaries.WithLabelValues(BoundaryRendered).Inc()
	}
	s.publish(snapshot.Expire(cur.State, now), now)
}

// render renders st at now, after the current view.
//
// Its duration is the lead of the next render ahead (ahead.go): a view is
// rendered ahead early enough for a render as long as the last one.
func (s *Mirror) render(st *snapshot.State, now time.Time) *view.View {
	start := time.Now()
	v := s.bodies.Render(st, s.view.Load(), now)
	s.ahead.lastRender.Store(int64(time.Since(start)))
	return v
}

func (s *Mirror) publish(st *snapshot.State, now time.Time) {
	s.storeView(st, now)
	s.published()
}

// storeView renders st at now and makes it the view served, without
// telling OnPublish.
func (s *Mirror) storeView(st *snapshot.State, now time.Time) {
	s.view.Store(s.render(st, now))
	s.metrics.renders.Inc()
}

// firstCheck marks the first read of the store done (Checked) and wakes
// OnPublish, also when that read changed no view (an empty store, or one
// that failed): what it found is news to the event feed.
func (s *Mirror) firstCheck() {
	if !s.checked.Swap(true) {
		s.published()
	}
}

// published tells OnPublish that a new view is out.
func (s *Mirror) published() {
	if f := s.cfg.OnPublish; f != nil {
		f()
	}
}

// sameState reports whether two states render the same bodies at the
// same instant: same history series (read once per change, so compared
// by identity), same documents (by updated_at and bytes), same
// rejections, same run of every domain without a document (it decides
// holders_unavailable, and whether a 503 says "retry later" or the
// remedy of a permanent failure).
func sameState(a, b *snapshot.State) bool {
	if len(a.Docs) != len(b.Docs) || len(a.Rejected) != len(b.Rejected) || len(a.Hist) != len(b.Hist) {
		return false
	}
	for k, x := range a.Hist {
		if b.Hist[k] != x {
			return false
		}
	}
	for d, x := range a.Docs {
		y := b.Docs[d]
		if y == nil || !x.Env.UpdatedAt.Equal(y.Env.UpdatedAt) || string(x.Env.Data) != string(y.Env.Data) ||
			x.Env.Source != y.Env.Source || !x.Expires.Equal(y.Expires) {
			return false
		}
	}
	for d, why := range a.Rejected {
		if b.Rejected[d] != why {
			return false
		}
	}
	for _, d := range contract.Domains {
		if a.Docs[d] != nil {
			continue
		}
		ra := a.Statuses[contract.CollectorOf(d)].Runs[d]
		rb := b.Statuses[contract.CollectorOf(d)].Runs[d]
		if ra.OK != rb.OK || ra.ErrorKind != rb.ErrorKind || ra.Error != rb.Error || ra.Remedy != rb.Remedy {
			return false
		}
	}
	return true
}

// dataAge is the age in seconds of a domain's document, -1 when absent.
func (s *Mirror) dataAge(d contract.Domain) float64 {
	doc := s.view.Load().State.Docs[d]
	if doc == nil {
		return -1
	}
	return s.now().Sub(doc.Env.UpdatedAt).Seconds()
}

func (s *Mirror) dataStale(d contract.Domain) float64 {
	doc := s.view.Load().State.Docs[d]
	if doc == nil {
		return -1
	}
	return boolFloat(s.now().Sub(doc.Env.UpdatedAt) > s.timings[d].StaleAfter)
}

func (s *Mirror) StoreUp() bool { return s.health.Load().OK }
