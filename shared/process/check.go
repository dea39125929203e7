package process

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/tokendata/tokendata/shared/check"
	"github.com/tokendata/tokendata/shared/config"
	"github.com/tokendata/tokendata/shared/store"
)

// GroupConfig is the report group of the configuration.
const GroupConfig = "configuration"

// CheckSetup says how a binary's check loads what it serves with.
type CheckSetup struct {
	// Service is the binary ("supply", "standalone").
	Service string
	// LoadCommon loads the common configuration (nil: config.LoadCommon).
	LoadCommon func() (config.Common, error)
	// AllowDemo is standalone's: without a token it would serve demo mode.
	AllowDemo bool
	// NeedRedis is the cluster services': REDIS_URL is required.
	NeedRedis bool
}

// Checked is what CheckStart loaded.
type Checked struct {
	Common config.Common
	Token  config.Token
	// Store is the Redis store when REDIS_URL is set and Redis answered
	// (nil otherwise); Close releases it.
	Store *store.Store
}

// Close releases the store.
func (c *Checked) Close() {
	if c != nil && c.Store != nil {
		_ = c.Store.Close()
	}
}

// remedyEnv and remedyToken point at the references.
const (
	remedyEnv   = "fix the variable the error names; docs/environment.md lists every variable with its default and bounds"
	remedyToken = "fix the token file where the error says; docs/token-file.md describes every key, docs/examples/token.yaml is a complete file"
)

// CheckStart validates the environment and the token file with the very
// loaders serving uses, and Redis when REDIS_URL is set (or required),
// and adds each verdict to the configuration group of r. It sets r's
// redactor to the configured secrets. It returns nil when a failure
// leaves nothing to probe.
func CheckStart(ctx context.Context, r *check.Report, s CheckSetup) *Checked {
	g := r.Group(GroupConfig, "every endpoint")
	load := s.LoadCommon
	if load == nil {
		load = config.LoadCommon
	}
	common, err := load()
	if err != nil {
		g.Fail("environment", err.Error(), remedyEnv)
		return nil
	}
	r.Redactor = config.NewRedactor(config.SecretsOf(common)...)
	g.OK("environment", "every variable is valid; %s", endpoints(common, s.Service))

	token, demo, err := config.ResolveToken(common, s.AllowDemo)
	switch {
	case err != nil:
		g.Fail("token", err.Error(), remedyToken)
		return nil
	case demo:
		g.Fail("token", "none configured: "+s.Service+" would serve the simulated demo token",
			"set TOKEN_CONFIG to your token file (docs/token-file.md; start from docs/examples/token.yaml), "+
				"or TOKEN_MINT with TOKEN_MAX_SUPPLY")
		return nil
	}
	g.OK("token", "%s", describeToken(common, token))
	if common.TokenConfig != "" && common.TokenMint != "" {
		if file, err := config.LoadToken(common.TokenConfig, "", common.TokenMaxSupply); err == nil && file.Mint != token.Mint {
			g.Warn("TOKEN_MINT", fmt.Sprintf("replaces the token file's mint %s with %s", file.Mint, token.Mint),
				"unset TOKEN_MINT to serve the token file's mint; set it only to serve another mint with this file")
		}
	}

	out := &Checked{Common: common, Token: token}
	if common.RedisURL == "" {
		if s.NeedRedis {
			g.Fail("REDIS_URL", "not set: the "+s.Service+" service reads and writes its documents in Redis",
				"set REDIS_URL (redis://host:6379/0, or a Sentinel or Cluster URL: docs/environment.md)")
			return nil
		}
		g.OK("store", "REDIS_URL unset: the in-memory store of this one process")
		return out
	}
	st, _, err := OpenStore(common, token.Mint)
	if err != nil {
		g.Fail("REDIS_URL", err.Error(), "correct REDIS_URL (its password, or its form: docs/environment.md)")
		return nil
	}
	pctx, cancel := context.WithTimeout(ctx, storeCheckTimeout)
	defer cancel()
	if err := st.Ping(pctx); err != nil {
		_ = st.Close()
		g.Fail("REDIS_URL", "Redis at "+redisHost(common.RedisURL)+" does not answer",
			"start Redis, or point REDIS_URL at one this process can reach")
		return nil
	}
	g.OK("REDIS_URL", "Redis at %s answers", redisHost(common.RedisURL))
	out.Store = st
	return out
}

// endpoints names the upstream hosts a service reads (never the rest of
// their URLs, where keys live).
func endpoints(c config.Common, service string) string {
	var parts []string
	rpc := func() {
		parts = append(parts, "SOLANA_RPC_URL at "+host(c.SolanaRPCURL))
	}
	holders := func() {
		v := "SOLANA_RPC_URL"
		if c.HoldersRPCURL != "" {
			v = "HOLDERS_RPC_URL at " + host(c.HoldersRPCURL)
		}
		parts = append(parts, "holders by "+c.HoldersMethod+" through "+v)
	}
	market := func() {
		parts = append(parts, "DEXSCREENER_URL at "+host(config.Secret(c.DexScreenerURL)),
			"GECKOTERMINAL_URL at "+host(config.Secret(c.GeckoTerminalURL)))
	}
	switch service {
	case "supply":
		rpc()
	case "holders":
		holders()
	case "market":
		market()
	case "edge":
		return "the edge reads only Redis"
	default:
		rpc()
		holders()
		market()
	}
	return strings.Join(parts, ", ")
}

func host(s config.Secret) string {
	u, err := url.Parse(s.Reveal())
	if err != nil || u.Host == "" {
		return "?"
	}
	return config.Redact(u.Host, s)
}

func redisHost(s config.Secret) string {
	u, err := url.Parse(s.Reveal())
	if err != nil || u.Host == "" {
		return "the configured address"
	}
	return u.Host
}

// describeToken summarises the token for the report.
func describeToken(c config.Common, t config.Token) string {
	from := "TOKEN_MINT and TOKEN_MAX_SUPPLY (no token file: name and symbol from the ledger)"
	if c.TokenConfig != "" {
		from = "token file " + c.TokenConfig
	}
	s := fmt.Sprintf("%s: mint %s", from, t.Mint)
	if t.Name != "" || t.Symbol != "" {
		s += fmt.Sprintf(", name %q, symbol %q", t.Name, t.Symbol)
	}
	if t.Decimals != nil {
		s += fmt.Sprintf(", %d decimals", *t.Decimals)
	}
	s += ", max_supply " + t.MaxSupply
	s += fmt.Sprintf(", %d official pairs, %d exchanges, %d links", len(t.OfficialPairs), len(t.Exchanges), len(t.Links))
	return s
}

// CheckTimeout bounds each probe of a check that has no bound of its own.
const CheckTimeout = 30 * time.Second
