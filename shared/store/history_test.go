package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tokendata/tokendata/shared/contract"
	"github.com/tokendata/tokendata/shared/store"
	"github.com/tokendata/tokendata/shared/testkit/redistest"
)

func redisPerKeyFactory(t *testing.T) (store.Backend, *redistest.Server) {
	b, srv := redisFactory(t)
	store.ForcePerKey(b.(*store.Redis))
	return b, srv
}

func TestHistoryMemory(t *testing.T)      { runHistory(t, memoryFactory) }
func TestHistoryRedis(t *testing.T)       { runHistory(t, redisFactory) }
func TestHistoryRedisPerKey(t *testing.T) { runHistory(t, redisPerKeyFactory) }

// clock is a settable time for the store.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

// marketAt is a market envelope dated at.
func marketAt(t *testing.T, at time.Time, sim bool) contract.Envelope {
	t.Helper()
	env, err := contract.NewEnvelope(mint, contract.DomainMarket, at, contract.Source{Name: "test", Simulated: sim},
		contract.Market{Status: contract.MarketNotIndexed})
	if err != nil {
		t.Fatal(err)
	}
	return env
}

func price(v string) contract.Sample {
	return contract.Sample{Measure: contract.MeasurePriceUSD, Value: v}
}

func points(t *testing.T, s *store.Store, m contract.Measure, tier contract.Tier) []contract.Point {
	t.Helper()
	r, err := s.HistoryRange(context.Background(), m, tier, time.Unix(0, 0), time.Now().Add(10*365*24*time.Hour), 0)
	if err != nil {
		t.Fatal(err)
	}
	if r.Invalid != 0 || r.Truncated {
		t.Fatalf("%s %s: %d invalid, truncated %v", m, tier, r.Invalid, r.Truncated)
	}
	return r.Points
}

