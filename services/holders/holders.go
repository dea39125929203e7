// Package holders is the holders collector: it enumerates the token
// accounts of the mint and writes the holders document (services/holders/README.md):
// the number of unique owners whose summed balance is above
// zero, the token accounts and non-zero accounts seen, the method and the
// slot.
//
// getProgramAccounts answers are streamed through a hand-written
// incremental JSON decoder (wire.DecodeProgramAccounts) into a compact
// owner set (tally.Count): the response is never held, and memory stays
// bounded at a million accounts and more. Decoding and inserting into the
// set run on two goroutines, handing accounts over in a fixed set of
// batches (services/holders/wire/pipeline.go). Nodes that refuse
// getProgramAccounts are served by the paginated Helius DAS method
// getTokenAccounts (HOLDERS_METHOD=das). A node that cannot enumerate, a
// broken or truncated stream, or an RPC error is a failed run with its
// kind and remedy in the status record, never a count; the last good
// document stays in the store.
//
// The package is the collector: its configuration, the RPC client and the
// classification of its failures, the enumeration, the cross-check, the
// live count's subscription and publication (livecollect.go), the check
// command and the metrics. What it counts with lives in rooms of their
// own: services/holders/tally (the sets and counts), services/holders/wire
// (the requests' params and the decoding of the answers and
// notifications) and services/holders/follow (the live count between
// enumerations).
package holders

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/tokendata/tokendata/services/holders/follow"
	"github.com/tokendata/tokendata/services/holders/tally"
	"github.com/tokendata/tokendata/services/holders/wire"
	"github.com/tokendata/tokendata/shared/collector"
	"github.com/tokendata/tokendata/shared/config"
	"github.com/tokendata/tokendata/shared/contract"
)

// Collector enumerates the holders of one token on its interval.
type Collector struct {
	runner  *collector.Runner
	rpc     *rpcClient
	secret  config.Secret
	mint    string
	method  string
	cfg     Config
	log     *slog.Logger
	metrics *metrics

	mu      sync.Mutex
	program string // resolved token program id, once known

	// cross is the second holder source; nil when none is configured
	// (crosscheck.go).
	cross *crossCheck
	// live is the live count; nil without HOLDERS_LIVE (livecollect.go).
	live *liveState
}

// source is one holder source: an endpoint and how it is enumerated.
type source struct {
	rpc    *rpcClient
	method string
}

