package dexsim

// The token's price over time, which GeckoTerminal's OHLCV endpoint serves
// and demo mode's seeded past reads (PriceAt): before the market was set,
// a seeded model (smooth cycles and a little noise, the same for the same
// mint and seed); since, the price as set and every Reprice, as logged.

import (
	"hash/fnv"
	"math"
	"math/big"
	"net/http"
	"sort"
	"strconv"
	"time"

	"github.com/tokendata/tokendata/shared/simulator/fault"
)

// priceLog is the price history of one mint.
type priceLog struct {
	seed uint64
	// anchor is when the market was set; anchorPrice its price then.
	anchor      time.Time
	anchorPrice float64
	// live are the reprices since the anchor, in time order.
	live []livePrice
	// volume24h is the 24 h volume when the market was set: the scale of
	// a candle's volume.
	volume24h float64
}

// maxLivePrices bounds a log: 100,000 reprices are 17 days of demo mode's
// one every 15 s.
const maxLivePrices = 100_000

type livePrice struct {
	at    time.Time
	price float64
}

// anchorLocked starts the price log of mint at now, from its market's
// selected price (none: no history). The caller holds s.mu.
func (s *Server) anchorLocked(mint string, seed uint64) {
	m, ok := s.markets[mint]
	if !ok {
		delete(s.history, mint)
		return
	}
	t := m.Truth()
	if !t.HasSelected {
		delete(s.history, mint)
		return
	}
	p, _ := t.PriceUSD.Float64()
	s.history[mint] = &priceLog{seed: seed, anchor: s.now(), anchorPrice: p, volume24h: t.Totals.Volume.H24}
}

// logPriceLocked records the price of mint after a change. The caller
// holds s.mu.
func (s *Server) logPriceLocked(mint string) {
	h, ok := s.history[mint]
	m, okM := s.markets[mint]
	if !ok || !okM {
		return
	}
	if t := m.Truth(); t.HasSelected {
		p, _ := t.PriceUSD.Float64()
		h.live = append(h.live, livePrice{at: s.now(), price: p})
		if len(h.live) > maxLivePrices {
			// Forget the oldest tenth: the model's past now ends at the
			// last price forgotten.
			cut := maxLivePrices / 10
			h.anchor, h.anchorPrice = h.live[cut-1].at, h.live[cut-1].price
			h.live = append(h.live[:0:0], h.live[cut:]...)
		}
	}
}

// PriceAt is the USD price of mint's token at t in plain decimal notation
// with four significant digits, as the price history has it; false when
// the mint has no priced market, or t is in the future.
func (s *Server) PriceAt(mint string, t time.Time) (string, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	h, ok := s.history[mint]
	if !ok || t.After(s.now()) {
		return "", false
	}
	return priceText(h.at(t)), true
}

// at is the price at t.
func (h *priceLog) at(t time.Time) float64 {
	if !t.Before(h.anchor) {
		i := sort.Search(len(h.live), func(i int) bool { return h.live[i].at.After(t) })
		if i > 0 {
			return h.live[i-1].price
		}
		return h.anchorPrice
	}
	return h.anchorPrice * math.Exp(h.wave(t)-h.wave(h.anchor))
}

// wave is the model's log-price at t: cycles of about nine days, two days
// and eight hours, and noise per minute, all phased by the seed.
func (h *priceLog) wave(t time.Time) float64 {
	m := float64(t.Unix()) / 60
	ph := func(i uint64) float64 { return float64(mix(h.seed, i)%6283) / 1000 }
	return 0.25*math.Sin(2*math.Pi*m/(60*24*9.3)+ph(1)) +
		0.12*math.Sin(2*math.Pi*m/(60*24*2.1)+ph(2)) +
		0.05*math.Sin(2*math.Pi*m/(60*7.7)+ph(3)) +
		0.01*noise(h.seed, uint64(t.Unix()/60))
}

// noise is a value in [-1, 1] fixed by seed and i.
func noise(seed, i uint64) float64 { return float64(mix(seed, i)%2001)/1000 - 1 }

func mix(seed, i uint64) uint64 {
	f := fnv.New64a()
	var b [16]byte
	for k := range 8 {
		b[k], b[8+k] = byte(seed>>(8*k)), byte(i>>(8*k))
	}
	_, _ = f.Write(b[:])
	return f.Sum64()
}

