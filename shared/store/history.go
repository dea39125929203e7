package store

// The history: one series per measure and tier (contract.HistoryKey),
// appended to in the step that writes a document, read one bounded range
// at a time.
//
// Every successful poll's values (contract.Sample) go, with the document
// and in the same atomic step, into the three tiers of their measure:
//
//   - raw: the sample itself, score its time;
//   - 5m and 1h: the bucket holding its time (buckets are aligned on the
//     Unix epoch, so on the hour in UTC), updated in place: the number of
//     samples, the times of the first and last, the last value (the
//     close), and for the price the open, high and low;
//
// then each key drops the points that start before its retention
// (Retention, HISTORY_*_RETENTION) and the oldest beyond MaxSeriesPoints,
// and its TTL restarts at the retention plus HistoryTTLSlack. So every key
// is bounded by time and by count, and vanishes when nothing is written
// to it for longer than it keeps anything.
//
// Nothing else appends: a document written back after the store lost it
// (collector.Runner.Restore) comes without samples, so a restarted
// collector or a flushed Redis never makes a point up; the time it was not
// polling stays a gap (Gaps). Imports (Import: demo mode's seeded past,
// an upstream's price history) only put points older than every point a
// series holds, marked BF.

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/tokendata/tokendata/shared/contract"
)

// Retention is how long each tier keeps its points.
type Retention struct {
	// Raw keeps every sample (HISTORY_RAW_RETENTION).
	Raw time.Duration
	// FiveMin keeps the 5-minute buckets (HISTORY_5M_RETENTION).
	FiveMin time.Duration
	// Hour keeps the 1-hour buckets (HISTORY_1H_RETENTION).
	Hour time.Duration
}

// DefaultRetention: 48 hours of samples, 30 days of 5-minute buckets,
// 2 years (730 days) of 1-hour buckets.
var DefaultRetention = Retention{Raw: 48 * time.Hour, FiveMin: 30 * 24 * time.Hour, Hour: 730 * 24 * time.Hour}

// HistoryTTLSlack is how much longer than its retention a series key
// lives after its last write.
const HistoryTTLSlack = time.Hour

// Of is the retention of tier t.
func (r Retention) Of(t contract.Tier) time.Duration {
	switch t {
	case contract.Tier5m:
		return r.FiveMin
	case contract.Tier1h:
		return r.Hour
	}
	return r.Raw
}

// Validate checks that every tier keeps something, and at least as long
// as the finer tiers: a window is read from one tier, and a coarser tier
// that kept less than a finer one would lose the past first.
func (r Retention) Validate() error {
	switch {
	case r.Raw <= 0 || r.FiveMin <= 0 || r.Hour <= 0:
		return errors.New("every retention must be positive")
	case r.FiveMin < r.Raw:
		return fmt.Errorf("the 5-minute retention %s is shorter than the raw one %s", r.FiveMin, r.Raw)
	case r.Hour < r.FiveMin:
		return fmt.Errorf("the 1-hour retention %s is shorter than the 5-minute one %s", r.Hour, r.FiveMin)
	}
	return nil
}

// WithRetention sets the retention of each tier; a field that is not
// positive keeps its default.
func WithRetention(r Retention) Option {
	return func(s *Store) {
		if r.Raw > 0 {
			s.retention.Raw = r.Raw
		}
		if r.FiveMin > 0 {
			s.retention.FiveMin = r.FiveMin
		}
		if r.Hour > 0 {
			s.retention.Hour = r.Hour
		}
	}
}

// WithClock sets the clock the store trims by and reads windows at: a
// test's fixed clock (tests of trimming, the edge's golden bodies). A
// service keeps the default, time.Now.
func WithClock(now func() time.Time) Option { return func(s *Store) { s.now = now } }

// Retention is the store's retention of each tier.
func (s *Store) Retention() Retention { return s.retention }

// cutoff is the oldest score tier t keeps at now (Unix ms): for a bucket
// tier, the start of the bucket holding now minus the retention, so that
// a bucket partly within it stays.
func (s *Store) cutoff(t contract.Tier, now time.Time) int64 {
	c := now.Add(-s.retention.Of(t)).UnixMilli()
	if b := t.Bucket(); b > 0 {
		c = BucketStart(c, b)
	}
	return c
}

func (s *Store) seriesTTL(t contract.Tier) time.Duration {
	return s.retention.Of(t) + t.Bucket() + HistoryTTLSlack
}

func mode(m contract.Measure, t contract.Tier) string {
	switch {
	case t == contract.TierRaw:
		return ModeRaw
	case m.OHLC():
		return ModeOHLC
	}
	return ModeLast
}

