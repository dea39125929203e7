package holders

import (
	"context"
	"flag"
	"fmt"
	"time"

	"github.com/tokendata/tokendata/services/holders/tally"
	"github.com/tokendata/tokendata/services/holders/wire"
	"github.com/tokendata/tokendata/shared/check"
	"github.com/tokendata/tokendata/shared/collector"
	"github.com/tokendata/tokendata/shared/config"
	"github.com/tokendata/tokendata/shared/contract"
)

// Serves is the endpoint the holders collector decides.
const Serves = "/api/holders, and the holders of /api/market and /api/market-data"

// CheckLimits bound the count Check makes: it stops at whichever comes
// first, and says so.
type CheckLimits struct {
	// MaxAccounts is the most token accounts read.
	MaxAccounts int64
	// Timeout bounds the whole count.
	Timeout time.Duration
}

// DefaultCheckLimits: a million accounts (a few seconds on a good node)
// or a minute.
var DefaultCheckLimits = CheckLimits{MaxAccounts: 1_000_000, Timeout: time.Minute}

// Flags registers the bounds as flags of a check command.
func (l *CheckLimits) Flags(fs *flag.FlagSet) {
	fs.Int64Var(&l.MaxAccounts, "holders-max-accounts", l.MaxAccounts, "stop the holders count after this many token accounts, and say so")
	fs.DurationVar(&l.Timeout, "holders-timeout", l.Timeout, "stop the holders count after this long, and say so")
}

// Probe builds the collector as serving does (its HOLDERS_ variables, the
// common configuration, the token) and checks it (Check) within lim, into
// the holders group of r.
func Probe(ctx context.Context, common config.Common, token config.Token, lim CheckLimits, r *check.Report) {
	g := r.Group("holders", Serves)
	cfg, err := LoadConfig()
	if err != nil {
		g.Fail("HOLDERS_ variables", err.Error(), "fix the variable the error names (docs/environment.md)")
		return
	}
	col, err := New(common, token, cfg, collector.CheckDeps(token.Mint))
	if err != nil {
		g.Fail("configuration", err.Error(), "fix the variable or the token file's key the error names")
		return
	}
	col.Check(ctx, lim, g)
}

// Check asks the node to enumerate the mint's token accounts with the
// collector's own queries and decoder (getProgramAccounts with its
// filters, or DAS getTokenAccounts), counts within lim, and adds the
// verdict to g: whether the node can enumerate, how many accounts and
// holders it listed and in how long, or the failure with its remedy. It
// writes nothing.
func (c *Collector) Check(ctx context.Context, lim CheckLimits, g *check.Group) {
	count := tally.NewCount()
	count.Limit(uint64(lim.MaxAccounts), c.cfg.MaxMemoryBytes)
	cctx, cancel := context.WithTimeout(ctx, lim.Timeout)
	defer cancel()
	started := time.Now()
	var (
		doc contract.Holders
		err error
	)
	if c.method == contract.HoldersMethodDAS {
		doc, err = c.enumerateDAS(cctx, c.rpc, count, started)
	} else {
		doc, err = c.enumerateGPA(cctx, c.rpc, countInto(count), started)
	}
	took := time.Since(started).Round(time.Millisecond)
	subject, how := "DAS getTokenAccounts", ""
	if c.method == contract.HoldersMethodGPA {
		subject = "getProgramAccounts"
		if p := c.programID(); p != "" {
			for _, q := range wire.Queries(p, c.mint) {
				how += "; " + q.Description
			}
		}
	}
	switch {
	case err == nil && count.TokenAccounts == 0:
		collector.CheckFail(g, subject, noAccounts(c.method))
	case err == nil:
		g.OK(subject, "the node enumerates the mint's token accounts: %d token accounts, %d holders (%d accounts with a balance) at slot %d, counted in %s%s",
			count.TokenAccounts, count.Holders(), count.NonZeroAccounts, doc.Slot, took, how)
	case lim.MaxAccounts > 0 && count.TokenAccounts >= uint64(lim.MaxAccounts):
		g.OK(subject, "the node enumerates the mint's token accounts: the check stopped at its limit of %d token accounts (%d holders so far) after %s; "+
			"the collector reads them all, up to HOLDERS_MAX_ACCOUNTS=%d%s", lim.MaxAccounts, count.Holders(), took, c.cfg.MaxAccounts, how)
	case cctx.Err() != nil && ctx.Err() == nil && count.TokenAccounts > 0:
		g.Warn(subject, fmt.Sprintf("the node enumerates the mint's token accounts, slowly: %d read when the check stopped at its bound of %s; "+
			"a count must finish within HOLDERS_RPC_TIMEOUT=%s per request", count.TokenAccounts, lim.Timeout, c.cfg.RPCTimeout),
			"run check with a longer --holders-timeout to time a whole count; if it takes longer than HOLDERS_RPC_TIMEOUT, raise it or use a faster node (or HOLDERS_METHOD=das)")
	case cctx.Err() != nil && ctx.Err() == nil:
		g.Fail(subject, fmt.Sprintf("no account listed within the check's bound of %s", lim.Timeout),
			"check that the node of "+c.rpc.variable+" answers getProgramAccounts for the token programs, or run check with a longer --holders-timeout")
	default:
		collector.CheckFail(g, subject, err)
	}
}

// programID is the token program the enumeration resolved, if any.
func (c *Collector) programID() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.program
}
