package edge

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/shopspring/decimal"

	"github.com/tokendata/tokendata/shared/amount"
	"github.com/tokendata/tokendata/shared/config"
	"github.com/tokendata/tokendata/shared/contract"
)

// Interface versions of contract section 6.
const (
	APIVersion    = "2.0"
	PortalVersion = 4
)

// Route paths of contract section 4 (and the OpenAPI document).
const (
	PathTotalSupply       = "/api/total-supply"
	PathCirculatingSupply = "/api/circulating-supply"
	PathMaxSupply         = "/api/max-supply"
	PathSupply            = "/api/supply"
	PathCoinGeckoSupply   = "/api/coingecko-supply"
	PathPrice             = "/api/price"
	PathHolders           = "/api/holders"
	PathTokenMetadata     = "/api/token-metadata"
	PathHealth            = "/api/health"
	PathExchanges         = "/api/exchanges"
	PathMarket            = "/api/market"
	PathMarketData        = "/api/market-data"
	PathStatus            = "/api/status"
	PathMarketPairs       = "/api/market-pairs"
	PathOpenAPI           = "/api/openapi.json"
)

// Indexes of the pre-rendered routes in a view.
const (
	rTotalSupply = iota
	rCirculatingSupply
	rMaxSupply
	rSupply
	rCoinGeckoSupply
	rPrice
	rHolders
	rTokenMetadata
	rExchanges
	rMarket
	rMarketData
	rMarketPairs
	rOpenAPI
	numRendered
)

// renderedRoute is a route whose answer is rendered once per change.
type renderedRoute struct {
	path   string
	group  group
	render func(r *renderer) *response
}

var renderedRoutes = [numRendered]renderedRoute{
	rTotalSupply:       {PathTotalSupply, groupSupply, (*renderer).totalSupply},
	rCirculatingSupply: {PathCirculatingSupply, groupSupply, (*renderer).circulatingSupply},
	rMaxSupply:         {PathMaxSupply, groupStatic, (*renderer).maxSupply},
	rSupply:            {PathSupply, groupSupply, (*renderer).supply},
	rCoinGeckoSupply:   {PathCoinGeckoSupply, groupSupply, (*renderer).coinGeckoSupply},
	rPrice:             {PathPrice, groupMarket, (*renderer).price},
	rHolders:           {PathHolders, groupHolders, (*renderer).holders},
	rTokenMetadata:     {PathTokenMetadata, groupStatic, (*renderer).tokenMetadata},
	rExchanges:         {PathExchanges, groupStatic, (*renderer).exchanges},
	rMarket:            {PathMarket, groupMarket, (*renderer).market},
	rMarketData:        {PathMarketData, groupMarket, (*renderer).marketData},
	rMarketPairs:       {PathMarketPairs, groupMarket, (*renderer).marketPairs},
	rOpenAPI:           {PathOpenAPI, groupStatic, (*renderer).openAPI},
}

// view is what the request path reads through one atomic pointer: the
// state it was rendered from and every pre-rendered answer.
type view struct {
	st         *state
	renderedAt time.Time
	routes     [numRendered]*response
	// nextChange is the first moment a domain crosses its stale-after or
	// its TTL, when the view must be rendered again (zero: never).
	nextChange time.Time
}

// renderer renders one view.
type renderer struct {
	s     *Server
	st    *state
	now   time.Time
	route renderedRoute
	next  time.Time
}

func (s *Server) render(st *state, now time.Time) *view {
	v := &view{st: st, renderedAt: now}
	r := &renderer{s: s, st: st, now: now}
	prev := s.view.Load()
	for i, rt := range renderedRoutes {
		r.route = rt
		resp, err := safeRender(r)
		if err != nil {
			s.log.Error("render failed", "route", rt.path, "error", err.Error())
			resp = s.errInternal
		}
		if prev != nil {
			resp.keepLastModifiedMonotonic(prev.routes[i], now)
		}
		v.routes[i] = resp
	}
	v.nextChange = r.next
	return v
}

// safeRender turns a renderer's panic (a bug) into an error, so that one
// bad route never takes down the others.
func safeRender(r *renderer) (resp *response, err error) {
	defer func() {
		if p := recover(); p != nil {
			resp, err = nil, fmt.Errorf("panic: %v", p)
		}
	}()
	return r.route.render(r), nil
}

// ok renders a 200 JSON or text answer of the current route.
func (r *renderer) okJSON(v any, info dataInfo) *response {
	body, err := encodeJSON(v)
	if err != nil {
		r.s.log.Error("encode failed", "route", r.route.path, "error", err.Error())
		return r.s.errInternal
	}
	return newOK(contentJSON, r.s.cacheControl(r.route.group), body, info)
}

func (r *renderer) okText(s string, info dataInfo) *response {
	return newOK(contentText, r.s.cacheControl(r.route.group), []byte(s), info)
}

