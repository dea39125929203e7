package dexsim

import (
	"encoding/json"
	"fmt"
	"math/big"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"
)

// fakeClock is a settable server clock.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func clockedServer(at time.Time) (*Server, *fakeClock) {
	s := New()
	c := &fakeClock{t: at}
	s.now = c.now
	return s, c
}

func ohlcvPath(pool, timeframe, query string) string {
	return GeckoTerminalPrefix + "/networks/solana/pools/" + pool + "/ohlcv/" + timeframe + "?" + query
}

type candleRow struct {
	ts         int64
	o, h, l, c *big.Rat
	vol        float64
}

func candles(t *testing.T, body []byte) []candleRow {
	t.Helper()
	var doc struct {
		Data struct {
			Attributes struct {
				OHLCVList [][]json.Number `json:"ohlcv_list"`
			} `json:"attributes"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatalf("%v\n%s", err, body)
	}
	var out []candleRow
	for _, row := range doc.Data.Attributes.OHLCVList {
		if len(row) != 6 {
			t.Fatalf("row of %d elements", len(row))
		}
		ts, err := row[0].Int64()
		if err != nil {
			t.Fatal(err)
		}
		vol, _ := row[5].Float64()
		out = append(out, candleRow{ts: ts, o: rat(t, row[1].String()), h: rat(t, row[2].String()),
			l: rat(t, row[3].String()), c: rat(t, row[4].String()), vol: vol})
	}
	return out
}

// TestGeckoOHLCV: GeckoTerminal's documented shape; candles newest first,
// aligned on their interval, consistent (low ≤ open, close ≤ high); the
// newest close is the price the token pools answer now, and every open is
// PriceAt of the candle's start.
func TestGeckoOHLCV(t *testing.T) {
	now := time.Date(2026, 11, 20, 10, 17, 42, 0, time.UTC)
	s, _ := clockedServer(now)
	s.LoadScenario(testMint, 7)
	truth := s.Truth(testMint)
	pool := truth.Selected.Address
	for _, tc := range []struct {
		timeframe, query string
		step             int64
		n                int
	}{
		{"hour", "token=" + testMint + "&limit=48", 3600, 48},
		{"minute", "aggregate=5&limit=1000", 300, 1000},
		{"day", "", 86400, 100},
	} {
		status, body := serve(s, ohlcvPath(pool, tc.timeframe, tc.query))
		if status != http.StatusOK {
			t.Fatalf("%s: status %d: %s", tc.timeframe, status, body)
		}
		checkShape(t, "", decode(t, body), fixture(t, "geckoterminal_pool_ohlcv.json"),
			shapeRules{nullable: map[string]bool{".meta.base.coingecko_coin_id": true, ".meta.quote.coingecko_coin_id": true}})
		rows := candles(t, body)
		if len(rows) != tc.n {
			t.Fatalf("%s: %d candles, want %d", tc.timeframe, len(rows), tc.n)
		}
		if rows[0].ts != now.Unix()/tc.step*tc.step {
			t.Errorf("%s: newest candle starts at %d, want the interval holding now", tc.timeframe, rows[0].ts)
		}
		for i, r := range rows {
			if i > 0 && r.ts != rows[i-1].ts-tc.step {
				t.Fatalf("%s: candle %d at %d after %d", tc.timeframe, i, r.ts, rows[i-1].ts)
			}
			if r.l.Cmp(r.o) > 0 || r.l.Cmp(r.c) > 0 || r.h.Cmp(r.o) < 0 || r.h.Cmp(r.c) < 0 || r.vol <= 0 {
				t.Fatalf("%s: inconsistent candle %+v", tc.timeframe, r)
			}
			if want, _ := s.PriceAt(testMint, time.Unix(r.ts, 0)); r.o.Cmp(rat(t, want)) != 0 {
				t.Fatalf("%s: open %s at %d, PriceAt says %s", tc.timeframe, r.o.FloatString(10), r.ts, want)
			}
		}
		if rows[0].c.Cmp(truth.PriceUSD) != 0 {
			t.Errorf("%s: newest close %s, the current price is %s", tc.timeframe, rows[0].c.FloatString(10), truth.PriceUSDText)
		}
	}
	// The past moves, but not wildly: within a factor of 3 over 41 days.
	_, body := serve(s, ohlcvPath(pool, "hour", "limit=1000"))
	for _, r := range candles(t, body) {
		f, _ := r.c.Float64()
		p, _ := truth.PriceUSD.Float64()
		if f > 3*p || f < p/3 {
			t.Fatalf("candle %d closes at %g, the price now is %g", r.ts, f, p)
		}
	}
}

// TestGeckoOHLCVFollowsReprices: after the market was set, the candles
// are the prices it had: a reprice shows in the candle that holds it.
func TestGeckoOHLCVFollowsReprices(t *testing.T) {
	start := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	s, clock := clockedServer(start)
	s.LoadScenario(testMint, 3)
	truth := s.Truth(testMint)
	before := truth.PriceUSDText
	clock.add(2*time.Minute + 10*time.Second)
	high := sigText(new(big.Rat).Mul(truth.PriceUSD, big.NewRat(3, 2)), 4)
	if !s.Reprice(testMint, high) {
		t.Fatal("reprice refused")
	}
	clock.add(20 * time.Second)
	low := sigText(new(big.Rat).Mul(truth.PriceUSD, big.NewRat(1, 2)), 4)
	s.Reprice(testMint, low)
	clock.add(3 * time.Minute)
	_, body := serve(s, ohlcvPath(truth.Selected.Address, "minute", "limit=6"))
	rows := candles(t, body)
	want := []struct{ o, h, l, c string }{
		{low, low, low, low}, {low, low, low, low}, {low, low, low, low},
		{before, high, low, low}, // 10:02: both reprices
		{before, before, before, before}, {before, before, before, before},
	}
	for i, w := range want {
		r := rows[i]
		got := fmt.Sprintf("%s %s %s %s", ratText(r.o), ratText(r.h), ratText(r.l), ratText(r.c))
		if exp := fmt.Sprintf("%s %s %s %s", w.o, w.h, w.l, w.c); got != exp {
			t.Errorf("candle %s: %s, want %s", time.Unix(r.ts, 0).UTC().Format("15:04"), got, exp)
		}
	}
	if p, _ := s.PriceAt(testMint, start.Add(time.Minute)); p != before {
		t.Errorf("PriceAt before the reprice = %s, want %s", p, before)
	}
	if _, ok := s.PriceAt(testMint, start.Add(time.Hour)); ok {
		t.Error("PriceAt in the future answered")
	}
}

// TestGeckoOHLCVSameSeedSamePast: the modelled past depends on the mint,
// the seed and the time only.
func TestGeckoOHLCVSameSeedSamePast(t *testing.T) {
	at := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	a, _ := clockedServer(at)
	b, _ := clockedServer(at)
	c, _ := clockedServer(at)
	a.LoadScenario(testMint, 9)
	b.LoadScenario(testMint, 9)
	c.LoadScenario(testMint, 10)
	pool := a.Truth(testMint).Selected.Address
	q := "before_timestamp=" + strconv.FormatInt(at.Add(-24*time.Hour).Unix(), 10)
	_, ba := serve(a, ohlcvPath(pool, "hour", q))
	_, bb := serve(b, ohlcvPath(pool, "hour", q))
	if string(ba) != string(bb) {
		t.Error("two servers of one seed serve different pasts")
	}
	if len(candles(t, ba)) != 100 {
		t.Errorf("%d candles, want the default limit of 100", len(candles(t, ba)))
	}
	// Another seed shapes another past (relative to its price now).
	ratio := func(s *Server, d time.Duration) float64 {
		p, _ := s.PriceAt(testMint, at.Add(-d))
		f, _ := rat(t, p).Float64()
		n, _ := s.Truth(testMint).PriceUSD.Float64()
		return f / n
	}
	same := 0
	for d := time.Hour; d < 30*24*time.Hour; d += 7 * time.Hour {
		if fmt.Sprintf("%.3f", ratio(a, d)) == fmt.Sprintf("%.3f", ratio(c, d)) {
			same++
		}
	}
	if same > 10 {
		t.Errorf("seeds 9 and 10 give the same past at %d of 103 times", same)
	}
}

func TestGeckoOHLCVRefusals(t *testing.T) {
	s, _ := clockedServer(time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC))
	m := s.LoadScenario(testMint, 7)
	truth := s.Truth(testMint)
	pool := truth.Selected.Address
	var quotePool string
	for _, p := range m.Pairs {
		if p.Side == Quote {
			quotePool = p.Address
		}
	}
	for _, tc := range []struct {
		path   string
		status int
	}{
		{ohlcvPath(pool, "week", ""), 400},
		{ohlcvPath(pool, "hour", "aggregate=2"), 400},
		{ohlcvPath(pool, "minute", "aggregate=x"), 400},
		{ohlcvPath(pool, "hour", "limit=1001"), 400},
		{ohlcvPath(pool, "hour", "limit=0"), 400},
		{ohlcvPath(pool, "hour", "currency=token"), 400},
		{ohlcvPath(pool, "hour", "token=quote"), 400},
		{ohlcvPath(pool, "hour", "before_timestamp=soon"), 400},
		{ohlcvPath(quotePool, "hour", "token=base"), 400},
		{ohlcvPath(quotePool, "hour", "token=quote"), 200},
		{ohlcvPath(quotePool, "hour", "token="+testMint), 200},
		{ohlcvPath("UnknownPool1111111111111111111111111111111", "hour", ""), 404},
		{GeckoTerminalPrefix + "/networks/eth/pools/" + pool + "/ohlcv/hour", 404},
	} {
		if status, body := serve(s, tc.path); status != tc.status {
			t.Errorf("%s: %d, want %d: %s", tc.path, status, tc.status, body)
		}
	}
	// No candle before the day of the pool's creation.
	var created time.Time
	for _, p := range m.Pairs {
		if p.Address == pool {
			created = p.CreatedAt
		}
	}
	_, body := serve(s, ohlcvPath(pool, "day", "before_timestamp="+strconv.FormatInt(created.Truncate(24*time.Hour).Unix(), 10)))
	if rows := candles(t, body); len(rows) != 0 {
		t.Errorf("%d candles before the pool existed", len(rows))
	}
}