// priceText is p with four significant digits, in plain notation.
func priceText(p float64) string {
	if p <= 0 || math.IsNaN(p) || math.IsInf(p, 0) {
		return "0"
	}
	return sigText(new(big.Rat).SetFloat64(p), 4)
}

// candle is one OHLCV interval.
type candle struct {
	start          time.Time
	o, h, l, c, vo float64
}

// candle computes the interval [start, start+d) up to now: the price each
// minute and at each reprice within it.
func (h *priceLog) candle(start time.Time, d time.Duration, now time.Time) candle {
	end := start.Add(d)
	if end.After(now) {
		end = now
	}
	first := h.at(start)
	c := candle{start: start, o: first, h: first, l: first, c: first}
	visit := func(p float64) {
		c.h, c.l, c.c = max(c.h, p), min(c.l, p), p
	}
	step := max(time.Minute, d/288) // a day is read every 5 minutes
	for t := start.Add(step); t.Before(end); t = t.Add(step) {
		visit(h.at(t))
	}
	for _, lp := range h.live {
		if !lp.at.Before(start) && lp.at.Before(end) {
			visit(lp.price)
		}
	}
	visit(h.at(end.Add(-time.Millisecond)))
	// Volume: the 24 h volume spread over the interval, moved by the noise.
	perMinute := h.volume24h / 1440
	c.vo = math.Round(perMinute*end.Sub(start).Minutes()*(1+0.5*noise(h.seed^0xabc, uint64(start.Unix())))*100) / 100
	return c
}

// OHLCV limits of GeckoTerminal's endpoint.
const (
	ohlcvDefaultLimit = 100
	ohlcvMaxLimit     = 1000
)

type gtOHLCVDoc struct {
	Data gtOHLCVData `json:"data"`
	Meta gtOHLCVMeta `json:"meta"`
}

type gtOHLCVData struct {
	ID         string       `json:"id"`
	Type       string       `json:"type"`
	Attributes gtOHLCVAttrs `json:"attributes"`
}

type gtOHLCVAttrs struct {
	OHLCVList [][6]jsonNumber `json:"ohlcv_list"`
}

type gtOHLCVMeta struct {
	Base  gtOHLCVToken `json:"base"`
	Quote gtOHLCVToken `json:"quote"`
}

type gtOHLCVToken struct {
	Address         string  `json:"address"`
	Name            string  `json:"name"`
	Symbol          string  `json:"symbol"`
	CoingeckoCoinID *string `json:"coingecko_coin_id"`
}

// jsonNumber is a number written as its decimal text.
type jsonNumber string

func (n jsonNumber) MarshalJSON() ([]byte, error) { return []byte(n), nil }

func gtBadRequest(w http.ResponseWriter, title string) {
	writeBody(w, http.StatusBadRequest, mustJSON(gtErrors{Errors: []gtError{{Status: "400", Title: title}}}))
}

// GET /api/v2/networks/{network}/pools/{pool}/ohlcv/{timeframe}: the
// pool's candles, newest first, as GeckoTerminal's JSON:API document:
// data.attributes.ohlcv_list of [timestamp, open, high, low, close,
// volume] (timestamp in Unix seconds, the start of the interval; prices in
// USD, volume in USD). Query: aggregate (day: 1; hour: 1, 4, 12; minute:
// 1, 5, 15), before_timestamp (Unix seconds: candles that start before
// it; default now), limit (default 100, at most 1000), currency (usd
// only: the simulator models no price in the other token), token (base,
// quote or an address: it must name the market's own token, the one
// whose price the simulator models). No candle starts before the pool's
// creation. 404 for an unknown network or pool.
func (s *Server) geckoOHLCV(w http.ResponseWriter, r *http.Request) {
	if f, ok := fault.FromContext(r.Context()); ok && f.Kind == fault.GeckoNotFound {
		writeBody(w, http.StatusNotFound, errGeckoNotFound)
		return
	}
	q := r.URL.Query()
	step, bad := ohlcvStep(r.PathValue("timeframe"), q.Get("aggregate"))
	if bad != "" {
		gtBadRequest(w, bad)
		return
	}
	limit := ohlcvDefaultLimit
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > ohlcvMaxLimit {
			gtBadRequest(w, "Invalid limit")
			return
		}
		limit = n
	}
	now := s.now()
	before := now
	if v := q.Get("before_timestamp"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			gtBadRequest(w, "Invalid before_timestamp")
			return
		}
		before = time.Unix(n, 0)
	}
	if c := q.Get("currency"); c != "" && c != "usd" {
		gtBadRequest(w, "The simulator serves USD prices only")
		return
	}
	network, pool := r.PathValue("network"), r.PathValue("pool")

	s.mu.RLock()
	defer s.mu.RUnlock()
	m, pair := s.poolLocked(pool)
	h, ok := s.history[mintOf(m)]
	if m == nil || network != ChainSolana || !ok {
		writeBody(w, http.StatusNotFound, errGeckoNotFound)
		return
	}
	base, quote := pair.BaseQuote(m.Token)
	if !asksOwnToken(q.Get("token"), base, quote, m.Token) {
		gtBadRequest(w, "The simulator models the price of its market's token only: ask token="+m.Token.Address)
		return
	}
	if before.After(now) {
		before = now
	}
	list := h.ohlcvList(pair, step, before, limit, now)
	doc := gtOHLCVDoc{
		Data: gtOHLCVData{ID: "ohlcv-" + pool, Type: "ohlcv_request_response", Attributes: gtOHLCVAttrs{OHLCVList: list}},
		Meta: gtOHLCVMeta{
			Base:  gtOHLCVToken{Address: base.Address, Name: base.Name, Symbol: base.Symbol},
			Quote: gtOHLCVToken{Address: quote.Address, Name: quote.Name, Symbol: quote.Symbol},
		},
	}
	writeBody(w, http.StatusOK, mustJSON(doc))
}

