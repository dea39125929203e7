// Package market is the market collector: every MARKET_REFRESH (60 s by
// default) it reads DexScreener's token pairs and GeckoTerminal's token
// pools of the token at once, applies the market rules
// (services/market/README.md) and writes the market document:
// DexScreener's figures, their price cross-checked against GeckoTerminal's
// price of the same pool (crosscheck.go: agreed, disagree, held,
// unconfirmed, single_source). When DexScreener fails GeckoTerminal's
// figures are published instead, and the document's source, its warnings
// and the status record say so. A failed or invalid poll writes nothing.
//
// Decisions the original specification left open (docs/decisions.md,
// Market):
//   - Pairs on another chain, or without the token on either side, are
//     listed in Pairs with Reason other_chain or token_not_in_pair, and
//     count in no total ("detected", not "kept").
//   - "Not indexed" (DexScreener answers [] or null, or lists no kept pair)
//     is written as a document: it is a fact, not an outage. It never comes
//     from the fallback: an empty or 404 answer of GeckoTerminal while
//     DexScreener is failing fails the poll, so a good document stays.
//   - selected_pair_not_official is raised only when the token file
//     declares official pairs.
//   - PriceChange is left null when the selected pair has the token as its
//     quote: the aggregators' change is the base token's.
//   - Pairs are listed kept first, by liquidity (absent last), then
//     address, so that the document does not change with the upstream's
//     order.
package market

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"github.com/shopspring/decimal"
	"golang.org/x/time/rate"

	"github.com/tokendata/tokendata/shared/buildinfo"
	"github.com/tokendata/tokendata/shared/collector"
	"github.com/tokendata/tokendata/shared/config"
	"github.com/tokendata/tokendata/shared/contract"
	"github.com/tokendata/tokendata/shared/ops"
	"github.com/tokendata/tokendata/shared/store"
)

// Upstream method names, in Source.Method and the upstream metrics.
const (
	MethodTokenPairs = "token-pairs"
	MethodTokenPools = "token-pools"
)

// MinRefresh is the shortest poll interval: one request a second (plus
// retries) stays well within DexScreener's 300 requests a minute.
const MinRefresh = time.Second

// DefaultPriceMoveWarning is the price move share flagged when the token
// file sets none.
const DefaultPriceMoveWarning = "0.5"

// Collector polls the aggregators and writes the market document.
type Collector struct {
	cfg       Config
	mint      string
	official  []string
	moveShare decimal.Decimal
	maxSupply *decimal.Decimal // whole tokens; nil when none is disclosed
	dsURL     string           // the token-pairs URL of the mint
	gtURL     string           // the token pools URL of the mint
	gtBase    string           // GECKOTERMINAL_URL without a trailing slash
	client    *http.Client
	store     *store.Store
	metrics   *collector.Metrics
	log       *slog.Logger
	dsLimit   *rate.Limiter
	gtLimit   *rate.Limiter
	// holds keeps each aggregator's Retry-After: neither is called before
	// the wait it asked for is over.
	holds  collector.Holds
	runner *collector.Runner

	// The price history backfill (backfill.go): each tier of
	// backfillTiers until it is in, tried again at bfNext.
	bfMu    sync.Mutex
	bfDone  [len(backfillTiers)]bool
	bfTries int
	bfNext  time.Time
	// now is the clock of the backfill's retries (time.Now).
	now func() time.Time

	selectedLiquidity prometheus.Gauge
	pairs             *prometheus.GaugeVec

	// bounds are the token file's price cross-check bounds (crosscheck.go).
	bounds       config.PriceBounds
	checkMetrics checkMetrics
}

