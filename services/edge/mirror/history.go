package mirror

// The history the edge serves at /api/history/{measure}/{window}: read
// from the store off the request path, shaped once (bounded, downsampled,
// gaps found), kept in the state by measure and window, and rendered like
// every other body.
//
// A domain's series are read again only when its document changed (a
// collector commits a sample with its document, so a new document is the
// only sign of a new point) or when the domain's refresh has passed since
// the last read: then the window's edges have moved by a sample's
// interval, and an outage has grown long enough to show as an open gap.

import (
	"context"
	"time"

	"github.com/tokendata/tokendata/services/edge/snapshot"
	"github.com/tokendata/tokendata/shared/contract"
	"github.com/tokendata/tokendata/shared/store"
)

// MaxHistoryPoints bounds the points of one history body (and the gaps).
// A chart a thousand pixels wide has no use for more; past it the points
// are merged into wider buckets (historyWidths). At the default refreshes
// and retentions: 24 h of the market's samples in 2-minute buckets (720),
// 7 days in 15-minute ones (672), 30 days in hours (720), a year in
// 12 hours (730) and two years in days (730).
const MaxHistoryPoints = 1000

// historyWidths are the bucket widths a body's points may be merged
// into, from the narrowest: each divides a day (a week for the last), so
// buckets aligned on the Unix epoch start on round UTC times.
var historyWidths = []time.Duration{time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute,
	15 * time.Minute, 30 * time.Minute, time.Hour, 2 * time.Hour, 3 * time.Hour, 4 * time.Hour, 6 * time.Hour,
	12 * time.Hour, 24 * time.Hour, 48 * time.Hour, 7 * 24 * time.Hour}

// historyReads is when each domain's series were last read, and from
// which document: the refresher's own bookkeeping (under refreshMu).
type historyReads map[contract.Domain]historyRead

type historyRead struct {
	docAt time.Time
	next  time.Time
}

// historyDomains are the domains whose documents carry samples.
var historyDomains = []contract.Domain{contract.DomainMarket, contract.DomainSupply, contract.DomainHolders}

// readHistory returns the history of next (the state being built from
// prev): prev's series, with those of every domain whose document changed
// or whose refresh has passed read again. A failed read keeps what prev
// had and is tried at the next refresh. changed reports whether anything
// was read.
func (s *Mirror) readHistory(ctx context.Context, prev, next *snapshot.State, now time.Time) (hist map[snapshot.HistKey]*snapshot.HistorySeries, changed bool) {
	hist = prev.Hist
	for _, d := range historyDomains {
		var docAt time.Time
		if doc := next.Docs[d]; doc != nil {
			docAt = doc.Env.UpdatedAt
		}
		last, ok := s.histReads[d]
		if ok && last.docAt.Equal(docAt) && now.Before(last.next) {
			continue
		}
		got, err := s.readDomainHistory(ctx, d, now)
		if err != nil {
			s.metrics.storeErrs.Inc()
			s.log.Warn("history read failed; serving the last one", "domain", string(d), "error", s.Redact(err.Error()))
			continue
		}
		if !changed {
			hist = cloneHistory(hist)
			changed = true
		}
		for k, v := range got {
			hist[k] = v
		}
		s.histReads[d] = historyRead{docAt: docAt, next: now.Add(max(s.timings[d].Refresh, time.Minute))}
	}
	return hist, changed
}

func cloneHistory(h map[snapshot.HistKey]*snapshot.HistorySeries) map[snapshot.HistKey]*snapshot.HistorySeries {
	out := make(map[snapshot.HistKey]*snapshot.HistorySeries, snapshot.NumHistMeasures*snapshot.NumHistWindows)
	for k, v := range h {
		out[k] = v
	}
	return out
}

// readDomainHistory reads every measure of domain d at now: one bounded
// read per tier (the longest window it serves), sliced into its windows.
func (s *Mirror) readDomainHistory(ctx context.Context, d contract.Domain, now time.Time) (map[snapshot.HistKey]*snapshot.HistorySeries, error) {
	out := map[snapshot.HistKey]*snapshot.HistorySeries{}
	ret := s.store.Retention()
	_, fdv := s.bodies.MaxSupplyWhole()
	for _, hm := range snapshot.HistoryMeasures {
		m := hm.Measure
		if m.Domain() != d || (m == contract.MeasureFDVUSD && !fdv) {
			continue
		}
		for _, t := range contract.Tiers {
			var span time.Duration
			for _, w := range contract.HistoryWindows {
				if w.Tier() == t {
					span = max(span, windowSpan(w, ret))
				}
			}
			// EDGE_STORE_TIMEOUT bounds each read: a domain's are up to 15
			// of up to 20,000 points each.
			rctx, cancel := context.WithTimeout(ctx, s.cfg.StoreTimeout)
			series, err := s.store.HistoryRange(rctx, m, t, now.Add(-span), now.Add(contract.MaxClockSkew), store.DefaultHistoryLimit)
			cancel()
			if err != nil {
				return nil, err
			}
			for _, w := range contract.HistoryWindows {
				if w.Tier() == t {
					out[snapshot.HistKey{Measure: m, Window: w}] = shapeHistory(series, w, now.Add(-windowSpan(w, ret)), now, s.timings[d].Refresh)
				}
			}
		}
	}
	return out, nil
}