// sampleOps turns the samples of env into the ops of every tier.
func (s *Store) sampleOps(env contract.Envelope, samples []contract.Sample) ([]SeriesOp, error) {
	if len(samples) == 0 {
		return nil, nil
	}
	now := s.now()
	at := env.UpdatedAt.UnixMilli()
	seen := map[contract.Measure]bool{}
	ops := make([]SeriesOp, 0, len(samples)*len(contract.Tiers))
	for _, smp := range samples {
		if err := smp.Validate(); err != nil {
			return nil, err
		}
		if smp.Measure.Domain() != env.Domain {
			return nil, fmt.Errorf("a sample of %s is not one of the %s document", smp.Measure, env.Domain)
		}
		if seen[smp.Measure] {
			return nil, fmt.Errorf("two samples of %s in one write", smp.Measure)
		}
		seen[smp.Measure] = true
		v, _ := contract.CanonicalValue(smp.Value)
		p := contract.Point{T: at, V: v, Sim: env.Source.Simulated}
		for _, t := range contract.Tiers {
			tp := p
			if b := t.Bucket(); b > 0 {
				tp = bucketPoint(p, b, smp.Measure.OHLC())
			}
			cut := s.cutoff(t, now)
			if tp.T < cut {
				continue // older than the tier keeps
			}
			ops = append(ops, SeriesOp{Key: contract.HistoryKey(s.mint, smp.Measure, t), Mode: mode(smp.Measure, t),
				Point: tp, Cutoff: cut, MaxPoints: MaxSeriesPoints, TTL: s.seriesTTL(t)})
		}
	}
	return ops, nil
}

// Buckets folds points (samples or buckets, in any order) into the
// buckets of tier t, as writing them one by one would: the points of
// demo mode's seeded past, or of an import, shaped for Import. For
// TierRaw it returns the points sorted, one per time (the last wins).
func Buckets(points []contract.Point, t contract.Tier, ohlc bool) []contract.Point {
	byStart := map[int64]contract.Point{}
	var order []int64
	for _, p := range points {
		bp := p
		if b := t.Bucket(); b > 0 {
			if p.N == 0 { // a sample
				bp = bucketPoint(p, b, ohlc)
			} else {
				bp.T = BucketStart(p.T, b)
			}
		}
		old, ok := byStart[bp.T]
		switch {
		case !ok:
			order = append(order, bp.T)
		case t.Bucket() > 0:
			bp = mergePoint(old, bp, ohlc)
		}
		byStart[bp.T] = bp
	}
	out := make([]contract.Point, 0, len(order))
	for _, k := range order {
		out = append(out, byStart[k])
	}
	sortPoints(out)
	return out
}

func sortPoints(ps []contract.Point) {
	slices.SortFunc(ps, func(a, b contract.Point) int { return cmp.Compare(a.T, b.T) })
}

// Import puts points into tier t of measure m, marked BF (not sampled by
// this service): only those older than every point the series holds, and
// within the tier's retention. Points must be in strictly increasing T,
// with canonical values; in a bucket tier each must be a bucket (T its
// start, N ≥ 1, F and Z its first and last sample times; a price bucket
// with O, H and L): Buckets shapes them. sim marks a simulated import
// (demo mode's seeded past). It returns how many points it put.
func (s *Store) Import(ctx context.Context, m contract.Measure, t contract.Tier, points []contract.Point, sim bool) (int, error) {
	if !m.Valid() || !t.Valid() {
		return 0, fmt.Errorf("import: unknown measure %.32q or tier %.8q", m, t)
	}
	b := t.Bucket()
	cutoff := s.cutoff(t, s.now())
	pts := make([]contract.Point, 0, len(points))
	for i, p := range points {
		if p.T < cutoff {
			continue // older than the tier keeps: never sent
		}
		v, err := contract.CanonicalValue(p.V)
		if err != nil {
			return 0, fmt.Errorf("import %s: %w", m, err)
		}
		p.V = v
		if b > 0 {
			if p.N < 1 || p.T != BucketStart(p.T, b) || p.F < p.T || p.Z < p.F || p.Z >= p.T+b.Milliseconds() {
				return 0, fmt.Errorf("import %s %s: point %d is not a bucket of the tier", m, t, i)
			}
			if m.OHLC() {
				for _, x := range []*string{&p.O, &p.H, &p.L} {
					if *x, err = contract.CanonicalValue(orValue(*x, p.V)); err != nil {
						return 0, fmt.Errorf("import %s: %w", m, err)
					}
				}
			} else {
				p.O, p.H, p.L = "", "", ""
			}
		} else {
			p.O, p.H, p.L, p.N, p.F, p.Z = "", "", "", 0, 0, 0
		}
		p.BF, p.Sim = true, p.Sim || sim
		pts = append(pts, p)
	}
	if len(pts) == 0 {
		return 0, nil
	}
	n, err := s.b.LoadSeries(ctx, SeriesLoad{Key: contract.HistoryKey(s.mint, m, t), Points: pts,
		Cutoff: cutoff, MaxPoints: MaxSeriesPoints, TTL: s.seriesTTL(t)})
	if err != nil {
		return 0, fmt.Errorf("import %s %s: %w", m, t, err)
	}
	return n, nil
}