func (r *renderer) unavailable(d contract.Domain) *response {
	return newError(http.StatusServiceUnavailable, codeDataUnavailable,
		fmt.Sprintf("No %s data is available yet (never collected, or expired); retry later.", d), r.s.cfg.RetryAfter)
}

// fresh returns a domain's updated_at and stale flag, and notes when the
// flag will flip or the document expire.
func (r *renderer) fresh(d contract.Domain) (time.Time, bool) {
	doc := r.st.docs[d]
	at := doc.env.UpdatedAt
	flip := at.Add(r.s.timings[d].StaleAfter)
	stale := r.now.After(flip)
	if !stale {
		r.noteChange(flip.Add(time.Millisecond))
	}
	if !doc.expires.IsZero() {
		r.noteChange(doc.expires)
	}
	return at, stale
}

func (r *renderer) noteChange(t time.Time) {
	if t.After(r.now) && (r.next.IsZero() || t.Before(r.next)) {
		r.next = t
	}
}

// info combines the freshness of the domains present among ds.
func (r *renderer) info(ds ...contract.Domain) dataInfo {
	var in dataInfo
	for _, d := range ds {
		if r.st.docs[d] == nil {
			continue
		}
		at, stale := r.fresh(d)
		if !in.present || at.Before(in.updatedAt) {
			in.updatedAt = at
		}
		if !in.present || at.After(in.newest) {
			in.newest = at
		}
		in.present = true
		in.stale = in.stale || stale
	}
	return in
}

// missing names the domains among ds that are absent.
func (r *renderer) missing(ds ...contract.Domain) []string {
	out := []string{}
	for _, d := range ds {
		if r.st.docs[d] == nil {
			out = append(out, string(d))
		}
	}
	return out
}

func timePtr(in dataInfo) *string {
	if !in.present {
		return nil
	}
	s := formatTime(in.updatedAt)
	return &s
}

// ---- numbers ----

// num writes a decimal as a plain-notation JSON number.
func num(d decimal.Decimal) json.Number { return json.Number(d.String()) }

func numPtr(d *decimal.Decimal) *json.Number {
	if d == nil {
		return nil
	}
	n := num(*d)
	return &n
}

// tokenAmount is an exact token amount and its raw twin.
type tokenAmount struct {
	value json.Number
	raw   string
}

func formatAmount(raw string, decimals uint8) (tokenAmount, error) {
	s, err := amount.Format(raw, decimals)
	if err != nil {
		return tokenAmount{}, err
	}
	norm, _ := amount.ToRaw(s, decimals) // normalized raw (no leading zeros)
	return tokenAmount{value: json.Number(s), raw: norm}, nil
}

// maxSupply is the disclosed maximum supply from the token file, in whole
// tokens.
func (s *Server) maxSupplyWhole() string {
	raw, err := amount.ToRaw(s.token.MaxSupply, 0)
	if err != nil {
		return config.DefaultMaxSupply
	}
	return raw
}

// decimals is the ledger's decimals when the supply document is present,
// else the token file's, else unknown.
func (r *renderer) decimals() *uint8 {
	if sp := r.st.supply(); sp != nil {
		d := sp.Decimals
		return &d
	}
	return r.s.token.Decimals
}

// supplies are the three supplies of the supply document.
type supplies struct {
	decimals                uint8
	total, circulating, max tokenAmount
}

func (r *renderer) supplies() (*supplies, error) {
	sp := r.st.supply()
	if sp == nil {
		return nil, nil
	}
	total, err := formatAmount(sp.TotalRaw, sp.Decimals)
	if err != nil {
		return nil, fmt.Errorf("total_raw: %w", err)
	}
	circ, err := formatAmount(sp.CirculatingRaw, sp.Decimals)
	if err != nil {
		return nil, fmt.Errorf("circulating_raw: %w", err)
	}
	maxRaw, err := r.s.token.MaxSupplyRaw(sp.Decimals)
	if err != nil {
		return nil, fmt.Errorf("token max_supply: %w", err)
	}
	mx, err := formatAmount(maxRaw, sp.Decimals)
	if err != nil {
		return nil, fmt.Errorf("max supply: %w", err)
	}
	return &supplies{decimals: sp.Decimals, total: total, circulating: circ, max: mx}, nil
}

// ---- plain text ----

func (r *renderer) totalSupply() *response {
	return r.supplyText(func(sp *supplies) tokenAmount { return sp.total })
}

func (r *renderer) circulatingSupply() *response {
	return r.supplyText(func(sp *supplies) tokenAmount { return sp.circulating })
}

// supplyText renders one supply figure as the plain-text body.
func (r *renderer) supplyText(figure func(*supplies) tokenAmount) *response {
	if r.st.supply() == nil {
		return r.unavailable(contract.DomainSupply)
	}
	sp, err := r.supplies()
	if err != nil {
		return r.internal(err)
	}
	return r.okText(string(figure(sp).value), r.info(contract.DomainSupply))
}

