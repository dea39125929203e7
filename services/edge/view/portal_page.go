package view

// What the portal page shows, built from the state as the API's bodies
// are: the same figures, formatted for reading. Every string here is
// escaped by html/template when the page is executed; nothing is marked
// safe but the charts, which escape their own text (renderChart).

import (
	"encoding/json"
	"html/template"
	"strconv"
	"strings"

	"github.com/shopspring/decimal"

	"github.com/tokendata/tokendata/services/edge/answer"
	"github.com/tokendata/tokendata/services/edge/view/chart"
	"github.com/tokendata/tokendata/shared/config"
	"github.com/tokendata/tokendata/shared/contract"
)

// portalDomains are the domains the page shows.
var portalDomains = []contract.Domain{contract.DomainMarket, contract.DomainSupply, contract.DomainHolders,
	contract.DomainMetadata}

// figure is one number on the page: Value is exact, as the API states
// it (the <data> element's value, which the refresh script compares and
// replaces); Text is how it reads. An absent figure has neither.
type figure struct {
	Key   string // the /api/market field the script refreshes it from
	Kind  string // how Text is made from Value: usd, money, count, amount, pct
	Value string
	Text  string
	// Dir is up or down for a change that is not zero (its colour).
	Dir string
}

func newFigure(key, kind string, v *json.Number) figure {
	f := figure{Key: key, Kind: kind}
	if v != nil {
		f.Value = v.String()
		f.Text = FormatFigure(kind, f.Value)
		if d, err := decimal.NewFromString(f.Value); err == nil && kind == "pct" {
			switch d.Round(2).Sign() {
			case 1:
				f.Dir = "up"
			case -1:
				f.Dir = "down"
			}
		}
	}
	return f
}

type portalPage struct {
	Name, Symbol, Mint, Description string
	Logo                            string
	// SigningKey is the token file's signing_key_thumbprint: the key
	// that signs the API's answers, vouched for by the identity.
	SigningKey                    string
	Demo                          bool
	Links                         []config.Link
	MarketStatus                  string
	Price, Change24h, MarketCap   figure
	FDV, Liquidity, Volume24h     figure
	Txns24h, Buys24h, Sells24h    figure
	Holders                       figure
	HoldersMethod                 string
	Total, Circulating, Max       figure
	Decimals                      string
	MaxDisclosed                  bool
	Methodology                   *contract.Methodology
	Warnings                      []contract.Warning
	Pairs                         []portalPair
	Exchanges                     []config.Exchange
	Freshness                     []freshnessRow
	Listing                       []listingRow
	History                       template.HTML
	UpdatedAt                     string
	Stale                         bool
	RenderedAt                    string
	CSS, JS, Icon                 string
	APIMarket, APIStatus, APIDocs string
	APIEvents                     string
}

// portalPair is an official pair of the token file, with what the
// aggregator reports of it.
type portalPair struct {
	Name, Dex, Address, URL string
	Found, Selected         bool
	Liquidity               string
}

// freshnessRow is one domain's freshness and its collector's last run.
type freshnessRow struct {
	Domain    string
	UpdatedAt string
	State     string // fresh, stale, missing
	Run       string // ok, or the error kind of the last run
}

// listingRow is one URL to give a listing site's form.
type listingRow struct {
	Site, Field, Format, URL string
}