// windowSpan is how far back w reaches: its duration, or for "all" the
// 1-hour tier's retention.
func windowSpan(w contract.Window, ret store.Retention) time.Duration {
	if w == contract.WindowAll {
		return ret.Of(contract.Tier1h)
	}
	return w.Duration()
}

// shapeHistory makes the series of window w (from, to) out of a read of
// its tier: the points from from on, their gaps for a measure polled
// every refresh, at most maxHistoryGaps gaps (the oldest left out with
// the points before them) and at most MaxHistoryPoints points (merged
// into the narrowest historyWidths bucket that fits).
func shapeHistory(read store.Series, w contract.Window, from, to time.Time, refresh time.Duration) *snapshot.HistorySeries {
	hs := &snapshot.HistorySeries{Measure: read.Measure, Window: w, Tier: read.Tier, From: from, To: to, Bucket: read.Tier.Bucket()}
	start := 0
	for start < len(read.Points) && read.Points[start].T < from.UnixMilli() {
		start++
	}
	pts := read.Points[start:]
	// The read kept the newest points: a window that starts at the first
	// of them asked for older ones than the read held.
	hs.Truncated = read.Truncated && start == 0
	hs.Gaps = store.Gaps(pts, refresh, to)
	if n := len(hs.Gaps); n > MaxHistoryPoints {
		hs.Gaps = hs.Gaps[n-MaxHistoryPoints:]
		cut := hs.Gaps[0].From.UnixMilli()
		i := 0
		for i < len(pts) && pts[i].Last() < cut {
			i++
		}
		pts, hs.Truncated = pts[i:], true
	}
	if len(pts) > MaxHistoryPoints {
		ohlc := read.Measure.OHLC()
		width := historyWidths[len(historyWidths)-1]
		for _, wd := range historyWidths {
			if wd > hs.Bucket && store.CountBuckets(pts, wd) <= MaxHistoryPoints {
				width = wd
				break
			}
		}
		pts = store.Downsample(pts, width, ohlc)
		hs.Bucket, hs.Downsampled = width, true
		if n := len(pts); n > MaxHistoryPoints { // even a week's buckets are too many
			pts, hs.Truncated = pts[n-MaxHistoryPoints:], true
		}
	}
	hs.Points = pts
	return hs
}

// historyLoop reads the history when a refresh asks, until ctx is done.
func (s *Mirror) historyLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.histWake:
		}
		s.histMu.Lock()
		st := s.view.Load().State
		hist, changed := s.readHistory(ctx, st, st, s.now())
		s.histMu.Unlock()
		if changed {
			s.publishHistory(hist)
		}
	}
}

// publishHistory publishes the current view with hist. It renders
// outside refreshMu (the history bodies are the long part of a render)
// and swaps the view under it only if nobody published meanwhile; else
// it renders again onto the newer view.
func (s *Mirror) publishHistory(hist map[snapshot.HistKey]*snapshot.HistorySeries) {
	for {
		cur := s.view.Load()
		next := *cur.State
		next.Hist = hist
		v := s.render(&next, s.now())
		s.refreshMu.Lock()
		if s.view.Load() == cur {
			s.view.Store(v)
			s.metrics.renders.Inc()
			s.refreshMu.Unlock()
			s.published()
			return
		}
		s.refreshMu.Unlock()
	}
}

// updateHistoryLocked reads the history of the current view and publishes
// it when it changed (refreshMu held).
func (s *Mirror) updateHistoryLocked(ctx context.Context) {
	s.histMu.Lock()
	defer s.histMu.Unlock()
	st := s.view.Load().State
	if hist, changed := s.readHistory(ctx, st, st, s.now()); changed {
		withHist := *st
		withHist.Hist = hist
		s.publish(&withHist, s.now())
	}
}