// New builds the holders collector of token from the common config
// (HOLDERS_RPC_URL through HoldersRPC, HOLDERS_METHOD, the holders
// timings), its own cfg and deps. deps.Store is required.
func New(common config.Common, token config.Token, cfg Config, deps collector.Deps) (*Collector, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if common.HoldersMethod != contract.HoldersMethodGPA && common.HoldersMethod != contract.HoldersMethodDAS {
		return nil, fmt.Errorf("HOLDERS_METHOD: %q is not %s or %s", common.HoldersMethod, contract.HoldersMethodGPA, contract.HoldersMethodDAS)
	}
	live, err := cfg.LiveOn(common.HoldersMethod)
	if err != nil {
		return nil, err
	}
	if err := config.CheckAddress(token.Mint); err != nil {
		return nil, fmt.Errorf("mint: %w", err)
	}
	if deps.Store == nil {
		return nil, errors.New("holders: deps.Store is required")
	}
	if deps.Store.Mint() != token.Mint {
		return nil, fmt.Errorf("holders: the store serves mint %s, the token is %s", deps.Store.Mint(), token.Mint)
	}
	timing := common.Timings()[contract.DomainHolders]
	if err := timing.Validate(); err != nil {
		return nil, fmt.Errorf("HOLDERS_REFRESH/HOLDERS_STALE_AFTER/HOLDERS_TTL: %w", err)
	}
	secret := common.HoldersRPC()
	if secret.Reveal() == "" {
		return nil, errors.New("HOLDERS_RPC_URL (or SOLANA_RPC_URL): missing")
	}
	log := deps.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("collector", contract.CollectorHolders)
	hc := deps.HTTPClient
	if hc == nil {
		hc = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	}
	c := &Collector{
		rpc: &rpcClient{url: secret.Reveal(), variable: RPCVariable(common), secret: secret, http: hc, gzip: cfg.Gzip,
			timeout: cfg.RPCTimeout, metrics: deps.Metrics},
		secret:  secret,
		mint:    token.Mint,
		method:  common.HoldersMethod,
		cfg:     cfg,
		log:     log,
		metrics: newMetrics(deps.Registry),
	}
	if cfg.CrossCheckRPCURL != "" {
		c.cross = &crossCheck{src: source{method: cfg.CrossCheckMethod,
			rpc: &rpcClient{url: cfg.CrossCheckRPCURL.Reveal(), variable: "HOLDERS_CROSSCHECK_RPC_URL", secret: cfg.CrossCheckRPCURL,
				http: hc, gzip: cfg.Gzip, timeout: cfg.RPCTimeout, metrics: deps.Metrics}}}
	}
	switch cfg.Program {
	case ProgramToken:
		c.program = contract.ProgramIDToken
	case ProgramToken2022:
		c.program = contract.ProgramIDToken2022
	}
	deps.Metrics.InitBehind(contract.CollectorHolders, 1, contract.DomainHolders)
	c.runner = &collector.Runner{
		Name:      contract.CollectorHolders,
		Store:     deps.Store,
		Metrics:   deps.Metrics,
		Log:       log,
		Simulated: deps.Simulated,
		Redactor:  config.NewRedactor(append(config.SecretsOf(common), config.SecretsOf(cfg)...)...),
		Watch:     common.CollectorWatch,
		Jobs: []collector.Job{{
			Domain: contract.DomainHolders, Upstream: contract.UpstreamSolanaRPC, Timing: timing,
			Poll: c.Enumerate,
		}},
	}
	c.initLive(common, live)
	return c, nil
}

// Run enumerates at once, then every HOLDERS_REFRESH, until ctx is done;
// with HOLDERS_LIVE it also keeps the subscription of the live count.
func (c *Collector) Run(ctx context.Context) error {
	if c.live == nil {
		return c.runner.Run(ctx)
	}
	var wg sync.WaitGroup
	wg.Go(func() { c.runLive(ctx) })
	err := c.runner.Run(ctx)
	wg.Wait()
	c.live.bg.Wait()
	return err
}

// RunOnce enumerates now (with retries), writes the document on success
// and the status record in every case; it returns the run's error.
func (c *Collector) RunOnce(ctx context.Context) error {
	return c.runner.RunOnce(ctx, contract.DomainHolders)
}

// Runner exposes the collector's runner (its status record).
func (c *Collector) Runner() *collector.Runner { return c.runner }

// Enumerate counts the holders once and returns the document, or a
// classified error (*collector.Error) without secrets.
func (c *Collector) Enumerate(ctx context.Context) (collector.Result, error) {
	var (
		res      collector.Result
		err      error
		answered bool
	)
	enumerated := true
	if c.live != nil {
		var lp livePoll
		lp, err = c.pollLive(ctx)
		res, answered, enumerated = lp.result, lp.answered, lp.enumerated
		if ce := (*collector.Error)(nil); errors.As(err, &ce) && ce.Kind == contract.ErrKindTooLarge {
			// The live tally keeps every account, the count only the
			// holders: the count may still fit.
			c.log.Warn("the live holder count does not fit HOLDERS_MAX_MEMORY_BYTES; this poll enumerates without it", "error", ce.Message)
			answered = false
		}
	}
	if !answered {
		res, err = c.scan(ctx)
		enumerated = true
	}
	if err == nil && c.cross != nil {
		res = c.crossCheck(ctx, res, enumerated)
	}
	if err != nil {
		c.metrics.progress.Set(0)
		if ce := (*collector.Error)(nil); errors.As(err, &ce) {
			if ce.Kind == contract.ErrKindUnsupported {
				c.metrics.unsupported.Set(1)
			}
			if ce.Kind == contract.ErrKindBehind {
				c.rpc.metrics.ObserveBehind(contract.CollectorHolders, contract.DomainHolders, 1)
			}
			out := *ce
			out.Message = config.Redact(out.Message, c.secret, c.cfg.CrossCheckRPCURL)
			out.Remedy = config.Redact(out.Remedy, c.secret, c.cfg.CrossCheckRPCURL)
			return collector.Result{}, &out
		}
		return collector.Result{}, err
	}
	return res, nil
}