// New builds the market collector of token. common gives the upstream
// URLs (DEXSCREENER_URL, GECKOTERMINAL_URL) and the market timing
// (MARKET_REFRESH, MARKET_STALE_AFTER, MARKET_TTL); token its mint, its
// official pairs and its price move warning. It registers its metrics on
// deps.Registry.
func New(common config.Common, token config.Token, cfg Config, deps collector.Deps) (*Collector, error) {
	errs := []error{cfg.Validate()}
	timing := common.Timings()[contract.DomainMarket]
	if err := timing.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("MARKET_REFRESH/MARKET_STALE_AFTER/MARKET_TTL: %w", err))
	}
	if timing.Refresh < MinRefresh {
		errs = append(errs, fmt.Errorf("MARKET_REFRESH: %s is below %s (DexScreener allows 300 requests a minute)", timing.Refresh, MinRefresh))
	}
	if err := config.CheckAddress(token.Mint); err != nil {
		errs = append(errs, fmt.Errorf("token mint: %w", err))
	}
	dsBase, err := baseURL(common.DexScreenerURL)
	if err != nil {
		errs = append(errs, fmt.Errorf("DEXSCREENER_URL: %w", err))
	}
	gtBase, err := baseURL(common.GeckoTerminalURL)
	if err != nil {
		errs = append(errs, fmt.Errorf("GECKOTERMINAL_URL: %w", err))
	}
	move, err := priceMoveShare(token)
	if err != nil {
		errs = append(errs, err)
	}
	bounds, err := token.PriceBounds()
	if err != nil {
		errs = append(errs, fmt.Errorf("token file: %w", err))
	}
	if deps.Store == nil {
		errs = append(errs, errors.New("deps.Store: missing"))
	} else if deps.Store.Mint() != token.Mint {
		errs = append(errs, fmt.Errorf("deps.Store: serves mint %s, not the token's %s", deps.Store.Mint(), token.Mint))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}

	if cfg.UserAgent == "" {
		cfg.UserAgent = "tokendata-market/" + buildinfo.Version
	}
	log := deps.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	client := deps.HTTPClient
	if client == nil {
		client = &http.Client{Timeout: cfg.HTTPTimeout}
	}
	reg := deps.Registry
	if reg == nil {
		reg = prometheus.NewRegistry() // nobody scrapes it
	}
	f := promauto.With(reg)
	bounds = fitTiming(log, cfg, bounds, timing)
	c := &Collector{
		cfg:       cfg,
		mint:      token.Mint,
		moveShare: move,
		maxSupply: maxSupplyWhole(token),
		dsURL:     dsBase + "/token-pairs/v1/solana/" + url.PathEscape(token.Mint),
		gtBase:    gtBase,
		gtURL:     gtBase + "/networks/solana/tokens/" + url.PathEscape(token.Mint) + "/pools?include=base_token,quote_token",
		client:    client,
		store:     deps.Store,
		metrics:   deps.Metrics,
		log:       log.With("collector", contract.CollectorMarket),
		dsLimit:   rate.NewLimiter(rate.Every(time.Minute/time.Duration(cfg.DexScreenerRPM)), 3),
		gtLimit:   rate.NewLimiter(rate.Every(time.Minute/time.Duration(cfg.GeckoTerminalRPM)), 3),
		selectedLiquidity: f.NewGauge(prometheus.GaugeOpts{Namespace: ops.Namespace, Name: "market_selected_pair_liquidity_usd",
			Help: "Liquidity in USD of the pair the price comes from (0 when none is selected)."}),
		pairs: f.NewGaugeVec(prometheus.GaugeOpts{Namespace: ops.Namespace, Name: "market_pairs",
			Help: "Pairs of the last good poll: detected (every pair listed), kept (on solana with the token), usable (kept with a positive price)."},
			[]string{"state"}),
		bounds:       bounds,
		checkMetrics: newCheckMetrics(f),
		now:          time.Now,
	}
	for _, p := range token.OfficialPairs {
		c.official = append(c.official, p.Address)
	}
	c.runner = c.newRunner(common, deps, timing)
	return c, nil
}

// priceMoveShare is the token file's price move warning as a share (0.5
// = 50 %), DefaultPriceMoveWarning when it sets none.
func priceMoveShare(token config.Token) (decimal.Decimal, error) {
	moveText := token.PriceMoveWarning
	if moveText == "" {
		moveText = DefaultPriceMoveWarning
	}
	move, err := decimal.NewFromString(moveText)
	if err != nil || move.Sign() <= 0 {
		return move, fmt.Errorf("token price_move_warning: %q is not a positive decimal share such as 0.5", moveText)
	}
	return move, nil
}

// fitTiming returns the price cross-check bounds with MaxHeldPolls fitted
// to the market TTL (fitHolds), and logs a warning when it lowers it, and
// when MARKET_REFRESH is shorter than GeckoTerminal's budget allows.
func fitTiming(log *slog.Logger, cfg Config, bounds config.PriceBounds, timing contract.Timing) config.PriceBounds {
	asked := bounds.MaxHeldPolls
	bounds, capped := fitHolds(bounds, timing)
	if capped {
		log.Warn("price_max_held_polls lowered: a held price must not outlive MARKET_TTL",
			"price_max_held_polls", asked, "effective", bounds.MaxHeldPolls,
			"market_refresh", timing.Refresh.String(), "market_ttl", timing.TTL.String())
	}
	if gtPace := time.Minute / time.Duration(cfg.GeckoTerminalRPM); !cfg.DisableFallback && timing.Refresh < gtPace {
		log.Warn("MARKET_REFRESH is shorter than GeckoTerminal's budget allows: polls that find it spent are not cross-checked (single_source)",
			"market_refresh", timing.Refresh.String(), "market_geckoterminal_rpm", cfg.GeckoTerminalRPM)
	}
	return bounds
}