// DefaultHistoryLimit bounds a History read when the caller gives no
// limit: above the count of every window at the default retentions
// (everything of 2 years of hourly buckets is 17,520 points).
const DefaultHistoryLimit = 20_000

// Series is the answer of a history read.
type Series struct {
	Measure contract.Measure
	Tier    contract.Tier
	// From and To are the range asked, both included.
	From, To time.Time
	// Points are oldest first, at most the read's limit.
	Points []contract.Point
	// Truncated is set when the range held more points than the limit:
	// the oldest were left out.
	Truncated bool
	// Invalid counts points left out: undecodable, not canonical, or
	// longer than MaxPointBytes (a key written by something else).
	Invalid int
}

// History reads measure m over window w from the tier of w (24 h from
// every sample, 7 and 30 days from 5-minute buckets, a year and all from
// hourly ones) in one bounded read: the newest limit points at most
// (DefaultHistoryLimit when limit ≤ 0). A measure never sampled gives no
// points and no error.
func (s *Store) History(ctx context.Context, m contract.Measure, w contract.Window, limit int) (Series, error) {
	if !w.Valid() {
		return Series{}, fmt.Errorf("unknown history window %.8q", w)
	}
	now := s.now()
	t := w.Tier()
	from := now.Add(-w.Duration())
	if w == contract.WindowAll {
		from = time.UnixMilli(s.cutoff(t, now))
	}
	return s.HistoryRange(ctx, m, t, from, now.Add(contract.MaxClockSkew), limit)
}

// HistoryRange reads the points of measure m in tier t whose time lies
// in [from, to]: the newest limit of them at most (DefaultHistoryLimit
// when limit ≤ 0), oldest first. A key without TTL is refused, as a
// document is.
func (s *Store) HistoryRange(ctx context.Context, m contract.Measure, t contract.Tier, from, to time.Time, limit int) (Series, error) {
	if !m.Valid() || !t.Valid() {
		return Series{}, fmt.Errorf("unknown measure %.32q or tier %.8q", m, t)
	}
	if limit <= 0 {
		limit = DefaultHistoryLimit
	}
	out := Series{Measure: m, Tier: t, From: from.UTC(), To: to.UTC()}
	r, err := s.b.ReadSeries(ctx, contract.HistoryKey(s.mint, m, t), from.UnixMilli(), to.UnixMilli(), limit)
	if err != nil {
		return Series{}, fmt.Errorf("read history of %s: %w", m, err)
	}
	if !r.Found {
		return out, nil
	}
	if r.TTL <= 0 {
		return Series{}, fmt.Errorf("history of %s, %s: key has no TTL", m, t)
	}
	out.Truncated, out.Invalid = r.Truncated, r.Oversized
	out.Points = make([]contract.Point, 0, len(r.Members))
	for _, b := range r.Members {
		var p contract.Point
		if json.Unmarshal(b, &p) != nil {
			out.Invalid++
			continue
		}
		if v, err := contract.CanonicalValue(p.V); err != nil || v != p.V {
			out.Invalid++
			continue
		}
		out.Points = append(out.Points, p)
	}
	return out, nil
}

// GapThreshold is the longest time between two consecutive samples of a
// measure polled every refresh that is not a gap: 2 × refresh plus
// max(refresh / 2, 1 min). One failed poll (its retries included) leaves
// two intervals between samples and is not a gap; two in a row are. The
// slack covers a poll's own duration (its requests and retries), which
// moves the time of its sample.
func GapThreshold(refresh time.Duration) time.Duration {
	return 2*refresh + max(refresh/2, time.Minute)
}

// Gap is a span without samples (contract.Gap).
type Gap = contract.Gap

// Gaps returns the gaps of points (oldest first, any tier) for a measure
// polled every refresh: each pair of consecutive points whose last and
// first sample times (Point.Last, Point.First) are more than
// GapThreshold(refresh) apart. A bucket records the times of its first
// and last sample, so a gap inside the resolution of a tier is still
// seen; an imported bucket covers its interval. When now is not zero, a
// last sample older than the threshold opens a gap until now. Nothing is
// ever interpolated: a reader draws a gap as a gap.
func Gaps(points []contract.Point, refresh time.Duration, now time.Time) []Gap {
	limit := GapThreshold(refresh).Milliseconds()
	var out []Gap
	for i := 1; i < len(points); i++ {
		a, b := points[i-1].Last(), points[i].First()
		if b-a > limit {
			out = append(out, Gap{From: time.UnixMilli(a).UTC(), To: time.UnixMilli(b).UTC()})
		}
	}
	if n := len(points); n > 0 && !now.IsZero() {
		if last := points[n-1].Last(); now.UnixMilli()-last > limit {
			out = append(out, Gap{From: time.UnixMilli(last).UTC(), To: now.UTC(), Open: true})
		}
	}
	return out
}