func (r *renderer) maxSupply() *response {
	return r.okText(r.s.maxSupplyWhole(), dataInfo{})
}

func (r *renderer) internal(err error) *response {
	r.s.log.Error("render failed", "route", r.route.path, "error", err.Error())
	return r.s.errInternal
}

// ---- /api/supply, /api/coingecko-supply ----

type supplyBody struct {
	Mint                 string               `json:"mint"`
	Decimals             uint8                `json:"decimals"`
	TotalSupply          json.Number          `json:"total_supply"`
	TotalSupplyRaw       string               `json:"total_supply_raw"`
	CirculatingSupply    json.Number          `json:"circulating_supply"`
	CirculatingSupplyRaw string               `json:"circulating_supply_raw"`
	MaxSupply            json.Number          `json:"max_supply"`
	MaxSupplyRaw         string               `json:"max_supply_raw"`
	TokenProgram         string               `json:"token_program"`
	TokenProgramID       string               `json:"token_program_id"`
	MintAuthority        *string              `json:"mint_authority"`
	FreezeAuthority      *string              `json:"freeze_authority"`
	Slot                 uint64               `json:"slot"`
	Commitment           string               `json:"commitment"`
	Methodology          contract.Methodology `json:"methodology"`
	Warnings             []contract.Warning   `json:"warnings"`
	Source               contract.Source      `json:"source"`
	UpdatedAt            string               `json:"updated_at"`
	Stale                bool                 `json:"stale"`
}

func (r *renderer) supply() *response {
	doc := r.st.supply()
	if doc == nil {
		return r.unavailable(contract.DomainSupply)
	}
	sp, err := r.supplies()
	if err != nil {
		return r.internal(err)
	}
	in := r.info(contract.DomainSupply)
	m := doc.Methodology
	if m.Rules == nil {
		m.Rules = []string{}
	}
	return r.okJSON(supplyBody{
		Mint: r.s.token.Mint, Decimals: sp.decimals,
		TotalSupply: sp.total.value, TotalSupplyRaw: sp.total.raw,
		CirculatingSupply: sp.circulating.value, CirculatingSupplyRaw: sp.circulating.raw,
		MaxSupply: sp.max.value, MaxSupplyRaw: sp.max.raw,
		TokenProgram: doc.TokenProgram, TokenProgramID: doc.TokenProgramID,
		MintAuthority: doc.MintAuthority, FreezeAuthority: doc.FreezeAuthority,
		Slot: doc.Slot, Commitment: doc.Commitment, Methodology: m,
		Warnings: warnings(doc.Warnings), Source: r.st.docs[contract.DomainSupply].env.Source,
		UpdatedAt: formatTime(in.updatedAt), Stale: in.stale,
	}, in)
}

func warnings(w []contract.Warning) []contract.Warning {
	if w == nil {
		return []contract.Warning{}
	}
	return w
}

type coinGeckoBody struct {
	TotalSupply          json.Number `json:"total_supply"`
	TotalSupplyRaw       string      `json:"total_supply_raw"`
	CirculatingSupply    json.Number `json:"circulating_supply"`
	CirculatingSupplyRaw string      `json:"circulating_supply_raw"`
	MaxSupply            json.Number `json:"max_supply"`
	MaxSupplyRaw         string      `json:"max_supply_raw"`
	Decimals             uint8       `json:"decimals"`
	Mint                 string      `json:"mint"`
	UpdatedAt            string      `json:"updated_at"`
	Stale                bool        `json:"stale"`
}

func (r *renderer) coinGeckoSupply() *response {
	if r.st.supply() == nil {
		return r.unavailable(contract.DomainSupply)
	}
	sp, err := r.supplies()
	if err != nil {
		return r.internal(err)
	}
	in := r.info(contract.DomainSupply)
	return r.okJSON(coinGeckoBody{
		TotalSupply: sp.total.value, TotalSupplyRaw: sp.total.raw,
		CirculatingSupply: sp.circulating.value, CirculatingSupplyRaw: sp.circulating.raw,
		MaxSupply: sp.max.value, MaxSupplyRaw: sp.max.raw,
		Decimals: sp.decimals, Mint: r.s.token.Mint,
		UpdatedAt: formatTime(in.updatedAt), Stale: in.stale,
	}, in)
}

// ---- market ----

// pairBody is a pair as the price and market endpoints show it.
type pairBody struct {
	Address      string            `json:"address"`
	Dex          string            `json:"dex"`
	URL          string            `json:"url"`
	Side         string            `json:"side"`
	Base         contract.TokenRef `json:"base"`
	Quote        contract.TokenRef `json:"quote"`
	LiquidityUSD *json.Number      `json:"liquidity_usd"`
	Official     bool              `json:"official"`
}