// newRunner is the collector's runner: one job, the market domain polled
// from DexScreener every MARKET_REFRESH.
func (c *Collector) newRunner(common config.Common, deps collector.Deps, timing contract.Timing) *collector.Runner {
	cfg := c.cfg
	return &collector.Runner{
		Name:      contract.CollectorMarket,
		Store:     deps.Store,
		Metrics:   deps.Metrics,
		Log:       c.log,
		Backoff:   collector.Backoff{Attempts: cfg.RetryAttempts, Base: cfg.RetryBase, Max: 30 * time.Second},
		Simulated: deps.Simulated,
		Redactor:  config.NewRedactor(config.SecretsOf(common)...),
		Watch:     common.CollectorWatch,
		Jobs: []collector.Job{{
			Domain:   contract.DomainMarket,
			Upstream: contract.UpstreamDexScreener,
			Timing:   timing,
			Poll:     c.Poll,
		}},
	}
}

// baseURL checks an aggregator base URL and drops a trailing slash. Its
// errors never quote the URL.
func baseURL(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" {
		return "", errors.New("not an absolute http:// or https:// URL without a query")
	}
	for len(raw) > 0 && raw[len(raw)-1] == '/' {
		raw = raw[:len(raw)-1]
	}
	return raw, nil
}

// Run polls until ctx is done; it returns nil then.
func (c *Collector) Run(ctx context.Context) error { return c.runner.Run(ctx) }

// RunOnce polls now (with retries), writes the document on success and
// the status record in every case. It returns the poll's classified error.
func (c *Collector) RunOnce(ctx context.Context) error {
	return c.runner.RunOnce(ctx, contract.DomainMarket)
}

// Runner is the collector's runner (its status record, its job).
func (c *Collector) Runner() *collector.Runner { return c.runner }

func (c *Collector) fromDexScreener(ctx context.Context, in buildInput) (contract.Market, error) {
	up := contract.UpstreamDexScreener
	if held := c.holds.Check(up); held != nil {
		return contract.Market{}, held // not called: not an upstream request
	}
	started := time.Now()
	doc, err := func() (contract.Market, error) {
		body, err := c.get(ctx, up, c.dsURL, c.dsLimit)
		if err != nil {
			return contract.Market{}, err
		}
		pairs, err := parseDexScreener(body)
		if err != nil {
			return contract.Market{}, invalid(up, "%v", err)
		}
		m, err := buildMarket(pairs, in)
		if err != nil {
			return contract.Market{}, invalid(up, "document rejected: %v", err)
		}
		return m, nil
	}()
	c.observe(up, MethodTokenPairs, started, err)
	return doc, err
}

// fromGeckoTerminal reads GeckoTerminal as the fallback source: a
// document built from its pools, and an error when it lists none.
func (c *Collector) fromGeckoTerminal(ctx context.Context, in buildInput) (contract.Market, error) {
	pairs, err := c.readGeckoTerminal(ctx, false)
	if err != nil {
		return contract.Market{}, err
	}
	return geckoTerminalDocument(pairs, in)
}

// geckoTerminalDocument builds a document from GeckoTerminal's pools; a
// document without a pool of the token is an invalid answer (GeckoTerminal
// never states "not indexed": DexScreener does).
func geckoTerminalDocument(pairs []wirePair, in buildInput) (contract.Market, error) {
	up := contract.UpstreamGeckoTerminal
	m, err := buildMarket(pairs, in)
	if err != nil {
		return contract.Market{}, invalid(up, "document rejected: %v", err)
	}
	if m.Status == contract.MarketNotIndexed {
		return contract.Market{}, invalid(up, "lists no pool of the token")
	}
	return m, nil
}

// errGTBudget: the cross-check's read of GeckoTerminal found its request
// budget (MARKET_GECKOTERMINAL_RPM) spent, and did not wait for it.
var errGTBudget = collector.Errorf(contract.ErrKindRateLimited, true,
	"geckoterminal: the local request budget (MARKET_GECKOTERMINAL_RPM) is spent for now; read again at the next poll")

