package store

// The byte-level side of the history: what a Backend does to one series
// key. Both backends apply the same rules, the in-memory one in Go
// (mergePoint), Redis in Lua (redis_series.go); the contract suite holds
// them to the same results.

import (
	"encoding/json"
	"time"

	"github.com/tokendata/tokendata/shared/contract"
)

// Series modes: how a point joins the series.
const (
	// ModeRaw replaces the point at the same time (one per sample).
	ModeRaw = "raw"
	// ModeLast merges the point into the bucket at the same start: the
	// value of the latest sample wins.
	ModeLast = "last"
	// ModeOHLC merges like ModeLast and keeps the bucket's open (of the
	// earliest sample), high and low.
	ModeOHLC = "ohlc"
)

// SeriesOp is one update of one series key, applied atomically with the
// others of its write: put Point at its score (merging it per Mode), drop
// the points that start before Cutoff and the oldest beyond MaxPoints,
// and restart the key's TTL.
type SeriesOp struct {
	Key  string
	Mode string
	// Point is the sample, already in the tier's shape: for a bucket
	// tier, T is the bucket's start, N, F and Z are set, and a price
	// bucket has O, H and L (see bucketPoint).
	Point contract.Point
	// Cutoff is in Unix ms: points whose score is below it are dropped.
	Cutoff int64
	// MaxPoints bounds the key's length (> 0).
	MaxPoints int64
	// TTL is the key's TTL after the write (> 0).
	TTL time.Duration
}

// SeriesLoad puts points into one series key, for an import (the seeded
// past of demo mode, an upstream's history): only points older than every
// point the key holds are put, so an import never overwrites nor merges
// into a point this service sampled, and running it again adds nothing.
type SeriesLoad struct {
	Key string
	// Points in strictly increasing T.
	Points    []contract.Point
	Cutoff    int64
	MaxPoints int64
	TTL       time.Duration
}

// SeriesRange is the answer of one series read.
type SeriesRange struct {
	// Found is false when the key does not exist.
	Found bool
	// TTL is the key's remaining time to live; 0 for a key without one
	// (which Store refuses, as for a document).
	TTL time.Duration
	// Members are the points' JSON, oldest first.
	Members [][]byte
	// Truncated is set when the range held more than the limit: the
	// oldest were left out.
	Truncated bool
	// Oversized counts members longer than MaxPointBytes, left unread.
	Oversized int
}

// MaxPointBytes bounds one member a read returns: a point of this
// service holds at most four values of contract.MaxValueLen and a few
// numbers, under 600 bytes.
const MaxPointBytes = 640

// MaxSeriesPoints bounds every series key, whatever its retention: the
// oldest points beyond it are dropped at each write. At the default
// refreshes and retentions no key comes near it (a 1-hour tier of 2 years
// holds 17,520 points, a raw one of 48 h at one sample a minute 2,880).
const MaxSeriesPoints = 100_000

// encodePoint is the member of p: its compact JSON. Values are canonical
// decimals (digits and one point), so no escaping ever happens and Redis'
// Lua writes the very same bytes.
func encodePoint(p contract.Point) []byte {
	b, _ := json.Marshal(p) // a struct of ints, bools and plain strings
	return b
}

// bucketPoint is the point a sample (T its time, V its value, flags)
// makes in a tier whose buckets are bucket long: the bucket's start, one
// sample, and for the price its open, high and low.
func bucketPoint(s contract.Point, bucket time.Duration, ohlc bool) contract.Point {
	ms := bucket.Milliseconds()
	start := s.T - mod(s.T, ms)
	p := contract.Point{T: start, V: s.V, N: s.Count(), F: s.First(), Z: s.Last(), Sim: s.Sim, BF: s.BF}
	if ohlc {
		p.O, p.H, p.L = s.V, s.V, s.V
	}
	return p
}

// BucketStart is the start of the bucket of t (Unix ms) in buckets of
// bucket: buckets are aligned on the Unix epoch, so a 1-hour bucket
// starts on the hour in UTC.
func BucketStart(t int64, bucket time.Duration) int64 {
	return t - mod(t, bucket.Milliseconds())
}

// mod is the non-negative remainder.
func mod(a, b int64) int64 {
	r := a % b
	if r < 0 {
		r += b
	}
	return r
}

// mergePoint folds p into old, the bucket at the same start: samples add
// up, the first and last sample times widen, the value is the one of the
// later last sample (p's on a tie), and a price bucket keeps the open of
// the earlier first sample (old's on a tie), the highest high and the
// lowest low. The Lua of redis_series.go does exactly this.
func mergePoint(old, p contract.Point, ohlc bool) contract.Point {
	out := contract.Point{T: p.T, N: old.Count() + p.Count(),
		F: min(old.First(), p.First()), Z: max(old.Last(), p.Last()),
		Sim: old.Sim || p.Sim, BF: old.BF || p.BF}
	out.V = p.V
	if old.Last() > p.Last() {
		out.V = old.V
	}
	if ohlc {
		out.O = old.O
		if out.O == "" {
			out.O = old.V
		}
		if p.First() < old.First() {
			out.O = p.O
		}
		out.H, out.L = p.H, p.L
		if oh := orValue(old.H, old.V); contract.CompareValues(oh, out.H) > 0 {
			out.H = oh
		}
		if ol := orValue(old.L, old.V); contract.CompareValues(ol, out.L) < 0 {
			out.L = ol
		}
	}
	return out
}

func orValue(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