func newPairBody(p *contract.Pair) *pairBody {
	if p == nil {
		return nil
	}
	return &pairBody{Address: p.Address, Dex: p.DexID, URL: p.URL, Side: p.Side, Base: p.Base, Quote: p.Quote,
		LiquidityUSD: numPtr(p.LiquidityUSD), Official: p.Official}
}

type priceBody struct {
	Mint        string          `json:"mint"`
	PriceUSD    json.Number     `json:"price_usd"`
	PriceQuote  *json.Number    `json:"price_quote"`
	QuoteSymbol string          `json:"quote_symbol"`
	Pair        *pairBody       `json:"pair"`
	Source      contract.Source `json:"source"`
	UpdatedAt   string          `json:"updated_at"`
	Stale       bool            `json:"stale"`
}

// noMarket answers /api/price when the aggregator has no usable pair.
func (r *renderer) noMarket(m *contract.Market) *response {
	msg := "The market aggregator lists no trading pair for this token (not indexed)."
	if m.Status == contract.MarketNoUsablePair {
		msg = "The market aggregator lists pairs for this token, but none has a usable USD price; see /api/market-pairs."
	}
	return newError(http.StatusServiceUnavailable, codeNoMarket, msg, r.s.cfg.RetryAfter)
}

func (r *renderer) price() *response {
	m := r.st.market()
	if m == nil {
		return r.unavailable(contract.DomainMarket)
	}
	if m.Status != contract.MarketOK {
		r.info(contract.DomainMarket) // still re-render when it expires
		return r.noMarket(m)
	}
	in := r.info(contract.DomainMarket)
	return r.okJSON(priceBody{
		Mint: r.s.token.Mint, PriceUSD: num(*m.PriceUSD), PriceQuote: numPtr(m.PriceQuote),
		QuoteSymbol: m.QuoteSymbol, Pair: newPairBody(m.Selected),
		Source:    r.st.docs[contract.DomainMarket].env.Source,
		UpdatedAt: formatTime(in.updatedAt), Stale: in.stale,
	}, in)
}

// valuation computes market cap (price × circulating supply) and FDV
// (price × maximum supply) exactly, in decimal arithmetic.
func (r *renderer) valuation(m *contract.Market, sp *supplies) (mcap, fdv *json.Number) {
	if m == nil || m.PriceUSD == nil {
		return nil, nil
	}
	if sp != nil {
		if c, err := decimal.NewFromString(string(sp.circulating.value)); err == nil {
			n := num(m.PriceUSD.Mul(c))
			mcap = &n
		}
	}
	if mx, err := decimal.NewFromString(r.s.maxSupplyWhole()); err == nil {
		n := num(m.PriceUSD.Mul(mx))
		fdv = &n
	}
	return mcap, fdv
}

// marketDomains are the domains of the composite market bodies.
var marketDomains = []contract.Domain{contract.DomainMarket, contract.DomainSupply, contract.DomainHolders}

type marketBody struct {
	Mint                  string       `json:"mint"`
	Name                  string       `json:"name"`
	Symbol                string       `json:"symbol"`
	MarketStatus          *string      `json:"market_status"`
	PriceUSD              *json.Number `json:"price_usd"`
	PriceChange24hPercent *json.Number `json:"price_change_24h_percent"`
	LiquidityUSD          *json.Number `json:"liquidity_usd"`
	Volume24hUSD          *json.Number `json:"volume_24h_usd"`
	Txns24h               *int64       `json:"txns_24h"`
	Buys24h               *int64       `json:"buys_24h"`
	Sells24h              *int64       `json:"sells_24h"`
	MarketCapUSD          *json.Number `json:"market_cap_usd"`
	FDVUSD                *json.Number `json:"fdv_usd"`
	Holders               *uint64      `json:"holders"`
	Decimals              *uint8       `json:"decimals"`
	TotalSupply           *json.Number `json:"total_supply"`
	TotalSupplyRaw        *string      `json:"total_supply_raw"`
	CirculatingSupply     *json.Number `json:"circulating_supply"`
	CirculatingSupplyRaw  *string      `json:"circulating_supply_raw"`
	MaxSupply             json.Number  `json:"max_supply"`
	MaxSupplyRaw          *string      `json:"max_supply_raw"`
	PairAddress           *string      `json:"pair_address"`
	PairDex               *string      `json:"pair_dex"`
	PairName              *string      `json:"pair_name"`
	PairURL               *string      `json:"pair_url"`
	PortalVersion         int          `json:"portal_version"`
	UpdatedAt             *string      `json:"updated_at"`
	Stale                 bool         `json:"stale"`
	Missing               []string     `json:"missing"`
}

func ptr[T any](v T) *T { return &v }

// identity is the token's name and symbol: the token file's, else the
// ledger's metadata.
func (r *renderer) identity() (name, symbol string) {
	name, symbol = r.s.token.Name, r.s.token.Symbol
	if md := r.st.metadata(); md != nil && md.OnChain != nil {
		if name == "" {
			name = md.OnChain.Name
		}
		if symbol == "" {
			symbol = md.OnChain.Symbol
		}
	}
	return name, symbol
}