// scan counts the holders with one enumeration of the primary source, as
// a poll without a live count does, and records its metrics and log line.
func (c *Collector) scan(ctx context.Context) (collector.Result, error) {
	started := time.Now()
	doc, err := c.count(ctx, source{rpc: c.rpc, method: c.method}, started)
	if err != nil {
		return collector.Result{}, err
	}
	dur := time.Since(started)
	doc.DurationSeconds = float64(dur.Round(time.Millisecond)) / float64(time.Second)
	c.metrics.done(doc, dur)
	c.log.Info("holders counted", "holders", doc.Holders, "token_accounts", doc.TokenAccounts,
		"non_zero_accounts", doc.NonZeroAccounts, "method", doc.Method, "slot", doc.Slot, "duration", dur.String())
	src := contract.Source{Name: contract.UpstreamSolanaRPC, Method: c.method, Slot: doc.Slot}
	if c.method == contract.HoldersMethodGPA {
		src.Commitment = c.cfg.Commitment
	}
	return collector.Result{Doc: doc, Source: src, Samples: contract.HoldersSamples(doc)}, nil
}

// count enumerates src once into a fresh owner set and returns its
// document (counts, method, queries and slot).
func (c *Collector) count(ctx context.Context, src source, started time.Time) (contract.Holders, error) {
	count := tally.NewCount()
	count.Limit(uint64(c.cfg.MaxAccounts), c.cfg.MaxMemoryBytes)
	var (
		doc contract.Holders
		err error
	)
	if src.method == contract.HoldersMethodDAS {
		doc, err = c.enumerateDAS(ctx, src.rpc, count, started)
	} else {
		doc, err = c.enumerateGPA(ctx, src.rpc, countInto(count), started)
	}
	if err != nil {
		return contract.Holders{}, err
	}
	if count.TokenAccounts == 0 {
		// A token in circulation has at least one account: none at all is
		// a wrong mint or program, or a node that lost its index, never 0.
		return contract.Holders{}, noAccounts(src.method)
	}
	doc.Holders, doc.TokenAccounts, doc.NonZeroAccounts = count.Holders(), count.TokenAccounts, count.NonZeroAccounts
	doc.Method = src.method
	return doc, nil
}

// RPCVariable is the variable that holds the holders collector's
// endpoint: HOLDERS_RPC_URL, or SOLANA_RPC_URL when that one is unset.
func RPCVariable(common config.Common) string {
	if common.HoldersRPCURL != "" {
		return "HOLDERS_RPC_URL"
	}
	return "SOLANA_RPC_URL"
}

// noAccounts is the failure of an enumeration that listed no account.
func noAccounts(method string) *collector.Error {
	return &collector.Error{Kind: contract.ErrKindInvalid,
		Message: method + ": the RPC node listed no token account of the mint",
		Remedy:  "check TOKEN_MINT and HOLDERS_PROGRAM (auto reads the mint's program), and that the RPC node indexes token accounts by mint"}
}

// decodeInto reads one getProgramAccounts answer into a tally and
// returns its context slot.
type decodeInto func(r io.Reader, progress func(accounts uint64)) (slot uint64, err error)

func countInto(c *tally.Count) decodeInto {
	return func(r io.Reader, progress func(uint64)) (uint64, error) {
		return wire.DecodeProgramAccounts(r, c, progress)
	}
}

