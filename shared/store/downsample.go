package store

import (
	"time"

	"github.com/tokendata/tokendata/shared/contract"
)

// Downsample merges points (samples or buckets, oldest first) into
// buckets of width, aligned on the Unix epoch like the tiers' own, as
// writing them into a tier of that bucket would: each bucket keeps its
// samples' count, the times of its first and last sample, its last value,
// and with ohlc its open, high and low. A reader that must bound how many
// points it shows (the edge's history bodies) uses it; width must be a
// multiple of the points' own bucket.
func Downsample(points []contract.Point, width time.Duration, ohlc bool) []contract.Point {
	out := make([]contract.Point, 0, min(len(points), 64))
	for _, p := range points {
		bp := p
		if p.N == 0 { // a sample
			bp = bucketPoint(p, width, ohlc)
		} else {
			bp.T = BucketStart(p.T, width)
		}
		if n := len(out); n > 0 && out[n-1].T == bp.T {
			out[n-1] = mergePoint(out[n-1], bp, ohlc)
			continue
		}
		out = append(out, bp)
	}
	return out
}

// CountBuckets is how many buckets of width points (oldest first) fall
// into: the length of Downsample's answer, without building it.
func CountBuckets(points []contract.Point, width time.Duration) int {
	n, last := 0, int64(0)
	for i, p := range points {
		if s := BucketStart(p.T, width); i == 0 || s != last {
			n, last = n+1, s
		}
	}
	return n
}