// maxRaw is the maximum supply in base units when the decimals are known.
func (r *renderer) maxRaw() *string {
	d := r.decimals()
	if d == nil {
		return nil
	}
	raw, err := r.s.token.MaxSupplyRaw(*d)
	if err != nil {
		return nil
	}
	return &raw
}

func (r *renderer) composite() (in dataInfo, missing []string, ok bool) {
	missing = r.missing(marketDomains...)
	return r.info(marketDomains...), missing, len(missing) < len(marketDomains)
}

func (r *renderer) market() *response {
	in, missing, ok := r.composite()
	if !ok {
		return r.unavailable(contract.DomainMarket)
	}
	sp, err := r.supplies()
	if err != nil {
		return r.internal(err)
	}
	name, symbol := r.identity()
	b := marketBody{Mint: r.s.token.Mint, Name: name, Symbol: symbol, MaxSupply: json.Number(r.s.maxSupplyWhole()),
		MaxSupplyRaw: r.maxRaw(), Decimals: r.decimals(), PortalVersion: PortalVersion,
		UpdatedAt: timePtr(in), Stale: in.stale, Missing: missing}
	m := r.st.market()
	if m != nil {
		b.MarketStatus = ptr(m.Status)
		b.PriceUSD = numPtr(m.PriceUSD)
		b.PriceChange24hPercent = numPtr(m.PriceChange.H24)
		b.LiquidityUSD = ptr(num(m.LiquidityUSD))
		b.Volume24hUSD = ptr(num(m.VolumeUSD.H24))
		b.Buys24h, b.Sells24h = ptr(m.Txns.H24.Buys), ptr(m.Txns.H24.Sells)
		b.Txns24h = ptr(m.Txns.H24.Buys + m.Txns.H24.Sells)
		if p := m.Selected; p != nil {
			b.PairAddress, b.PairDex, b.PairURL = ptr(p.Address), ptr(p.DexID), ptr(p.URL)
			b.PairName = ptr(p.Base.Symbol + "/" + p.Quote.Symbol)
		}
	}
	b.MarketCapUSD, b.FDVUSD = r.valuation(m, sp)
	if h := r.st.holders(); h != nil {
		b.Holders = ptr(h.Holders)
	}
	if sp != nil {
		b.TotalSupply, b.TotalSupplyRaw = ptr(sp.total.value), ptr(sp.total.raw)
		b.CirculatingSupply, b.CirculatingSupplyRaw = ptr(sp.circulating.value), ptr(sp.circulating.raw)
	}
	return r.okJSON(b, in)
}

type tokenSection struct {
	Mint     string `json:"mint"`
	Name     string `json:"name"`
	Symbol   string `json:"symbol"`
	Decimals *uint8 `json:"decimals"`
}

type priceSection struct {
	USD           json.Number                    `json:"usd"`
	Quote         *json.Number                   `json:"quote"`
	QuoteSymbol   string                         `json:"quote_symbol"`
	ChangePercent contract.Windows[*json.Number] `json:"change_percent"`
}

type liquiditySection struct {
	TotalUSD    json.Number  `json:"total_usd"`
	MainPairUSD *json.Number `json:"main_pair_usd"`
}

type txnsSection struct {
	Buys  int64 `json:"buys"`
	Sells int64 `json:"sells"`
	Total int64 `json:"total"`
}

type valuationSection struct {
	MarketCapUSD *json.Number `json:"market_cap_usd"`
	FDVUSD       *json.Number `json:"fdv_usd"`
}

type holdersSection struct {
	Count           uint64 `json:"count"`
	TokenAccounts   uint64 `json:"token_accounts"`
	NonZeroAccounts uint64 `json:"non_zero_accounts"`
	Method          string `json:"method"`
}

type supplySection struct {
	Decimals       uint8       `json:"decimals"`
	Total          json.Number `json:"total"`
	TotalRaw       string      `json:"total_raw"`
	Circulating    json.Number `json:"circulating"`
	CirculatingRaw string      `json:"circulating_raw"`
	Max            json.Number `json:"max"`
	MaxRaw         string      `json:"max_raw"`
}

type sourceSection struct {
	contract.Source
	UpdatedAt string `json:"updated_at"`
	Stale     bool   `json:"stale"`
}

type sourcesSection struct {
	Market  *sourceSection `json:"market"`
	Supply  *sourceSection `json:"supply"`
	Holders *sourceSection `json:"holders"`
}