// ohlcvStep is the candles' interval of a timeframe (day, hour, minute)
// and its aggregate ("": 1), or the title of the bad request ("" when
// they are valid).
func ohlcvStep(timeframe, aggregate string) (step time.Duration, bad string) {
	agg := 1
	if aggregate != "" {
		n, err := strconv.Atoi(aggregate)
		if err != nil {
			return 0, "Invalid aggregate"
		}
		agg = n
	}
	switch {
	case timeframe == "day" && agg == 1:
		return 24 * time.Hour, ""
	case timeframe == "hour" && (agg == 1 || agg == 4 || agg == 12):
		return time.Duration(agg) * time.Hour, ""
	case timeframe == "minute" && (agg == 1 || agg == 5 || agg == 15):
		return time.Duration(agg) * time.Minute, ""
	default:
		return 0, "Invalid timeframe or aggregate"
	}
}

// poolLocked is the solana pair of address pool and its market (nil, nil
// when none has it; the last one when several do). s.mu is held.
func (s *Server) poolLocked(pool string) (m *Market, pair *Pair) {
	for _, mk := range s.markets {
		for i := range mk.Pairs {
			if p := &mk.Pairs[i]; p.Address == pool && p.ChainID() == ChainSolana {
				m, pair = mk, p
			}
		}
	}
	return m, pair
}

// asksOwnToken reports whether the OHLCV query's token (base, quote or
// an address; "": base) names the market's own token of a pair whose
// base and quote are given.
func asksOwnToken(tok string, base, quote, own Token) bool {
	switch tok {
	case "", "base":
		return base.Address == own.Address
	case "quote":
		return quote.Address == own.Address
	default:
		return tok == own.Address
	}
}

// ohlcvList is pair's candles of step, newest first, that start before
// before (at most limit, none before the pair's creation), as
// GeckoTerminal's ohlcv_list.
func (h *priceLog) ohlcvList(pair *Pair, step time.Duration, before time.Time, limit int, now time.Time) [][6]jsonNumber {
	list := [][6]jsonNumber{}
	sec := int64(step / time.Second)
	start := time.Unix(before.Unix()/sec*sec, 0)
	if !start.Before(before) {
		start = start.Add(-step)
	}
	for ; len(list) < limit && !start.Before(pair.CreatedAt.Truncate(step)); start = start.Add(-step) {
		c := h.candle(start, step, now)
		list = append(list, [6]jsonNumber{jsonNumber(strconv.FormatInt(c.start.Unix(), 10)),
			jsonNumber(priceText(c.o)), jsonNumber(priceText(c.h)), jsonNumber(priceText(c.l)), jsonNumber(priceText(c.c)),
			jsonNumber(strconv.FormatFloat(c.vo, 'f', -1, 64))})
	}
	return list
}

func mintOf(m *Market) string {
	if m == nil {
		return ""
	}
	return m.Token.Address
}