// Anchor makes f's count live: it enumerates the mint's token accounts
// with getProgramAccounts into a new tally, on the socket f is subscribed
// to now, anchored at the oldest context slot of the queries (Token-2022
// takes two; every notification after that slot is applied on top, in
// order, so an account read at a later slot ends at its state after
// them), and hands it to f with the notifications buffered meanwhile. It
// returns the enumeration's figures (the document's counts, queries and
// slot) or why there is no anchor: no socket, one that ended during the
// enumeration (follow.ErrNotFollowing, with the enumeration's figures), an
// enumeration that failed.
func (c *Collector) Anchor(ctx context.Context, f *follow.Follower) (contract.Holders, error) {
	session, ok := f.Begin()
	if !ok {
		return contract.Holders{}, follow.ErrNotFollowing
	}
	l := f.Tally(0)
	doc, err := c.enumerateGPA(ctx, c.rpc, func(r io.Reader, progress func(uint64)) (uint64, error) {
		return wire.DecodeProgramAccountsLive(r, l, progress)
	}, time.Now())
	if err != nil {
		return contract.Holders{}, err
	}
	if l.TokenAccounts() == 0 {
		return contract.Holders{}, noAccounts(contract.HoldersMethodGPA)
	}
	l.AnchorAt(doc.Slot)
	doc.Holders, doc.TokenAccounts, doc.NonZeroAccounts = l.Holders(), l.TokenAccounts(), l.NonZeroAccounts()
	doc.Method = contract.HoldersMethodGPA
	if err := f.Anchor(session, l); err != nil {
		if errors.Is(err, follow.ErrNotFollowing) {
			return doc, err // the enumeration's figures stand as such
		}
		return contract.Holders{}, err
	}
	return doc, nil
}

func (c *Collector) enumerateGPA(ctx context.Context, rpc *rpcClient, decode decodeInto, started time.Time) (contract.Holders, error) {
	program, err := c.resolveProgram(ctx)
	if err != nil {
		return contract.Holders{}, err
	}
	doc := contract.Holders{Queries: []string{}}
	prog := c.newProgress(started)
	var min *uint64
	if env, ok := c.runner.Last(contract.DomainHolders); ok && env.Source.Slot > 0 {
		s := env.Source.Slot
		min = &s
	}
	for _, q := range wire.Queries(program, c.mint) {
		var slot uint64
		err := rpc.call(ctx, methodGPA, q.Params(c.cfg.Commitment, min), func(r io.Reader) error {
			var err error
			slot, err = decode(r, prog.report)
			return err
		})
		if err != nil {
			return contract.Holders{}, err
		}
		if min != nil && slot != 0 && slot < *min { // a node that ignored minContextSlot
			return contract.Holders{}, &collector.Error{Kind: contract.ErrKindBehind, Retry: true,
				Message: fmt.Sprintf("%s: the node answered from slot %d, before slot %d of the holders count last published; that count stays", methodGPA, slot, *min)}
		}
		if slot != 0 && (doc.Slot == 0 || slot < doc.Slot) {
			doc.Slot = slot // the oldest slot of the merged queries
		}
		doc.Queries = append(doc.Queries, q.Description)
	}
	return doc, nil
}

// RPC method names.
const (
	methodGPA         = "getProgramAccounts"
	methodDAS         = "getTokenAccounts"
	methodAccountInfo = "getAccountInfo"
)

// resolveProgram returns the token program of the mint: from
// HOLDERS_PROGRAM, or from the owner of the mint account (read once).
func (c *Collector) resolveProgram(ctx context.Context) (string, error) {
	c.mu.Lock()
	p := c.program
	c.mu.Unlock()
	if p != "" {
		return p, nil
	}
	var exists bool
	err := c.rpc.call(ctx, methodAccountInfo, wire.AccountOwnerParams(c.mint, c.cfg.Commitment), func(r io.Reader) error {
		var err error
		p, exists, err = wire.DecodeAccountOwner(r)
		return err
	})
	if err != nil {
		return "", err
	}
	if !exists {
		return "", collector.MintNotFound(methodAccountInfo, c.mint, c.rpc.variable)
	}
	switch p {
	case contract.ProgramIDToken, contract.ProgramIDToken2022:
	default:
		return "", collector.NotAMint(methodAccountInfo, c.mint, p, c.rpc.variable)
	}
	c.mu.Lock()
	c.program = p
	c.mu.Unlock()
	c.programResolved()
	c.log.Info("token program detected", "program", p)
	return p, nil
}