type marketDataBody struct {
	APIVersion    string                         `json:"api_version"`
	PortalVersion int                            `json:"portal_version"`
	Token         tokenSection                   `json:"token"`
	MarketStatus  *string                        `json:"market_status"`
	Price         *priceSection                  `json:"price"`
	Liquidity     *liquiditySection              `json:"liquidity"`
	VolumeUSD     *contract.Windows[json.Number] `json:"volume_usd"`
	Transactions  *contract.Windows[txnsSection] `json:"transactions"`
	Valuation     valuationSection               `json:"valuation"`
	Holders       *holdersSection                `json:"holders"`
	Supply        *supplySection                 `json:"supply"`
	MainPair      *pairBody                      `json:"main_pair"`
	PairCount     *int                           `json:"pair_count"`
	Sources       sourcesSection                 `json:"sources"`
	Warnings      []contract.Warning             `json:"warnings"`
	UpdatedAt     *string                        `json:"updated_at"`
	Stale         bool                           `json:"stale"`
	Missing       []string                       `json:"missing"`
}

func (r *renderer) source(d contract.Domain) *sourceSection {
	doc := r.st.docs[d]
	if doc == nil {
		return nil
	}
	at, stale := r.fresh(d)
	return &sourceSection{Source: doc.env.Source, UpdatedAt: formatTime(at), Stale: stale}
}

func txns(t contract.Txns) txnsSection {
	return txnsSection{Buys: t.Buys, Sells: t.Sells, Total: t.Buys + t.Sells}
}

func (r *renderer) marketData() *response {
	in, missing, ok := r.composite()
	if !ok {
		return r.unavailable(contract.DomainMarket)
	}
	sp, err := r.supplies()
	if err != nil {
		return r.internal(err)
	}
	name, symbol := r.identity()
	b := marketDataBody{APIVersion: APIVersion, PortalVersion: PortalVersion,
		Token:    tokenSection{Mint: r.s.token.Mint, Name: name, Symbol: symbol, Decimals: r.decimals()},
		Warnings: []contract.Warning{}, UpdatedAt: timePtr(in), Stale: in.stale, Missing: missing,
		Sources: sourcesSection{Market: r.source(contract.DomainMarket), Supply: r.source(contract.DomainSupply),
			Holders: r.source(contract.DomainHolders)}}
	m := r.st.market()
	if m != nil {
		b.MarketStatus = ptr(m.Status)
		if m.PriceUSD != nil {
			b.Price = &priceSection{USD: num(*m.PriceUSD), Quote: numPtr(m.PriceQuote), QuoteSymbol: m.QuoteSymbol,
				ChangePercent: contract.Windows[*json.Number]{M5: numPtr(m.PriceChange.M5), H1: numPtr(m.PriceChange.H1),
					H6: numPtr(m.PriceChange.H6), H24: numPtr(m.PriceChange.H24)}}
		}
		b.Liquidity = &liquiditySection{TotalUSD: num(m.LiquidityUSD)}
		if m.Selected != nil {
			b.Liquidity.MainPairUSD = numPtr(m.Selected.LiquidityUSD)
		}
		b.VolumeUSD = &contract.Windows[json.Number]{M5: num(m.VolumeUSD.M5), H1: num(m.VolumeUSD.H1),
			H6: num(m.VolumeUSD.H6), H24: num(m.VolumeUSD.H24)}
		b.Transactions = &contract.Windows[txnsSection]{M5: txns(m.Txns.M5), H1: txns(m.Txns.H1),
			H6: txns(m.Txns.H6), H24: txns(m.Txns.H24)}
		b.MainPair = newPairBody(m.Selected)
		b.PairCount = ptr(len(m.Pairs))
		b.Warnings = warnings(m.Warnings)
	}
	b.Valuation.MarketCapUSD, b.Valuation.FDVUSD = r.valuation(m, sp)
	if h := r.st.holders(); h != nil {
		b.Holders = &holdersSection{Count: h.Holders, TokenAccounts: h.TokenAccounts,
			NonZeroAccounts: h.NonZeroAccounts, Method: h.Method}
	}
	if sp != nil {
		b.Supply = &supplySection{Decimals: sp.decimals, Total: sp.total.value, TotalRaw: sp.total.raw,
			Circulating: sp.circulating.value, CirculatingRaw: sp.circulating.raw, Max: sp.max.value, MaxRaw: sp.max.raw}
	}
	return r.okJSON(b, in)
}

// pairDetail is a detected pair as /api/market-pairs shows it.
type pairDetail struct {
	pairBody
	PriceUSD     *json.Number `json:"price_usd"`
	PriceQuote   *json.Number `json:"price_quote"`
	VolumeUSD24h json.Number  `json:"volume_usd_24h"`
	CreatedAt    *string      `json:"created_at"`
	Labels       []string     `json:"labels"`
	Usable       bool         `json:"usable"`
	Reason       *string      `json:"reason"`
}

type officialPairBody struct {
	Address      string       `json:"address"`
	Found        bool         `json:"found"`
	Selected     bool         `json:"selected"`
	LiquidityUSD *json.Number `json:"liquidity_usd"`
}