// readGeckoTerminal reads and parses GeckoTerminal's pools of the token.
// With noWait it returns errGTBudget at once when the request budget has
// no request left now, rather than wait for one: a cross-check never
// delays a poll.
func (c *Collector) readGeckoTerminal(ctx context.Context, noWait bool) ([]wirePair, error) {
	up := contract.UpstreamGeckoTerminal
	if held := c.holds.Check(up); held != nil {
		return nil, held // not called: not an upstream request
	}
	if noWait && c.gtLimit.Tokens() < 1 {
		return nil, errGTBudget
	}
	started := time.Now()
	pairs, err := func() ([]wirePair, error) {
		body, err := c.get(ctx, up, c.gtURL, c.gtLimit)
		if err != nil {
			return nil, err
		}
		pairs, err := parseGeckoTerminal(body)
		if err != nil {
			return nil, invalid(up, "%v", err)
		}
		return pairs, nil
	}()
	c.observe(up, MethodTokenPools, started, err)
	return pairs, err
}

func (c *Collector) observe(upstream, method string, started time.Time, err error) {
	outcome := "ok"
	if err != nil {
		if errors.Is(err, context.Canceled) {
			outcome = "canceled"
		} else {
			outcome = collector.Classify(err).Kind
		}
	}
	c.metrics.ObserveUpstream(upstream, method, outcome, time.Since(started))
}

func (c *Collector) observeDoc(m contract.Market) {
	liq := 0.0
	if m.Selected != nil && m.Selected.LiquidityUSD != nil {
		liq = m.Selected.LiquidityUSD.InexactFloat64()
	}
	c.selectedLiquidity.Set(liq)
	var kept, usable int
	for _, p := range m.Pairs {
		if p.Side != "" {
			kept++
		}
		if p.Usable {
			usable++
		}
	}
	c.pairs.WithLabelValues("detected").Set(float64(len(m.Pairs)))
	c.pairs.WithLabelValues("kept").Set(float64(kept))
	c.pairs.WithLabelValues("usable").Set(float64(usable))
}

// get fetches u from upstream within the rate limit and the request
// timeout, and returns the body. Errors are classified and never quote
// the URL.
func (c *Collector) get(ctx context.Context, upstream, u string, lim *rate.Limiter) ([]byte, error) {
	if err := lim.Wait(ctx); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, collector.Errorf(contract.ErrKindRateLimited, true, "%s: local request budget exhausted", upstream)
	}
	rctx, cancel := context.WithTimeout(ctx, c.cfg.HTTPTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, collector.Errorf(contract.ErrKindConfig, false, "%s: cannot build the request", upstream)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", c.cfg.UserAgent)
	resp, err := c.client.Do(req)
	if err != nil {
		return nil, c.transportError(ctx, rctx, upstream, "request", err)
	}
	defer func() { _ = resp.Body.Close() }()
	if ce := collector.ClassifyHTTP(upstream, resp); ce != nil {
		c.holds.Observe(upstream, ce)
		if ce.Kind == contract.ErrKindForbidden {
			ce.Remedy = ""
		}
		ce = ce.WithRemedy(variableOf(upstream))
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return nil, ce
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, c.cfg.MaxBodyBytes+1))
	if err != nil {
		if rctx.Err() != nil || isTimeout(err) {
			return nil, c.transportError(ctx, rctx, upstream, "body", err)
		}
		c.log.Debug("upstream body cut", "upstream", upstream, "bytes", len(body), "error", config.Redact(err.Error(), config.Secret(u)))
		return nil, invalid(upstream, "answer truncated: the connection dropped after %d bytes of the body", len(body))
	}
	if int64(len(body)) > c.cfg.MaxBodyBytes {
		return nil, invalid(upstream, "answer larger than MARKET_MAX_BODY_BYTES (%d bytes)", c.cfg.MaxBodyBytes)
	}
	return body, nil
}

// transportError classifies a failed request or body read without
// quoting the error (it carries the URL).
func (c *Collector) transportError(ctx, rctx context.Context, upstream, what string, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	c.log.Debug("upstream "+what+" failed", "upstream", upstream, "error", config.Redact(err.Error(), config.Secret(c.dsURL), config.Secret(c.gtURL)))
	base := c.dsURL
	if upstream == contract.UpstreamGeckoTerminal {
		base = c.gtURL
	}
	timedOut := rctx.Err() != nil || isTimeout(err)
	return collector.Unreachable(upstream, variableOf(upstream), config.Secret(base), err, timedOut, c.cfg.HTTPTimeout, "MARKET_HTTP_TIMEOUT")
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()
}
