package store_test

import (
	"testing"
	"time"

	"github.com/tokendata/tokendata/shared/contract"
	"github.com/tokendata/tokendata/shared/store"
)

// TestDownsample: samples and 5-minute buckets merged into 10-minute
// buckets keep what the tiers keep: count, first and last sample times,
// the last value, and for OHLC the open of the earliest, the highest high
// and the lowest low.
func TestDownsample(t *testing.T) {
	base := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC).UnixMilli()
	minute := time.Minute.Milliseconds()
	samples := []contract.Point{{T: base + 1*minute, V: "2"}, {T: base + 4*minute, V: "5"}, {T: base + 9*minute, V: "1", BF: true},
		{T: base + 12*minute, V: "3"}}
	got := store.Downsample(samples, 10*time.Minute, true)
	want := []contract.Point{
		{T: base, V: "1", O: "2", H: "5", L: "1", N: 3, F: base + 1*minute, Z: base + 9*minute, BF: true},
		{T: base + 10*minute, V: "3", O: "3", H: "3", L: "3", N: 1, F: base + 12*minute, Z: base + 12*minute},
	}
	if len(got) != len(want) {
		t.Fatalf("got %+v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("bucket %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
	if n := store.CountBuckets(samples, 10*time.Minute); n != 2 {
		t.Errorf("CountBuckets: %d", n)
	}
	buckets := store.Buckets(samples, contract.Tier5m, false)
	got = store.Downsample(buckets, 10*time.Minute, false)
	if len(got) != 2 || got[0].V != "1" || got[0].N != 3 || got[0].O != "" || got[1].V != "3" || got[1].F != base+12*minute {
		t.Errorf("from 5-minute buckets: %+v", got)
	}
	if got := store.Downsample(nil, time.Hour, true); len(got) != 0 {
		t.Errorf("no points: %+v", got)
	}
}
