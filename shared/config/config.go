// Package config reads what a user sets: the environment variables of
// docs/environment.md (and per-service prefixed ones, through Load) and the
// token file. Invalid values are errors that name the variable or field.
package config

import (
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"reflect"
	"strconv"
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

// Common is the configuration every service shares (docs/environment.md).
type Common struct {
	// TokenConfig is the path of the token file.
	TokenConfig string `doc:"Path of the token file (YAML): the official identity, maximum supply, links, pairs and exchanges of the token. Unset: TOKEN_MINT alone, or demo mode in standalone." env:"TOKEN_CONFIG" empty:"unset it for TOKEN_MINT alone (or demo mode in standalone), or give the token file's path"`
	// TokenMint overrides the file's mint.
	TokenMint string `doc:"Mint address (base58). With TOKEN_CONFIG it replaces the file's mint; alone it names the token (TOKEN_MAX_SUPPLY then required; name and symbol from the ledger)." env:"TOKEN_MINT" empty:"unset it for the token file's mint (or demo mode in standalone), or give the mint"`
	// TokenMaxSupply overrides the file's max_supply (whole tokens, or
	// none); required with TOKEN_MINT alone.
	TokenMaxSupply string `env:"TOKEN_MAX_SUPPLY" doc:"Maximum supply in whole tokens, or none when the issuer discloses none; replaces the token file's max_supply. Required with TOKEN_MINT alone."`
	// SolanaRPCURL is the ledger RPC (secret).
	SolanaRPCURL Secret `doc:"Solana JSON-RPC endpoint of the supply collector, and of the holders collector without HOLDERS_RPC_URL. Secret: it may carry an API key and is never logged." env:"SOLANA_RPC_URL" envDefault:"https://api.mainnet-beta.solana.com"`
	// SolanaRPCURLs is the list of ledger nodes the supply collector
	// cross-checks (secret: each URL may carry its own key); empty: the
	// one node of SolanaRPCURL. See LedgerRPCs.
	SolanaRPCURLs Secret `doc:"Comma-separated Solana JSON-RPC endpoints, each a node of its own provider (with its own key): the supply collector reads every one on each poll and publishes a changed supply only when SUPPLY_QUORUM of them agree. Nodes are numbered 1..N in this order in answers, metrics and logs, never named. Replaces SOLANA_RPC_URL (setting both is refused). Secret." env:"SOLANA_RPC_URLS" empty:"unset it to use SOLANA_RPC_URL alone, or give a comma-separated list of URLs"`
	// SolanaWSURLs are the PubSub WebSocket URLs of the ledger nodes,
	// in the order of LedgerRPCs (secret); empty: derived from each RPC
	// URL. See LedgerWSs.
	SolanaWSURLs Secret `doc:"Comma-separated Solana PubSub WebSocket URLs (wss:// or ws://), one per ledger node in the order of SOLANA_RPC_URLS (or the one of SOLANA_RPC_URL); an element off leaves that node without a subscription (polled only). The supply collector subscribes to the mint on each and polls at once on a change. Unset: each node's RPC URL with https turned into wss and http into ws, same host, path and query (as providers publish them). Secret." env:"SOLANA_WS_URLS" empty:"unset it to derive each node's WebSocket URL from its RPC URL, or give a comma-separated list (off for a node without one)"`
	// HoldersRPCURL is the RPC for holder enumeration (secret); defaults to
	// SolanaRPCURL.
	HoldersRPCURL Secret `doc:"RPC endpoint of the holders collector: a node that serves getProgramAccounts by mint, or a DAS endpoint with HOLDERS_METHOD=das. Secret. Unset: SOLANA_RPC_URL (the first node of SOLANA_RPC_URLS)." env:"HOLDERS_RPC_URL" empty:"unset it to use SOLANA_RPC_URL, or give a URL"`
	// HoldersMethod is getProgramAccounts or das.
	HoldersMethod string `doc:"How holders are enumerated: getProgramAccounts, or das (Helius getTokenAccounts)." env:"HOLDERS_METHOD" envDefault:"getProgramAccounts"`
	// DexScreenerURL is the aggregator base URL.
	DexScreenerURL string `doc:"DexScreener API base URL, the market collector's upstream." env:"DEXSCREENER_URL" envDefault:"https://api.dexscreener.com"`
	// GeckoTerminalURL is the fallback aggregator base URL.
	GeckoTerminalURL string `doc:"GeckoTerminal API base URL, the market collector's fallback upstream." env:"GECKOTERMINAL_URL" envDefault:"https://api.geckoterminal.com/api/v2"`
	// RedisURL is redis://, rediss://, a cluster or a Sentinel URL (secret:
	// it may carry a password). Empty: standalone uses its in-memory store.
	RedisURL Secret `doc:"redis://, rediss://, Cluster (redis://a:1?addr=b:2) or redis-sentinel://[:pass@]h1:26379,h2:26379/master[/db]. Secret. Required by the cluster services; unset, standalone keeps everything in memory." env:"REDIS_URL" empty:"unset it for the in-memory store (standalone only), or give a redis:// URL"`
	// RedisPassword is the Redis password apart from the URL, so that a
	// password with URL-reserved characters (/ # ? % @ :) needs no escaping:
	// the Helm chart passes it from a Secret this way. It wins over a
	// password in REDIS_URL.
	RedisPassword Secret `doc:"Password of Redis (of the data nodes with a Sentinel URL), given apart from REDIS_URL so that any character works unescaped; wins over a password in REDIS_URL. Secret." env:"REDIS_PASSWORD" empty:"unset it to use the password in REDIS_URL (or none), or give the password"`
	// HTTPAddr is the public API listener (edge, standalone).
	HTTPAddr string `doc:"Listener of the public API (edge, standalone)." env:"HTTP_ADDR" envDefault:":8080"`
	// OpsAddr is the metrics and probes listener (pprof too with OpsPprof).
	// Standalone defaults it to loopback (see standalone.LoadCommon).
	OpsAddr string `doc:"Listener of /metrics, /healthz, /readyz (and /debug/pprof/ with OPS_PPROF). Standalone's default is 127.0.0.1:9090." env:"OPS_ADDR" envDefault:":9090"`
	// OpsPprof serves /debug/pprof/ on the ops listener; off by default:
	// profiles and traces are expensive and reveal the process's internals.
	OpsPprof bool `doc:"Serve /debug/pprof/ on the ops listener." env:"OPS_PPROF" envDefault:"false"`
	// LogLevel is debug, info, warn or error.
	LogLevel string `doc:"debug, info, warn or error." env:"LOG_LEVEL" envDefault:"info"`
	// DrainDelay is how long a stopping process stays up not-ready, so that
	// load balancers stop sending to it before it shuts down.
	DrainDelay time.Duration `doc:"On SIGTERM, how long a process stays up not ready before it shuts down, so that load balancers stop sending to it (0: none)." env:"DRAIN_DELAY" envDefault:"5s" min:"0s"`
	// DrainMax, above DrainDelay, keeps a stopping process ready and
	// serving past DrainDelay while requests still reach it (Kubernetes
	// sends to a stopping pod that reports ready when no other pod of
	// its Service is: the last replica's replacement is not ready yet).
	DrainMax time.Duration `doc:"On SIGTERM, when above DRAIN_DELAY: the process stays ready (Kubernetes takes a stopping pod out of its Services' ready endpoints by itself, and sends to it only while no other pod is ready) and goes on serving past DRAIN_DELAY until a second passes without a request, DRAIN_MAX at most. 0: not ready at once, shut down after DRAIN_DELAY." env:"DRAIN_MAX" envDefault:"0s" min:"0s"`
	// ShutdownTimeout bounds the graceful shutdown.
	ShutdownTimeout time.Duration `doc:"Bound of the graceful shutdown after the drain." env:"SHUTDOWN_TIMEOUT" envDefault:"10s" min:"1ns"`
	// UpstreamsSimulated says the upstreams are the project's simulator
	// (standalone simulate, the chart's demo.simulator): what the
	// services publish is then marked simulated, never passed off as a
	// real token's numbers.
	UpstreamsSimulated bool `doc:"true when the upstreams are the project's simulator (standalone simulate, the chart's demo.simulator): every document and status record is marked simulated, and the edge reports mode demo." env:"UPSTREAMS_SIMULATED" envDefault:"false"`

	// CollectorWatch is how often a collector checks that the store still
	// holds its last good documents and status record, and writes back at
	// once what the store lost (a Redis restarted without persistence).
	CollectorWatch time.Duration `doc:"How often a collector checks that Redis still holds its last documents and status record, and writes back at once what Redis lost." env:"COLLECTOR_WATCH_INTERVAL" envDefault:"5s" min:"100ms"`

	// History is the retention of each tier of the history.
	History History `envPrefix:"HISTORY_"`

	Market   DomainTiming `envPrefix:"MARKET_"`
	Supply   DomainTiming `envPrefix:"SUPPLY_"`
	Metadata DomainTiming `envPrefix:"METADATA_"`
	Holders  DomainTiming `envPrefix:"HOLDERS_"`
}

// DomainTiming is a domain's refresh, stale-after and TTL. LoadCommon
// fills every field, with the contract's default where its variable is
// unset, so a variable set to 0 is refused rather than taken for the
// default. In a Common built in code, a zero field takes the default.
type DomainTiming struct {
	Refresh    time.Duration `doc:"Interval between two polls of the {domain} domain." env:"REFRESH" min:"1s"`
	StaleAfter time.Duration `doc:"Age past which the {domain} document is served flagged stale (stale: true, X-Data-Stale: true)." env:"STALE_AFTER" min:"1s"`
	TTL        time.Duration `doc:"How long a {domain} document lives after its updated_at (Redis drops its key then); past it the data is gone (503 data_unavailable)." env:"TTL" min:"1s"`
}

// LogValue is how the effective configuration is logged at start: secrets
// masked, durations readable, and the effective timing of each domain.
func (c Common) LogValue() slog.Value {
	attrs := []slog.Attr{
		slog.String("token_config", c.TokenConfig), slog.String("token_mint", c.TokenMint),
		slog.String("token_max_supply", c.TokenMaxSupply),
		slog.Any("solana_rpc_url", c.SolanaRPCURL), slog.Int("ledger_nodes", len(c.LedgerRPCs())),
		slog.Any("holders_rpc_url", c.HoldersRPC()),
		slog.String("holders_method", c.HoldersMethod),
		slog.String("dexscreener_url", c.DexScreenerURL), slog.String("geckoterminal_url", c.GeckoTerminalURL),
		slog.Any("redis_url", c.RedisURL), slog.Any("redis_password", c.RedisPassword),
		slog.String("http_addr", c.HTTPAddr), slog.String("ops_addr", c.OpsAddr),
		slog.Bool("ops_pprof", c.OpsPprof),
		slog.String("log_level", c.LogLevel), slog.String("drain_delay", c.DrainDelay.String()),
		slog.String("drain_max", c.DrainMax.String()),
		slog.String("shutdown_timeout", c.ShutdownTimeout.String()),
		slog.String("collector_watch_interval", c.CollectorWatch.String()),
		slog.Any("history", c.History),
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

// HoldersRPC is the RPC used for holder enumeration: HOLDERS_RPC_URL, else
// the first ledger node.
func (c Common) HoldersRPC() Secret {
	if c.HoldersRPCURL != "" {
		return c.HoldersRPCURL
	}
	return c.LedgerRPCs()[0]
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
	if err := c.validateLedgerRPCs(); err != nil {
		errs = append(errs, err)
	}
	if err := c.validateLedgerWSs(); err != nil {
		errs = append(errs, err)
	}
	for name, a := range map[string]string{"HTTP_ADDR": c.HTTPAddr, "OPS_ADDR": c.OpsAddr} {
		if !strings.Contains(a, ":") {
			errs = append(errs, fmt.Errorf("%s: %q is not host:port or :port", name, a))
		}
	}
	if c.DrainMax != 0 && c.DrainMax < c.DrainDelay {
		errs = append(errs, fmt.Errorf("DRAIN_MAX: %s is below DRAIN_DELAY (%s): 0 (off) or at least DRAIN_DELAY", c.DrainMax, c.DrainDelay))
	}
	if _, err := ParseLevel(c.LogLevel); err != nil {
		errs = append(errs, fmt.Errorf("LOG_LEVEL: %w", err))
	}
	if err := CheckBounds(c, ""); err != nil {
		// The rules between a domain's timings only mean something once
		// each is in its bounds.
		return errors.Join(append(errs, err)...)
	}
	if err := c.History.validate(); err != nil {
		errs = append(errs, err)
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

// CheckHTTPURL is checkHTTPURL for a service's own URL variables.
func CheckHTTPURL(s Secret) error { return checkHTTPURL(s.Reveal()) }

// ParseLevel maps a level name to slog's level.
func ParseLevel(s string) (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return 0, fmt.Errorf("%q is not debug, info, warn or error", s)
	}
	return l, nil
}

// Load fills cfg (a pointer to a struct with `env` tags) from the
// environment, with prefix before every variable name ("" for none). A
// variable that is set is taken as given: set but empty is an error (the
// `empty` tag, when there, says what to do instead), and so is a value
// that does not parse. Errors name the variable. Bounds are Validate's
// (CheckBounds).
func Load(cfg any, prefix string) error {
	vars := envVars(reflect.TypeOf(cfg).Elem(), prefix)
	var errs []error
	for _, v := range vars {
		if val, set := os.LookupEnv(v.key); set && val == "" {
			hint := v.field.Tag.Get("empty")
			if hint == "" {
				hint = "unset it for the default, or give a value"
			}
			errs = append(errs, fmt.Errorf("%s is set but empty: %s", v.key, hint))
		}
	}
	if err := env.ParseWithOptions(cfg, env.Options{Prefix: prefix}); err != nil {
		errs = append(errs, nameVariables(err, vars))
	}
	return errors.Join(errs...)
}

// nameVariables rewrites the library's errors, which name the Go field,
// into errors that name the variable the user set. A field name can stand
// for several variables (HOLDERS_REFRESH and MARKET_REFRESH are both
// Refresh): each set one is parsed again alone, and only those that fail
// are named.
func nameVariables(err error, vars []envVar) error {
	var agg env.AggregateError
	if !errors.As(err, &agg) {
		return err
	}
	errs := make([]error, 0, len(agg.Errors))
	named := map[string]bool{}
	for _, e := range agg.Errors {
		var pe env.ParseError
		if !errors.As(e, &pe) {
			errs = append(errs, e)
			continue
		}
		found := false
		for _, v := range vars {
			val, set := os.LookupEnv(v.key)
			if v.field.Name != pe.Name || v.field.Type != pe.Type || !set || val == "" {
				continue
			}
			if perr := parseAs(pe.Type, val); perr != nil {
				found = true
				if !named[v.key] {
					named[v.key] = true
					errs = append(errs, fmt.Errorf("%s: %w", v.key, perr))
				}
			}
		}
		if !found { // an envDefault that does not parse: a bug, not the user's
			errs = append(errs, e)
		}
	}
	return errors.Join(errs...)
}

// parseAs parses val as the library parses a field of type t.
func parseAs(t reflect.Type, val string) error {
	holder := reflect.New(reflect.StructOf([]reflect.StructField{{Name: "V", Type: t, Tag: `env:"V"`}}))
	err := env.ParseWithOptions(holder.Interface(), env.Options{Environment: map[string]string{"V": val}})
	if pe := (env.ParseError{}); errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// CheckBounds checks every field of cfg (a struct with `env` tags, or a
// pointer to one) that carries a `min` or `max` tag, and names its
// variable (prefix before the key). A bound is written as the field's
// value would be: a duration ("1ms") for a time.Duration, an integer for
// the other integer kinds. Zero is checked like any value: no variable
// takes 0 to mean its default (unset it for that). A tag that does not
// parse is a bug in the service, so it panics (every service validates
// its defaults in a test).
func CheckBounds(cfg any, prefix string) error {
	var errs []error
	walkFields(reflect.Indirect(reflect.ValueOf(cfg)), prefix, func(key string, f reflect.StructField, v reflect.Value) {
		lo, hasMin := f.Tag.Lookup("min")
		hi, hasMax := f.Tag.Lookup("max")
		if !hasMin && !hasMax {
			return
		}
		val, format := intValue(v)
		if hasMin && val < boundOf(f, lo) {
			hint := ""
			if val == 0 {
				hint = " (0 does not mean the default: unset the variable for that)"
			}
			errs = append(errs, fmt.Errorf("%s: %s is below the minimum %s%s", key, format(val), lo, hint))
		}
		if hasMax && val > boundOf(f, hi) {
			errs = append(errs, fmt.Errorf("%s: %s is above the maximum %s", key, format(val), hi))
		}
	})
	return errors.Join(errs...)
}

var durationType = reflect.TypeFor[time.Duration]()

// intValue reads an integer or duration field, with how to print it.
func intValue(v reflect.Value) (int64, func(int64) string) {
	if v.Type() == durationType {
		return v.Int(), func(n int64) string { return time.Duration(n).String() }
	}
	switch v.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return v.Int(), func(n int64) string { return strconv.FormatInt(n, 10) }
	}
	panic(fmt.Sprintf("config: min/max tag on a %s field", v.Type()))
}

// boundOf parses a min or max tag of field f.
func boundOf(f reflect.StructField, tag string) int64 {
	var n int64
	var err error
	if f.Type == durationType {
		var d time.Duration
		d, err = time.ParseDuration(tag)
		n = int64(d)
	} else {
		n, err = strconv.ParseInt(tag, 10, 64)
	}
	if err != nil {
		panic(fmt.Sprintf("config: invalid bound %q on field %s: %v", tag, f.Name, err))
	}
	return n
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

// envVar is one variable of a config struct and the field it fills.
type envVar struct {
	key   string
	field reflect.StructField
}

// envVars lists the variables of struct type t, nested structs included.
func envVars(t reflect.Type, prefix string) []envVar {
	var out []envVar
	walkFields(reflect.New(t).Elem(), prefix, func(key string, f reflect.StructField, _ reflect.Value) {
		out = append(out, envVar{key: key, field: f})
	})
	return out
}

// walkFields calls fn with every field of v read from a variable, and the
// variable's name, descending into nested structs as the library does
// (with their envPrefix).
func walkFields(v reflect.Value, prefix string, fn func(key string, f reflect.StructField, v reflect.Value)) {
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		key, _, _ := strings.Cut(f.Tag.Get("env"), ",")
		switch {
		case key != "":
			fn(prefix+key, f, v.Field(i))
		case f.Type.Kind() == reflect.Struct && f.IsExported():
			walkFields(v.Field(i), prefix+f.Tag.Get("envPrefix"), fn)
		}
	}
}

// LoadCommon reads and validates the common configuration.
func LoadCommon() (Common, error) {
	// The timings start at the defaults, which the variables that are set
	// replace.
	var c Common
	c.setDefaultTimings()
	if err := Load(&c, ""); err != nil {
		return c, err
	}
	_, one := os.LookupEnv("SOLANA_RPC_URL")
	_, list := os.LookupEnv("SOLANA_RPC_URLS")
	if one && list {
		return c, errors.New("SOLANA_RPC_URL and SOLANA_RPC_URLS are both set: set SOLANA_RPC_URLS alone for several ledger nodes, or SOLANA_RPC_URL alone for one")
	}
	return c, c.Validate()
}
