package market

import (
	"time"

	"github.com/tokendata/tokendata/shared/config"
)

// Config is the market collector's own configuration: environment
// variables with the MARKET_ prefix (LoadConfig). The upstream URLs and
// the timings are in config.Common (DEXSCREENER_URL, GECKOTERMINAL_URL,
// MARKET_REFRESH, MARKET_STALE_AFTER, MARKET_TTL).
type Config struct {
	// HTTPTimeout bounds each upstream request (MARKET_HTTP_TIMEOUT).
	HTTPTimeout time.Duration `env:"HTTP_TIMEOUT" doc:"Bound of one request to an aggregator." envDefault:"10s" min:"1ns"`
	// UserAgent is sent with every request (MARKET_USER_AGENT); empty:
	// "tokendata-market/<version>".
	UserAgent string `env:"USER_AGENT" doc:"User-Agent of every request. Unset: tokendata-market/ and the build version."`
	// MaxBodyBytes caps an upstream answer (MARKET_MAX_BODY_BYTES).
	MaxBodyBytes int64 `env:"MAX_BODY_BYTES" doc:"Largest aggregator answer read; a larger one fails the poll." envDefault:"4194304" min:"1024"`
	// DexScreenerRPM caps requests to DexScreener per minute, retries
	// included (MARKET_DEXSCREENER_RPM; its documented limit is 300).
	DexScreenerRPM int `env:"DEXSCREENER_RPM" doc:"Most requests a minute to DexScreener, retries included (its documented limit is 300)." envDefault:"300" min:"1"`
	// GeckoTerminalRPM caps requests to GeckoTerminal per minute
	// (MARKET_GECKOTERMINAL_RPM; its public API allows 30). Every poll
	// reads GeckoTerminal once, never waiting for this budget: a poll that
	// finds it spent is not cross-checked (single_source).
	GeckoTerminalRPM int `env:"GECKOTERMINAL_RPM" doc:"Most requests a minute to GeckoTerminal (its public API allows 30). Every poll reads it once; a poll that finds this budget spent (MARKET_REFRESH below a minute divided by it: 2s) is not cross-checked, marked single_source, and only a fallback waits for it." envDefault:"30" min:"1"`
	// DisableFallback stops reading GeckoTerminal (MARKET_DISABLE_FALLBACK):
	// no fallback and no cross-check; every document is single-source.
	DisableFallback bool `env:"DISABLE_FALLBACK" doc:"Do not read GeckoTerminal: no fallback when DexScreener fails, and no cross-check of the price (every document single_source)."`
	// DisableBackfill turns off the import of the price's past from
	// GeckoTerminal's OHLCV at the first poll (MARKET_DISABLE_BACKFILL).
	DisableBackfill bool `env:"DISABLE_BACKFILL" doc:"Do not import the price's past from GeckoTerminal's pool OHLCV at the first poll."`
	// RetryAttempts is the number of tries within one poll
	// (MARKET_RETRY_ATTEMPTS).
	RetryAttempts int `env:"RETRY_ATTEMPTS" doc:"Tries of one poll, the first included." envDefault:"3" min:"1" max:"10"`
	// RetryBase is the first wait between tries, doubled after each, with
	// ±50 % jitter (MARKET_RETRY_BASE).
	RetryBase time.Duration `env:"RETRY_BASE" doc:"First wait between tries; it doubles after each, with ±50 % jitter." envDefault:"1s" min:"1ns"`
}

// DefaultConfig is the configuration with every default, as LoadConfig
// returns it from an empty environment: the tags above.
func DefaultConfig() Config { return config.Default[Config]() }

// LoadConfig reads the MARKET_ variables and validates them.
func LoadConfig() (Config, error) {
	var c Config
	if err := config.Load(&c, "MARKET_"); err != nil {
		return c, err
	}
	return c, c.Validate()
}

// Validate checks every field and names the variable at fault.
func (c Config) Validate() error {
	return config.CheckBounds(c, "MARKET_")
}
