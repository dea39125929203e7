// Package config reads what a user sets: the environment variables of
// contract section 7 (and per-service prefixed ones, through Load) and the
// token file. Invalid values are errors that name the variable or field.
package config

import (
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"reflect"
	"strings"
	"time"

	"github.com/caarlos0/env/v11"

	"github.com/tokendata/tokendata/shared/contract"
)

// Secret is a string that never prints: RPC URLs carry API keys, Redis
// URLs passwords. Reveal returns the value for the one place that uses it.
type Secret string

// Reveal returns the secret value.
func (s Secret) Reveal() string { return string(s) }

// String masks the value.
func (s Secret) String() string {
	if s == "" {
		return ""
	}
	return "[redacted]"
}

// LogValue masks the value in slog output.
func (s Secret) LogValue() slog.Value { return slog.StringValue(s.String()) }

// MarshalText masks the value in JSON, YAML and any text encoding.
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// Common is the configuration every service shares (contract section 7).
type Common struct {
	// TokenConfig is the path of the token file.
	TokenConfig string `env:"TOKEN_CONFIG"`
	// TokenMint overrides the file's mint.
	TokenMint string `env:"TOKEN_MINT"`
	// SolanaRPCURL is the ledger RPC (secret).
	SolanaRPCURL Secret `env:"SOLANA_RPC_URL" envDefault:"https://api.mainnet-beta.solana.com"`
	// HoldersRPCURL is the RPC for holder enumeration (secret); defaults to
	// SolanaRPCURL.
	HoldersRPCURL Secret `env:"HOLDERS_RPC_URL"`
	// HoldersMethod is getProgramAccounts or das.
	HoldersMethod string `env:"HOLDERS_METHOD" envDefault:"getProgramAccounts"`
	// DexScreenerURL is the aggregator base URL.
	DexScreenerURL string `env:"DEXSCREENER_URL" envDefault:"https://api.dexscreener.com"`
	// GeckoTerminalURL is the fallback aggregator base URL.
	GeckoTerminalURL string `env:"GECKOTERMINAL_URL" envDefault:"https://api.geckoterminal.com/api/v2"`
	// RedisURL is redis://, rediss://, a cluster or a Sentinel URL (secret:
	// it may carry a password). Empty: standalone uses its in-memory store.
	RedisURL Secret `env:"REDIS_URL"`
	// HTTPAddr is the public API listener (edge, standalone).
	HTTPAddr string `env:"HTTP_ADDR" envDefault:":8080"`
	// OpsAddr is the metrics, probes and pprof listener.
	OpsAddr string `env:"OPS_ADDR" envDefault:":9090"`
	// LogLevel is debug, info, warn or error.
	LogLevel string `env:"LOG_LEVEL" envDefault:"info"`
	// DrainDelay is how long a stopping process stays up not-ready, so that
	// load balancers stop sending to it before it shuts down.
	DrainDelay time.Duration `env:"DRAIN_DELAY" envDefault:"5s"`
	// ShutdownTimeout bounds the graceful shutdown.
	ShutdownTimeout time.Duration `env:"SHUTDOWN_TIMEOUT" envDefault:"10s"`

	Market   DomainTiming `envPrefix:"MARKET_"`
	Supply   DomainTiming `envPrefix:"SUPPLY_"`
	Metadata DomainTiming `envPrefix:"METADATA_"`
	Holders  DomainTiming `envPrefix:"HOLDERS_"`
}

// DomainTiming overrides a domain's refresh, stale-after and TTL; zero
// values take the contract's defaults.
type DomainTiming struct {
	Refresh    time.Duration `env:"REFRESH"`
	StaleAfter time.Duration `env:"STALE_AFTER"`
	TTL        time.Duration `env:"TTL"`
}

// LogValue is how the effective configuration is logged at start: secrets
// masked, durations readable, and the effective timing of each domain.
func (c Common) LogValue() slog.Value {
	attrs := []slog.Attr{
		slog.String("token_config", c.TokenConfig), slog.String("token_mint", c.TokenMint),
		slog.Any("solana_rpc_url", c.SolanaRPCURL), slog.Any("holders_rpc_url", c.HoldersRPC()),
		slog.String("holders_method", c.HoldersMethod),
		slog.String("dexscreener_url", c.DexScreenerURL), slog.String("geckoterminal_url", c.GeckoTerminalURL),
		slog.Any("redis_url", c.RedisURL), slog.String("http_addr", c.HTTPAddr), slog.String("ops_addr", c.OpsAddr),
		slog.String("log_level", c.LogLevel), slog.String("drain_delay", c.DrainDelay.String()),
		slog.String("shutdown_timeout", c.ShutdownTimeout.String()),
	}
	for _, d := range contract.Domains {
		t := c.Timings()[d]
		attrs = append(attrs, slog.Group(string(d), "refresh", t.Refresh.String(),
			"stale_after", t.StaleAfter.String(), "ttl", t.TTL.String()))
	}
	return slog.GroupValue(attrs...)
}

// Demo reports whether demo mode is on: no token file and no mint set.
func (c Common) Demo() bool { return c.TokenConfig == "" && c.TokenMint == "" }

// HoldersRPC is the RPC used for holder enumeration.
func (c Common) HoldersRPC() Secret {
	if c.HoldersRPCURL != "" {
		return c.HoldersRPCURL
	}
	return c.SolanaRPCURL
}