type marketPairsBody struct {
	Mint         string             `json:"mint"`
	MarketStatus string             `json:"market_status"`
	Rule         string             `json:"rule"`
	Selected     *pairBody          `json:"selected"`
	Official     []officialPairBody `json:"official"`
	Pairs        []pairDetail       `json:"pairs"`
	PairCount    int                `json:"pair_count"`
	Warnings     []contract.Warning `json:"warnings"`
	Source       contract.Source    `json:"source"`
	UpdatedAt    string             `json:"updated_at"`
	Stale        bool               `json:"stale"`
}

func (r *renderer) marketPairs() *response {
	m := r.st.market()
	if m == nil {
		return r.unavailable(contract.DomainMarket)
	}
	in := r.info(contract.DomainMarket)
	b := marketPairsBody{Mint: r.s.token.Mint, MarketStatus: m.Status, Rule: m.Rule, Selected: newPairBody(m.Selected),
		Official: []officialPairBody{}, Pairs: []pairDetail{}, PairCount: len(m.Pairs), Warnings: warnings(m.Warnings),
		Source: r.st.docs[contract.DomainMarket].env.Source, UpdatedAt: formatTime(in.updatedAt), Stale: in.stale}
	for _, o := range m.Official {
		b.Official = append(b.Official, officialPairBody{Address: o.Address, Found: o.Found, Selected: o.Selected,
			LiquidityUSD: numPtr(o.LiquidityUSD)})
	}
	for i := range m.Pairs {
		p := &m.Pairs[i]
		d := pairDetail{pairBody: *newPairBody(p), PriceUSD: numPtr(p.PriceUSD), PriceQuote: numPtr(p.PriceQuote),
			VolumeUSD24h: num(p.VolumeUSD24h), Labels: p.Labels, Usable: p.Usable}
		if d.Labels == nil {
			d.Labels = []string{}
		}
		if p.CreatedAt != nil {
			d.CreatedAt = ptr(formatTime(*p.CreatedAt))
		}
		if p.Reason != "" {
			d.Reason = ptr(p.Reason)
		}
		b.Pairs = append(b.Pairs, d)
	}
	return r.okJSON(b, in)
}

// ---- holders ----

type holdersBody struct {
	Mint            string          `json:"mint"`
	Holders         uint64          `json:"holders"`
	TokenAccounts   uint64          `json:"token_accounts"`
	NonZeroAccounts uint64          `json:"non_zero_accounts"`
	Method          string          `json:"method"`
	Queries         []string        `json:"queries"`
	Slot            uint64          `json:"slot"`
	DurationSeconds json.Number     `json:"duration_seconds"`
	Source          contract.Source `json:"source"`
	UpdatedAt       string          `json:"updated_at"`
	Stale           bool            `json:"stale"`
}

func (r *renderer) holders() *response {
	h := r.st.holders()
	if h == nil {
		if run, ok := r.st.statuses[contract.CollectorHolders].Runs[contract.DomainHolders]; ok &&
			!run.OK && run.ErrorKind == contract.ErrKindUnsupported {
			msg := "The ledger RPC node cannot enumerate token accounts, so no holder count exists."
			if run.Error != "" {
				msg += " " + sentence(run.Error)
			}
			if run.Remedy != "" {
				msg += " " + sentence(run.Remedy)
			} else {
				msg += " Set HOLDERS_RPC_URL to a node that serves getProgramAccounts for token accounts, or HOLDERS_METHOD=das with a DAS provider."
			}
			return newError(http.StatusServiceUnavailable, codeHoldersUnavailable, r.s.redact(msg), r.s.cfg.RetryAfter)
		}
		return r.unavailable(contract.DomainHolders)
	}
	in := r.info(contract.DomainHolders)
	q := h.Queries
	if q == nil {
		q = []string{}
	}
	return r.okJSON(holdersBody{Mint: r.s.token.Mint, Holders: h.Holders, TokenAccounts: h.TokenAccounts,
		NonZeroAccounts: h.NonZeroAccounts, Method: h.Method, Queries: q, Slot: h.Slot,
		DurationSeconds: json.Number(strconv.FormatFloat(max(h.DurationSeconds, 0), 'f', 3, 64)),
		Source:          r.st.docs[contract.DomainHolders].env.Source,
		UpdatedAt:       formatTime(in.updatedAt), Stale: in.stale}, in)
}

// sentence ends s with a period.
func sentence(s string) string {
	s = strings.TrimSpace(s)
	if s == "" || strings.HasSuffix(s, ".") {
		return s
	}
	return s + "."
}

// ---- static: token metadata, exchanges, OpenAPI ----

type authoritiesSection struct {
	MintAuthority   *string `json:"mint_authority"`
	FreezeAuthority *string `json:"freeze_authority"`
	TokenProgram    string  `json:"token_program"`
}