func (r *renderer) portalPage() *portalPage {
	name, symbol := r.identity()
	t := r.Token
	p := &portalPage{Name: name, Symbol: symbol, Mint: t.Mint, Description: t.Description, SigningKey: t.SigningKeyThumbprint, Demo: r.Demo,
		Links: t.Links, Exchanges: t.Exchanges, MaxDisclosed: t.MaxSupplyDisclosed(),
		RenderedAt: r.now.UTC().Format("2006-01-02 15:04:05 UTC"),
		CSS:        r.Assets.css.Path, JS: r.Assets.js.Path, Icon: r.Assets.icon.Path,
		APIMarket: PathMarket, APIStatus: PathStatus, APIDocs: PathOpenAPI, APIEvents: PathEvents,
		History: chart.RenderHistory(r.portalHistory())}
	if logoOrigin(t.Logo) != "" {
		p.Logo = t.Logo
	}
	if p.Name == "" {
		p.Name = t.Mint
	}
	in := r.info(portalDomains...)
	if in.Present {
		p.UpdatedAt = answer.FormatTime(in.UpdatedAt)
		p.Stale = in.Stale
	}
	m := r.st.Market()
	var mb MarketBody
	if m != nil {
		p.MarketStatus = m.Status
		mb.PriceUSD, mb.PriceChange24hPercent = priceNumPtr(m), numPtr(m.PriceChange.H24)
		mb.LiquidityUSD, mb.Volume24hUSD = ptr(num(m.LiquidityUSD)), ptr(num(m.VolumeUSD.H24))
		p.Txns24h = newFigure("txns_24h", "count", ptr(json.Number(strconv.FormatInt(m.Txns.H24.Buys+m.Txns.H24.Sells, 10))))
		p.Buys24h = newFigure("buys_24h", "count", ptr(json.Number(strconv.FormatInt(m.Txns.H24.Buys, 10))))
		p.Sells24h = newFigure("sells_24h", "count", ptr(json.Number(strconv.FormatInt(m.Txns.H24.Sells, 10))))
	} else {
		p.Txns24h, p.Buys24h, p.Sells24h = newFigure("txns_24h", "count", nil),
			newFigure("buys_24h", "count", nil), newFigure("sells_24h", "count", nil)
	}
	sp, err := r.supplies()
	if err != nil {
		sp = nil // /api/supply answers 500 and logs it; the page shows no supply
	}
	mcap, fdv := r.valuation(m, sp)
	p.Price = newFigure("price_usd", "usd", mb.PriceUSD)
	p.Change24h = newFigure("price_change_24h_percent", "pct", mb.PriceChange24hPercent)
	p.MarketCap, p.FDV = newFigure("market_cap_usd", "money", mcap), newFigure("fdv_usd", "money", fdv)
	p.Liquidity = newFigure("liquidity_usd", "money", mb.LiquidityUSD)
	p.Volume24h = newFigure("volume_24h_usd", "money", mb.Volume24hUSD)
	var holders *json.Number
	if h := r.st.Holders(); h != nil {
		holders = ptr(json.Number(strconv.FormatUint(h.Holders, 10)))
		p.HoldersMethod = h.Method
	}
	p.Holders = newFigure("holders", "count", holders)
	var total, circ *json.Number
	if sp != nil {
		total, circ = &sp.total.value, &sp.circulating.value
	}
	p.Total, p.Circulating = newFigure("total_supply", "amount", total), newFigure("circulating_supply", "amount", circ)
	p.Max = newFigure("max_supply", "amount", r.maxWhole())
	if d := r.decimals(); d != nil {
		p.Decimals = strconv.Itoa(int(*d))
	}
	if doc := r.st.Supply(); doc != nil {
		p.Methodology = &doc.Methodology
	}
	// The warnings of /api/market (market, supply, holders), then the
	// metadata document's: the page shows the token's identity too.
	p.Warnings = append(p.Warnings, r.compositeWarnings(m)...)
	if md := r.st.Metadata(); md != nil {
		p.Warnings = append(p.Warnings, md.Warnings...)
	}
	p.Pairs = r.portalPairs(m)
	p.Freshness = r.freshness()
	p.Listing = listingRows(t.PublicBaseURL)
	return p
}

// portalPairs are the token file's official pairs, with the market
// document's report of each (found, selected, liquidity).
func (r *renderer) portalPairs(m *contract.Market) []portalPair {
	var out []portalPair
	for _, o := range r.Token.OfficialPairs {
		pp := portalPair{Name: o.Base + "/" + o.Quote, Dex: o.Dex, Address: o.Address,
			URL: "https://dexscreener.com/solana/" + o.Address}
		if m != nil {
			for _, rep := range m.Official {
				if rep.Address == o.Address {
					pp.Found, pp.Selected = rep.Found, rep.Selected
					if rep.LiquidityUSD != nil {
						pp.Liquidity = FormatFigure("money", rep.LiquidityUSD.String())
					}
				}
			}
		}
		out = append(out, pp)
	}
	return out
}