func runHistory(t *testing.T, newBackend backendFactory) {
	ctx := context.Background()
	// base is on a 1-hour boundary, a little in the past.
	base := time.Now().Add(-3 * time.Hour).Truncate(time.Hour)
	ms := func(d time.Duration) int64 { return base.Add(d).UnixMilli() }

	t.Run("samples go into every tier with the document", func(t *testing.T) {
		b, _ := newBackend(t)
		s := store.New(b, mint)
		env := marketAt(t, base.Add(61*time.Second), true)
		err := s.Write(ctx, env, time.Hour, price("0.0057470"),
			contract.Sample{Measure: contract.MeasureLiquidityUSD, Value: "997416.54"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Read(ctx, contract.DomainMarket); err != nil {
			t.Fatalf("document: %v", err)
		}
		raw := points(t, s, contract.MeasurePriceUSD, contract.TierRaw)
		want := []contract.Point{{T: ms(61 * time.Second), V: "0.005747", Sim: true}}
		if !slices.Equal(raw, want) {
			t.Errorf("raw = %+v, want %+v (canonical value, simulated)", raw, want)
		}
		five := points(t, s, contract.MeasurePriceUSD, contract.Tier5m)
		wantB := []contract.Point{{T: ms(0), V: "0.005747", O: "0.005747", H: "0.005747", L: "0.005747",
			N: 1, F: ms(61 * time.Second), Z: ms(61 * time.Second), Sim: true}}
		if !slices.Equal(five, wantB) {
			t.Errorf("5m = %+v, want %+v", five, wantB)
		}
		liq := points(t, s, contract.MeasureLiquidityUSD, contract.Tier1h)
		if len(liq) != 1 || liq[0].V != "997416.54" || liq[0].O != "" || liq[0].T != ms(0) {
			t.Errorf("1h liquidity = %+v, want one last-value bucket at the hour", liq)
		}
		if got := points(t, s, contract.MeasureHolders, contract.TierRaw); len(got) != 0 {
			t.Errorf("a measure never sampled has points: %+v", got)
		}
	})

	t.Run("a bucket keeps open high low close and the sample times", func(t *testing.T) {
		b, _ := newBackend(t)
		s := store.New(b, mint)
		seq := []struct {
			at time.Duration
			v  string
		}{{70 * time.Second, "5"}, {130 * time.Second, "7.25"}, {190 * time.Second, "0.9"},
			{40 * time.Second, "6"},                            // late, earlier than every other: the new open, not the close
			{250 * time.Second, "3"}, {310 * time.Second, "4"}} // 310 s is the next 5-minute bucket
		for _, x := range seq {
			if err := s.Write(ctx, marketAt(t, base.Add(x.at), false), time.Hour, price(x.v)); err != nil {
				t.Fatal(err)
			}
		}
		five := points(t, s, contract.MeasurePriceUSD, contract.Tier5m)
		want := []contract.Point{
			{T: ms(0), V: "3", O: "6", H: "7.25", L: "0.9", N: 5, F: ms(40 * time.Second), Z: ms(250 * time.Second)},
			{T: ms(5 * time.Minute), V: "4", O: "4", H: "4", L: "4", N: 1, F: ms(310 * time.Second), Z: ms(310 * time.Second)},
		}
		if !slices.Equal(five, want) {
			t.Errorf("5m buckets = %+v\nwant %+v", five, want)
		}
		hour := points(t, s, contract.MeasurePriceUSD, contract.Tier1h)
		wantH := []contract.Point{{T: ms(0), V: "4", O: "6", H: "7.25", L: "0.9", N: 6, F: ms(40 * time.Second), Z: ms(310 * time.Second)}}
		if !slices.Equal(hour, wantH) {
			t.Errorf("1h bucket = %+v\nwant %+v", hour, wantH)
		}
		if raw := points(t, s, contract.MeasurePriceUSD, contract.TierRaw); len(raw) != len(seq) || raw[0].V != "6" {
			t.Errorf("raw = %+v, want every sample in time order", raw)
		}
	})

	t.Run("high and low compare as numbers, not as text", func(t *testing.T) {
		b, _ := newBackend(t)
		s := store.New(b, mint)
		for i, v := range []string{"9.5", "10", "0.00001", "0.0001", "123456789012345678901234567890.5", "2"} {
			if err := s.Write(ctx, marketAt(t, base.Add(time.Duration(i+1)*time.Second), false), time.Hour, price(v)); err != nil {
				t.Fatal(err)
			}
		}
		p := points(t, s, contract.MeasurePriceUSD, contract.Tier1h)[0]
		if p.H != "123456789012345678901234567890.5" || p.L != "0.00001" || p.O != "9.5" || p.V != "2" {
			t.Errorf("bucket = %+v", p)
		}
	})

	t.Run("a write that cannot take its samples takes nothing", func(t *testing.T) {
		b, _ := newBackend(t)
		s := store.New(b, mint)
		if err := s.Write(ctx, marketAt(t, base, false), time.Hour, price("1")); err != nil {
			t.Fatal(err)
		}
		for _, bad := range [][]contract.Sample{
			{price("-1")}, {price("1e5")}, {price("")}, {price("1"), price("2")},
			{{Measure: contract.MeasureHolders, Value: "5"}}, // not a market measure
			{{Measure: "nope", Value: "5"}},
		} {
			if err := s.Write(ctx, marketAt(t, base.Add(time.Minute), false), time.Hour, bad...); err == nil {
				t.Errorf("write with samples %v accepted", bad)
			}
		}
		doc, err := s.Read(ctx, contract.DomainMarket)
		if err != nil || !doc.UpdatedAt.Equal(base) {
			t.Errorf("refused writes changed the document: %v %v", doc.UpdatedAt, err)
		}
		if raw := points(t, s, contract.MeasurePriceUSD, contract.TierRaw); len(raw) != 1 {
			t.Errorf("refused writes appended: %+v", raw)
		}
	})

	t.Run("trimmed by time per tier; keys carry a ttl above their retention", func(t *testing.T) {
		b, _ := newBackend(t)
		c := &clock{t: base}
		ret := store.Retention{Raw: 2 * time.Hour, FiveMin: 6 * time.Hour, Hour: 48 * time.Hour}
		s := store.New(b, mint, store.WithRetention(ret), store.WithClock(c.now))
		write := func(at time.Time, v string) {
			t.Helper()
			c.set(at)
			if err := s.Write(ctx, marketAt(t, at, false), time.Hour, price(v)); err != nil {
				t.Fatal(err)
			}
		}
		write(base.Add(-90*time.Minute), "1")
		write(base, "2")
		if n := len(points(t, s, contract.MeasurePriceUSD, contract.TierRaw)); n != 2 {
			t.Fatalf("raw holds %d points, want 2", n)
		}
		write(base.Add(3*time.Hour), "3") // the first sample is now 4.5 h old
		raw := points(t, s, contract.MeasurePriceUSD, contract.TierRaw)
		if len(raw) != 1 || raw[0].V != "3" {
			t.Errorf("raw after 3 h = %+v, want only the last sample (2 h retention)", raw)
		}
		if five := points(t, s, contract.MeasurePriceUSD, contract.Tier5m); len(five) != 3 {
			t.Errorf("5m after 3 h = %+v, want all three buckets (6 h retention)", five)
		}
		write(base.Add(7*time.Hour), "4")
		if five := points(t, s, contract.MeasurePriceUSD, contract.Tier5m); len(five) != 2 || five[0].V != "3" {
			t.Errorf("5m after 7 h = %+v, want the last two buckets", five)
		}
		if hour := points(t, s, contract.MeasurePriceUSD, contract.Tier1h); len(hour) != 4 {
			t.Errorf("1h = %+v, want 4 buckets (48 h retention)", hour)
		}
		// A sample older than a tier keeps is not put into it.
		write(base.Add(7*time.Hour), "5")
		c.set(base.Add(7 * time.Hour))
		if err := s.Write(ctx, marketAt(t, base.Add(-time.Hour), false), time.Hour, price("6")); err != nil {
			t.Fatal(err)
		}
		if raw := points(t, s, contract.MeasurePriceUSD, contract.TierRaw); len(raw) != 1 {
			t.Errorf("raw took a sample older than its retention: %+v", raw)
		}
		for _, tier := range contract.Tiers {
			r, err := s.Backend().ReadSeries(ctx, contract.HistoryKey(mint, contract.MeasurePriceUSD, tier), 0, 1<<62, 1)
			if err != nil {
				t.Fatal(err)
			}
			want := ret.Of(tier) + tier.Bucket() + store.HistoryTTLSlack
			if r.TTL > want || r.TTL < want-time.Minute {
				t.Errorf("%s ttl = %s, want %s (retention + bucket + slack)", tier, r.TTL, want)
			}
		}
	})

	t.Run("windows read their tier, newest first when truncated", func(t *testing.T) {
		b, _ := newBackend(t)
		c := &clock{t: base}
		s := store.New(b, mint, store.WithClock(c.now))
		for i := range 30 {
			at := base.Add(time.Duration(i) * 2 * time.Minute)
			c.set(at)
			if err := s.Write(ctx, marketAt(t, at, false), time.Hour, price(fmt.Sprint(i+1))); err != nil {
				t.Fatal(err)
			}
		}
		for _, tc := range []struct {
			w     contract.Window
			tier  contract.Tier
			count int
		}{{contract.Window24h, contract.TierRaw, 30}, {contract.Window7d, contract.Tier5m, 12},
			{contract.Window30d, contract.Tier5m, 12}, {contract.Window1y, contract.Tier1h, 1}, {contract.WindowAll, contract.Tier1h, 1}} {
			r, err := s.History(ctx, contract.MeasurePriceUSD, tc.w, 0)
			if err != nil {
				t.Fatal(err)
			}
			if r.Tier != tc.tier || len(r.Points) != tc.count || r.Truncated {
				t.Errorf("%s: tier %s, %d points, truncated %v; want %s, %d", tc.w, r.Tier, len(r.Points), r.Truncated, tc.tier, tc.count)
			}
		}
		r, err := s.History(ctx, contract.MeasurePriceUSD, contract.Window24h, 5)
		if err != nil {
			t.Fatal(err)
		}
		var vs []string
		for _, p := range r.Points {
			vs = append(vs, p.V)
		}
		if !r.Truncated || strings.Join(vs, ",") != "26,27,28,29,30" {
			t.Errorf("limit 5: %v truncated %v; want the newest five, oldest first", vs, r.Truncated)
		}
	})

	t.Run("an import only goes before what the series holds", func(t *testing.T) {
		b, _ := newBackend(t)
		s := store.New(b, mint)
		if err := s.Write(ctx, marketAt(t, base.Add(2*time.Hour+time.Minute), false), time.Hour, price("5")); err != nil {
			t.Fatal(err)
		}
		candles := []contract.Point{
			{T: ms(0), V: "2", O: "1", H: "3", L: "1", N: 1, F: ms(0), Z: ms(time.Hour - time.Millisecond)},
			{T: ms(time.Hour), V: "3", O: "2", H: "4", L: "2", N: 1, F: ms(time.Hour), Z: ms(2*time.Hour - time.Millisecond)},
			{T: ms(2 * time.Hour), V: "9", O: "9", H: "9", L: "9", N: 1, F: ms(2 * time.Hour), Z: ms(2*time.Hour + 30*time.Second)},
		}
		n, err := s.Import(ctx, contract.MeasurePriceUSD, contract.Tier1h, candles, false)
		if err != nil || n != 2 {
			t.Fatalf("import = %d, %v; want the 2 candles before the sampled bucket", n, err)
		}
		hour := points(t, s, contract.MeasurePriceUSD, contract.Tier1h)
		if len(hour) != 3 || !hour[0].BF || !hour[1].BF || hour[2].BF || hour[2].V != "5" || hour[2].N != 1 {
			t.Errorf("1h after import = %+v; the sampled bucket must stay as it was", hour)
		}
		if n, err := s.Import(ctx, contract.MeasurePriceUSD, contract.Tier1h, candles, false); err != nil || n != 0 {
			t.Errorf("second import = %d, %v; want nothing", n, err)
		}
		bad := []contract.Point{{T: ms(time.Minute), V: "1", N: 1, F: ms(time.Minute), Z: ms(time.Minute)}}
		if _, err := s.Import(ctx, contract.MeasurePriceUSD, contract.Tier1h, bad, false); err == nil {
			t.Error("an import of a point not aligned on its bucket was accepted")
		}
		seed := []contract.Point{{T: ms(-time.Hour), V: "1"}, {T: ms(-59 * time.Minute), V: "2"}}
		if n, err := s.Import(ctx, contract.MeasureHolders, contract.TierRaw, seed, true); err != nil || n != 2 {
			t.Fatalf("raw import = %d, %v", n, err)
		}
		raw := points(t, s, contract.MeasureHolders, contract.TierRaw)
		if len(raw) != 2 || !raw[0].Sim || !raw[0].BF {
			t.Errorf("seeded raw = %+v, want marked simulated and imported", raw)
		}
	})

	t.Run("concurrent writers lose no sample of a bucket", func(t *testing.T) {
		b, _ := newBackend(t)
		s := store.New(b, mint)
		var wg sync.WaitGroup
		for i := range 20 {
			wg.Go(func() {
				at := base.Add(time.Duration(i+1) * time.Second)
				if err := s.Write(ctx, marketAt(t, at, false), time.Hour, price(fmt.Sprint(100+i))); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		p := points(t, s, contract.MeasurePriceUSD, contract.Tier5m)
		if len(p) != 1 || p[0].N != 20 || p[0].O != "100" || p[0].V != "119" || p[0].H != "119" || p[0].L != "100" {
			t.Errorf("bucket after 20 concurrent writes = %+v", p)
		}
	})
}

// TestHistoryKeyRefusals: a series key that holds something else makes
// the write fail before anything is written, the document included; a
// series key without TTL is refused when read.
func TestHistoryKeyRefusals(t *testing.T) {
	ctx := context.Background()
	b, _ := redisFactory(t)
	s := store.New(b, mint)
	rc := b.(*store.Redis).Client()
	base := time.Now().Add(-time.Hour)
	if err := s.Write(ctx, marketAt(t, base, false), time.Hour, price("1")); err != nil {
		t.Fatal(err)
	}
	key := contract.HistoryKey(mint, contract.MeasureLiquidityUSD, contract.Tier1h)
	if err := rc.Set(ctx, key, "not a series", time.Hour).Err(); err != nil {
		t.Fatal(err)
	}
	err := s.Write(ctx, marketAt(t, base.Add(time.Minute), false), time.Hour, price("2"),
		contract.Sample{Measure: contract.MeasureLiquidityUSD, Value: "3"})
	if err == nil || !strings.Contains(err.Error(), "WRONGTYPE") {
		t.Fatalf("write over a key of another type: %v", err)
	}
	doc, err := s.Read(ctx, contract.DomainMarket)
	if err != nil || !doc.UpdatedAt.Equal(base.UTC().Truncate(time.Millisecond)) {
		t.Errorf("the failed write changed the document: %v, %v", doc.UpdatedAt, err)
	}
	if raw := points(t, s, contract.MeasurePriceUSD, contract.TierRaw); len(raw) != 1 {
		t.Errorf("the failed write appended: %+v", raw)
	}
	pk := contract.HistoryKey(mint, contract.MeasurePriceUSD, contract.TierRaw)
	if err := rc.Persist(ctx, pk).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.History(ctx, contract.MeasurePriceUSD, contract.Window24h, 0); err == nil || !strings.Contains(err.Error(), "no TTL") {
		t.Errorf("read of a key without TTL: %v", err)
	}
	// A member far above MaxPointBytes is never returned.
	if err := rc.Expire(ctx, pk, time.Hour).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rc.ZAdd(ctx, pk, redisZ(base.Add(time.Second).UnixMilli(), strings.Repeat("x", 1<<20))).Err(); err != nil {
		t.Fatal(err)
	}
	r, err := s.History(ctx, contract.MeasurePriceUSD, contract.Window24h, 0)
	if err != nil || len(r.Points) != 1 || r.Invalid != 1 {
		t.Errorf("read with an oversized member: %d points, %d invalid, %v", len(r.Points), r.Invalid, err)
	}
}

// TestBackendsStoreTheSameBytes is the property of the bucket maths: for
// random sequences of samples (out of order, repeated times, values of
// every length), the in-memory backend, Redis' Lua and Buckets (the fold
// in Go) give the very same points in every tier.
func TestBackendsStoreTheSameBytes(t *testing.T) {
	ctx := context.Background()
	rb, _ := redisFactory(t)
	base := time.Now().Add(-5 * time.Hour).Truncate(time.Hour)
	rng := rand.New(rand.NewPCG(7, 11))
	for round := range 12 {
		mem := store.NewMemory()
		ms := store.New(mem, mint)
		rs := store.New(rb, mint)
		if err := rb.(*store.Redis).Client().FlushAll(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		var samples []contract.Point
		for range 20 + rng.IntN(200) {
			at := base.Add(time.Duration(rng.Int64N(int64(4 * time.Hour))))
			if rng.IntN(10) == 0 && len(samples) > 0 {
				at = time.UnixMilli(samples[rng.IntN(len(samples))].T) // a repeated time
			}
			v := randomValue(rng)
			env := marketAt(t, at, rng.IntN(2) == 0)
			for _, s := range []*store.Store{ms, rs} {
				if err := s.Write(ctx, env, time.Hour, price(v), contract.Sample{Measure: contract.MeasureVolume24hUSD, Value: v}); err != nil {
					t.Fatal(err)
				}
			}
			cv, _ := contract.CanonicalValue(v)
			samples = append(samples, contract.Point{T: env.UpdatedAt.UnixMilli(), V: cv, Sim: env.Source.Simulated})
		}
		for _, m := range []contract.Measure{contract.MeasurePriceUSD, contract.MeasureVolume24hUSD} {
			for _, tier := range contract.Tiers {
				a, b := points(t, ms, m, tier), points(t, rs, m, tier)
				if !slices.Equal(a, b) {
					t.Fatalf("round %d, %s %s: memory and Redis differ\nmemory %+v\nredis  %+v", round, m, tier, a, b)
				}
				want := store.Buckets(samples, tier, m.OHLC())
				if tier == contract.TierRaw {
					want = lastPerTime(samples)
				}
				if !slices.Equal(a, want) {
					t.Fatalf("round %d, %s %s: stored %+v\nfold in Go %+v", round, m, tier, a, want)
				}
				checkBuckets(t, a, samples, tier, m.OHLC())
			}
		}
		_ = mem.Close()
	}
}

// lastPerTime is the raw tier's rule: one point per time, the last write
// wins.
func lastPerTime(samples []contract.Point) []contract.Point {
	by := map[int64]contract.Point{}
	for _, s := range samples {
		by[s.T] = s
	}
	out := make([]contract.Point, 0, len(by))
	for _, p := range by {
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b contract.Point) int { return int(a.T - b.T) })
	return out
}

// checkBuckets checks each bucket against its definition on the samples
// themselves, independently of the fold.
func checkBuckets(t *testing.T, got, samples []contract.Point, tier contract.Tier, ohlc bool) {
	t.Helper()
	b := tier.Bucket().Milliseconds()
	if b == 0 {
		return
	}
	for _, p := range got {
		var in []contract.Point
		for _, s := range samples {
			if s.T >= p.T && s.T < p.T+b {
				in = append(in, s)
			}
		}
		if int64(len(in)) != p.N || len(in) == 0 {
			t.Fatalf("bucket %d holds %d samples, says %d", p.T, len(in), p.N)
		}
		first, last := in[0], in[0]
		hi, lo := in[0].V, in[0].V
		for _, s := range in[1:] {
			if s.T < first.T {
				first = s
			}
			if s.T >= last.T {
				last = s
			}
			if contract.CompareValues(s.V, hi) > 0 {
				hi = s.V
			}
			if contract.CompareValues(s.V, lo) < 0 {
				lo = s.V
			}
		}
		if p.F != first.T || p.Z != last.T || p.V != last.V {
			t.Fatalf("bucket %d: first %d last %d close %s; samples say %d %d %s", p.T, p.F, p.Z, p.V, first.T, last.T, last.V)
		}
		if ohlc && (p.O != first.V || p.H != hi || p.L != lo) {
			t.Fatalf("bucket %d: o %s h %s l %s; samples say %s %s %s", p.T, p.O, p.H, p.L, first.V, hi, lo)
		}
	}
}

func randomValue(rng *rand.Rand) string {
	switch rng.IntN(4) {
	case 0:
		return fmt.Sprint(rng.Uint64())
	case 1:
		return fmt.Sprintf("0.%06d", rng.IntN(1_000_000))
	case 2:
		return fmt.Sprintf("%d.%d", rng.IntN(1000), rng.IntN(100))
	}
	return fmt.Sprintf("%d", rng.IntN(10))
}

func TestGaps(t *testing.T) {
	refresh := time.Minute // threshold 3 min
	if got := store.GapThreshold(refresh); got != 3*time.Minute {
		t.Fatalf("threshold = %s", got)
	}
	if got := store.GapThreshold(15 * time.Minute); got != 37*time.Minute+30*time.Second {
		t.Fatalf("threshold of 15 min = %s", got)
	}
	m := func(min float64) int64 { return int64(min * 60_000) }
	pts := []contract.Point{
		{T: m(0)}, {T: m(1)}, {T: m(3)}, // 2 min: one missed poll, no gap
		{T: m(6.5)},                                        // 3.5 min: a gap
		{T: m(5), N: 4, F: m(9), Z: m(13)},                 // a bucket: its own times count
		{T: m(15), N: 2, F: m(16), Z: m(19)},               // 3 min after 13: no gap
		{T: m(30), N: 2, F: m(30), Z: m(33)},               // 11 min after 19: a gap
		{T: m(35), N: 5, F: m(35), Z: m(40) - 1, BF: true}, // imported: covers its bucket
		{T: m(40), N: 5, F: m(40), Z: m(45) - 1, BF: true},
	}
	got := store.Gaps(pts, refresh, time.UnixMilli(m(60)))
	want := []store.Gap{
		{From: time.UnixMilli(m(3)).UTC(), To: time.UnixMilli(m(6.5)).UTC()},
		{From: time.UnixMilli(m(19)).UTC(), To: time.UnixMilli(m(30)).UTC()},
		{From: time.UnixMilli(m(45) - 1).UTC(), To: time.UnixMilli(m(60)).UTC(), Open: true},
	}
	if !slices.Equal(got, want) {
		t.Errorf("gaps = %+v\nwant %+v", got, want)
	}
	if got := store.Gaps(pts[:3], refresh, time.Time{}); len(got) != 0 {
		t.Errorf("no gap expected without now: %+v", got)
	}
}

func TestCanonicalValues(t *testing.T) {
	for in, want := range map[string]string{"0.0057470": "0.005747", "007": "7", "0": "0", "0.000": "0",
		"10": "10", "1.50": "1.5", "987654321123456": "987654321123456"} {
		if got, err := contract.CanonicalValue(in); err != nil || got != want {
			t.Errorf("CanonicalValue(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "-1", "+1", "1e5", ".5", "5.", "1.2.3", "NaN", " 1", strings.Repeat("9", contract.MaxValueLen+1)} {
		if _, err := contract.CanonicalValue(bad); err == nil {
			t.Errorf("CanonicalValue(%q) accepted", bad)
		}
	}
	long := strings.Repeat("9", contract.MaxValueLen/2) + "." + strings.Repeat("9", contract.MaxValueLen/2-1)
	big := contract.Point{T: 1 << 50, V: long, O: long, H: long, L: long, N: 1 << 50, F: 1 << 50, Z: 1 << 50, Sim: true, BF: true}
	if b, _ := json.Marshal(big); len(b) > store.MaxPointBytes {
		t.Errorf("the largest point is %d bytes, above MaxPointBytes %d", len(b), store.MaxPointBytes)
	}
	vals := []string{"0", "0.00001", "0.0001", "0.5", "0.51", "1", "2", "9.99", "10", "100.1"}
	for i, a := range vals {
		for j, b := range vals {
			want := 0
			if i < j {
				want = -1
			} else if i > j {
				want = 1
			}
			if got := contract.CompareValues(a, b); got != want {
				t.Errorf("CompareValues(%s, %s) = %d, want %d", a, b, got, want)
			}
		}
	}
}

func redisZ(score int64, member string) redis.Z {
	return redis.Z{Score: float64(score), Member: member}
}