type tokenMetadataBody struct {
	Mint          string                    `json:"mint"`
	Name          string                    `json:"name"`
	Symbol        string                    `json:"symbol"`
	Decimals      *uint8                    `json:"decimals"`
	Description   *string                   `json:"description"`
	Logo          *string                   `json:"logo"`
	Links         []config.Link             `json:"links"`
	PublicBaseURL *string                   `json:"public_base_url"`
	OnChain       *contract.OnChainMetadata `json:"on_chain"`
	Authorities   *authoritiesSection       `json:"authorities"`
	Warnings      []contract.Warning        `json:"warnings"`
	UpdatedAt     *string                   `json:"updated_at"`
	Stale         bool                      `json:"stale"`
	Missing       []string                  `json:"missing"`
}

func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func (r *renderer) tokenMetadata() *response {
	ds := []contract.Domain{contract.DomainMetadata, contract.DomainSupply}
	in := r.info(ds...)
	name, symbol := r.identity()
	t := r.s.token
	b := tokenMetadataBody{Mint: t.Mint, Name: name, Symbol: symbol, Decimals: r.decimals(),
		Description: nonEmpty(t.Description), Logo: nonEmpty(t.Logo), Links: t.Links,
		PublicBaseURL: nonEmpty(t.PublicBaseURL), Warnings: []contract.Warning{},
		UpdatedAt: timePtr(in), Stale: in.stale, Missing: r.missing(ds...)}
	if b.Links == nil {
		b.Links = []config.Link{}
	}
	if md := r.st.metadata(); md != nil {
		b.OnChain = md.OnChain
		b.Warnings = append(b.Warnings, md.Warnings...)
	}
	if sp := r.st.supply(); sp != nil {
		b.Authorities = &authoritiesSection{MintAuthority: sp.MintAuthority, FreezeAuthority: sp.FreezeAuthority,
			TokenProgram: sp.TokenProgram}
	}
	return r.okJSON(b, in)
}

type exchangeBody struct {
	Name     string  `json:"name"`
	Type     string  `json:"type"`
	Pair     *string `json:"pair"`
	Base     string  `json:"base"`
	Quote    string  `json:"quote"`
	TradeURL *string `json:"trade_url"`
	InfoURL  *string `json:"info_url"`
	Official bool    `json:"official"`
}

type officialPairLink struct {
	Address string `json:"address"`
	Dex     string `json:"dex"`
	Base    string `json:"base"`
	Quote   string `json:"quote"`
	URL     string `json:"url"`
}

type exchangesBody struct {
	Mint          string             `json:"mint"`
	Name          string             `json:"name"`
	Symbol        string             `json:"symbol"`
	Exchanges     []exchangeBody     `json:"exchanges"`
	OfficialPairs []officialPairLink `json:"official_pairs"`
	API           map[string]string  `json:"api"`
	Explorers     map[string]string  `json:"explorers"`
	Aggregators   map[string]string  `json:"aggregators"`
}

func (r *renderer) exchanges() *response {
	t := r.s.token
	b := exchangesBody{Mint: t.Mint, Name: t.Name, Symbol: t.Symbol, Exchanges: []exchangeBody{},
		OfficialPairs: []officialPairLink{}, API: map[string]string{},
		Explorers: map[string]string{
			"solscan":         "https://solscan.io/token/" + t.Mint,
			"solana_explorer": "https://explorer.solana.com/address/" + t.Mint,
		},
		Aggregators: map[string]string{
			"dexscreener":   "https://dexscreener.com/solana/" + t.Mint,
			"geckoterminal": "https://www.geckoterminal.com/solana/tokens/" + t.Mint,
		}}
	for _, e := range t.Exchanges {
		b.Exchanges = append(b.Exchanges, exchangeBody{Name: e.Name, Type: e.Type, Pair: nonEmpty(e.Pair), Base: e.Base,
			Quote: e.Quote, TradeURL: nonEmpty(e.TradeURL), InfoURL: nonEmpty(e.InfoURL), Official: e.Official})
	}
	for _, p := range t.OfficialPairs {
		b.OfficialPairs = append(b.OfficialPairs, officialPairLink{Address: p.Address, Dex: p.Dex, Base: p.Base,
			Quote: p.Quote, URL: "https://dexscreener.com/solana/" + p.Address})
	}
	base := strings.TrimSuffix(t.PublicBaseURL, "/")
	for key, path := range map[string]string{
		"total_supply": PathTotalSupply, "circulating_supply": PathCirculatingSupply, "max_supply": PathMaxSupply,
		"supply": PathSupply, "coingecko_supply": PathCoinGeckoSupply, "price": PathPrice, "holders": PathHolders,
		"token_metadata": PathTokenMetadata, "market": PathMarket, "market_data": PathMarketData,
		"market_pairs": PathMarketPairs, "health": PathHealth, "status": PathStatus, "openapi": PathOpenAPI,
	} {
		b.API[key] = base + path
	}
	return r.okJSON(b, dataInfo{})
}

func (r *renderer) openAPI() *response {
	return newOK(contentJSON, r.s.cacheControl(groupStatic), r.s.openapi, dataInfo{})
}