// freshness is each domain's age state and its collector's last run.
func (r *renderer) freshness() []freshnessRow {
	out := make([]freshnessRow, 0, len(contract.Domains))
	for _, d := range contract.Domains {
		row := freshnessRow{Domain: string(d), State: statusMissing, Run: statusUnknown}
		if r.st.Docs[d] != nil {
			at, stale := r.fresh(d)
			row.UpdatedAt, row.State = answer.FormatTime(at), "fresh"
			if stale {
				row.State = StatusStale
			}
		}
		if run, ok := r.st.Statuses[contract.CollectorOf(d)].Runs[d]; ok {
			row.Run = StatusOK
			if !run.OK {
				row.Run = run.ErrorKind
				if row.Run == "" {
					row.Run = statusFailing
				}
			}
		}
		out = append(out, row)
	}
	return out
}

// listingRows are the URLs CoinGecko's and CoinMarketCap's forms ask
// for (docs/listing.md): the plain-text supply paths answer the number
// alone, the JSON ones every figure with its methodology.
func listingRows(publicBase string) []listingRow {
	base := strings.TrimSuffix(publicBase, "/")
	rows := []listingRow{
		{"CoinGecko", "Total supply API endpoint", "plain text", PathTotalSupply},
		{"CoinGecko", "Circulating supply API endpoint", "plain text", PathCirculatingSupply},
		{"CoinGecko", "Max supply API endpoint", "plain text", PathMaxSupply},
		{"CoinGecko", "Every supply figure (JSON)", "JSON", PathCoinGeckoSupply},
		{"CoinMarketCap", "Total supply API endpoint", "plain text", PathTotalSupply},
		{"CoinMarketCap", "Circulating supply API endpoint", "plain text", PathCirculatingSupply},
		{"CoinMarketCap", "Max supply API endpoint", "plain text", PathMaxSupply},
		{"CoinMarketCap", "Supply methodology (JSON)", "JSON", PathSupply},
	}
	for i := range rows {
		rows[i].URL = base + rows[i].URL
	}
	return rows
}

// formatFigure is how the page writes a figure; the refresh script
// applies the same rules (portal.js, format).
//
//   - usd: the exact price, digits grouped, with "$";
//   - money: USD rounded to the cent (half away from zero), grouped;
//   - count, amount: the exact number, digits grouped;
//   - pct: a signed percentage to two decimals.
func FormatFigure(kind, v string) string {
	d, err := decimal.NewFromString(v)
	if err != nil {
		return v
	}
	switch kind {
	case "usd":
		return "$" + chart.GroupDigits(v)
	case "money":
		return "$" + chart.GroupDigits(d.Round(2).StringFixed(2))
	case "pct":
		s := d.Round(2).StringFixed(2)
		if d.Round(2).IsPositive() {
			s = "+" + s
		}
		return strings.Replace(s, "-", "−", 1) + " %"
	}
	return chart.GroupDigits(v)
}

// portalCharts are the page's charts: the measure, the window and the
// title. Each is the series /api/history serves for the same measure and
// window.
var portalCharts = []struct {
	m     contract.Measure
	w     contract.Window
	title string
}{
	{contract.MeasurePriceUSD, contract.Window7d, "Price (USD), 7 days"},
	{contract.MeasureMarketCapUSD, contract.Window30d, "Market cap (USD), 30 days"},
	{contract.MeasureLiquidityUSD, contract.Window30d, "Liquidity (USD), 30 days"},
	{contract.MeasureHolders, contract.Window30d, "Holders, 30 days"},
	{contract.MeasureSupply, contract.Window30d, "Total supply, 30 days"},
}

// portalHistory is the history the page charts, from the same state as
// the history answers: a series the edge has not read, or without points,
// is left out (the page says the history is not available when none is
// left).
func (r *renderer) portalHistory() []chart.ChartSeries {
	var out []chart.ChartSeries
	for _, c := range portalCharts {
		hs := r.st.History(c.m, c.w)
		if hs == nil || len(hs.Points) == 0 {
			continue
		}
		cs := chart.ChartSeries{ID: "chart-" + strings.ReplaceAll(string(c.m), "_", "-"), Title: c.title, Points: hs.Points, Gaps: hs.Gaps}
		switch c.m.Unit() {
		case "usd":
			cs.Prefix = "$"
		case "base_units":
			s := r.st.Supply()
			if s == nil {
				continue
			}
			cs.Shift = -int32(s.Decimals)
		}
		out = append(out, cs)
	}
	return out
}