// Timings returns the effective timing of each domain.
func (c Common) Timings() map[contract.Domain]contract.Timing {
	out := make(map[contract.Domain]contract.Timing, 4)
	for d, o := range map[contract.Domain]DomainTiming{
		contract.DomainMarket: c.Market, contract.DomainSupply: c.Supply,
		contract.DomainMetadata: c.Metadata, contract.DomainHolders: c.Holders,
	} {
		t := contract.DefaultTimings[d]
		if o.Refresh != 0 {
			t.Refresh = o.Refresh
		}
		if o.StaleAfter != 0 {
			t.StaleAfter = o.StaleAfter
		}
		if o.TTL != 0 {
			t.TTL = o.TTL
		}
		out[d] = t
	}
	return out
}

// Validate checks every field and names the variable at fault.
func (c Common) Validate() error {
	var errs []error
	if c.HoldersMethod != contract.HoldersMethodGPA && c.HoldersMethod != contract.HoldersMethodDAS {
		errs = append(errs, fmt.Errorf("HOLDERS_METHOD: %q is not getProgramAccounts or das", c.HoldersMethod))
	}
	for name, u := range map[string]string{
		"SOLANA_RPC_URL": c.SolanaRPCURL.Reveal(), "HOLDERS_RPC_URL": c.HoldersRPCURL.Reveal(),
		"DEXSCREENER_URL": c.DexScreenerURL, "GECKOTERMINAL_URL": c.GeckoTerminalURL,
	} {
		if u == "" && name == "HOLDERS_RPC_URL" {
			continue
		}
		if err := checkHTTPURL(u); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
		}
	}
	for name, a := range map[string]string{"HTTP_ADDR": c.HTTPAddr, "OPS_ADDR": c.OpsAddr} {
		if !strings.Contains(a, ":") {
			errs = append(errs, fmt.Errorf("%s: %q is not host:port or :port", name, a))
		}
	}
	if _, err := ParseLevel(c.LogLevel); err != nil {
		errs = append(errs, fmt.Errorf("LOG_LEVEL: %w", err))
	}
	if c.DrainDelay < 0 || c.ShutdownTimeout <= 0 {
		errs = append(errs, errors.New("DRAIN_DELAY must be ≥ 0 and SHUTDOWN_TIMEOUT > 0"))
	}
	for _, d := range contract.Domains {
		if err := c.Timings()[d].Validate(); err != nil {
			errs = append(errs, fmt.Errorf("%s_REFRESH/%s_STALE_AFTER/%s_TTL: %w",
				strings.ToUpper(string(d)), strings.ToUpper(string(d)), strings.ToUpper(string(d)), err))
		}
	}
	return errors.Join(errs...)
}

// checkHTTPURL accepts absolute http(s) URLs only. Its errors never quote
// the URL: it may carry a key.
func checkHTTPURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errors.New("not an absolute http:// or https:// URL")
	}
	return nil
}

// ParseLevel maps a level name to slog's level.
func ParseLevel(s string) (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return 0, fmt.Errorf("%q is not debug, info, warn or error", s)
	}
	return l, nil
}

// Load fills cfg (a pointer to a struct with `env` tags) from the
// environment, with prefix before every variable name ("" for none).
// Errors name the variable.
func Load(cfg any, prefix string) error {
	err := env.ParseWithOptions(cfg, env.Options{Prefix: prefix})
	var agg env.AggregateError
	if err == nil || !errors.As(err, &agg) {
		return err
	}
	// The library names the Go field; the user set a variable. Name the
	// variables of that field that are set.
	keys := envKeys(reflect.TypeOf(cfg).Elem(), prefix)
	errs := make([]error, 0, len(agg.Errors))
	for _, e := range agg.Errors {
		var pe env.ParseError
		if !errors.As(e, &pe) {
			errs = append(errs, e)
			continue
		}
		var names []string
		for _, k := range keys[pe.Name] {
			if _, set := os.LookupEnv(k); set {
				names = append(names, k)
			}
		}
		if len(names) == 0 {
			names = keys[pe.Name]
		}
		errs = append(errs, fmt.Errorf("%s: %w", strings.Join(names, " or "), pe.Err))
	}
	return errors.Join(errs...)
}

// Default returns a T (a struct with `env` tags) holding the envDefault of
// every field, whatever the process's environment: what Load gives on an
// empty one. A service's DefaultConfig is Default of its Config, so each
// default is written once, as a tag beside its field. A tag that does not
// parse is a bug in the service, so it panics (every service tests its
// defaults).
func Default[T any]() T {
	var c T
	if err := env.ParseWithOptions(&c, env.Options{Environment: map[string]string{}}); err != nil {
		panic(fmt.Sprintf("config: invalid envDefault tag in %T: %v", c, err))
	}
	return c
}

// envKeys maps each Go field name to the variables it is read from.
func envKeys(t reflect.Type, prefix string) map[string][]string {
	out := map[string][]string{}
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Type.Kind() == reflect.Struct && f.Tag.Get("envPrefix") != "" {
			for name, ks := range envKeys(f.Type, prefix+f.Tag.Get("envPrefix")) {
				out[name] = append(out[name], ks...)
			}
			continue
		}
		if key, _, _ := strings.Cut(f.Tag.Get("env"), ","); key != "" {
			out[f.Name] = append(out[f.Name], prefix+key)
		}
	}
	return out
}

// LoadCommon reads and validates the common configuration.
func LoadCommon() (Common, error) {
	var c Common
	if err := Load(&c, ""); err != nil {
		return c, err
	}
	return c, c.Validate()
}
