// Package supply is the supply collector: it reads the token's exact
// on-chain supply, its mint and freeze authorities and its on-chain
// identity from the Solana RPC (through solana-go), and writes the supply
// and metadata documents of the contract, each on its own interval.
//
// Every figure is validated before it is written; a failed or invalid
// poll keeps the last good document and is recorded in the collector's
// status record (shared/collector.Runner). Supply is never a float: the
// raw u64 string of getTokenSupply is carried as is.
package supply

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/gagliardetto/solana-go"

	"github.com/tokendata/tokendata/shared/amount"
	"github.com/tokendata/tokendata/shared/collector"
	"github.com/tokendata/tokendata/shared/config"
	"github.com/tokendata/tokendata/shared/contract"
)

// Warning codes of the supply and metadata documents.
const (
	WarnTotalAboveMax         = contract.WarnTotalAboveMax
	WarnMintAuthorityActive   = "mint_authority_active"
	WarnFreezeAuthorityActive = "freeze_authority_active"
	WarnDecimalsMismatch      = "decimals_mismatch"
	WarnPermanentDelegate     = "permanent_delegate"
	WarnUIAmountAdjusted      = "ui_amount_adjusted"
	WarnTransferFee           = "transfer_fee"
	WarnNameMismatch          = "name_mismatch"
	WarnSymbolMismatch        = "symbol_mismatch"
	WarnMetadataMissing       = "metadata_missing"
)

// Collector is the supply collector of one token.
type Collector struct {
	token    config.Token
	cfg      Config
	mint     solana.PublicKey
	metaPDA  solana.PublicKey
	maxWhole string
	// nodes are the ledger nodes, node 1 first (SOLANA_RPC_URLS).
	nodes   []*ledger
	quorum  int
	persist time.Duration
	runner  *collector.Runner
	metrics *collector.Metrics
	log     *slog.Logger

	// aboveMax is whether the last supply poll found the total above the
	// maximum supply: the log says so once per change, not every poll.
	mu       sync.Mutex
	aboveMax bool
	// ahead are the nodes seen ahead of the quorum (compare); lastState
	// the last cross-check's state, logged once per change.
	ahead     map[int]aheadSeen
	lastState string

	// subs are the PubSub subscriptions, one per node (subscribe.go);
	// subMu guards their records and the chase's target: the highest
	// notified slot (pushSlot) and when it was last notified (pushAt).
	subs     []*nodeSub
	subMu    sync.Mutex
	pushSlot uint64
	pushAt   time.Time
	pushes   chan struct{}
	// noted asks recordNotifications to write the status record.
	noted chan struct{}
}

// New builds the collector of token from the common configuration (the
// RPC URL and the supply and metadata timings), its own Config and the
// shared dependencies. deps.Store is required; a nil deps.Log discards.
func New(common config.Common, token config.Token, cfg Config, deps collector.Deps) (*Collector, error) {
	cfg = cfg.withWSDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if deps.Store == nil {
		return nil, errors.New("supply: deps.Store is required")
	}
	mint, err := solana.PublicKeyFromBase58(token.Mint)
	if err != nil {
		return nil, fmt.Errorf("mint: %q is not a base58 address", token.Mint)
	}
	if deps.Store.Mint() != token.Mint {
		return nil, fmt.Errorf("supply: the store serves mint %s, the token is %s", deps.Store.Mint(), token.Mint)
	}
	// The maximum supply is the issuer's statement, never a default.
	var maxWhole string
	switch {
	case token.MaxSupply == "":
		return nil, errors.New("max_supply: missing: the token must state its maximum supply in whole tokens, or none")
	case token.MaxSupplyDisclosed():
		if maxWhole, err = token.MaxSupplyRaw(0); err != nil {
			return nil, fmt.Errorf("max_supply: %q is not a whole number of tokens, nor none", token.MaxSupply)
		}
	}
	pda, _, err := solana.FindTokenMetadataAddress(mint)
	if err != nil {
		return nil, fmt.Errorf("supply: metadata address of %s: %w", token.Mint, err)
	}
	timings := common.Timings()
	for _, d := range []contract.Domain{contract.DomainSupply, contract.DomainMetadata} {
		if err := timings[d].Validate(); err != nil {
			return nil, fmt.Errorf("%s timing: %w", d, err)
		}
	}
	log := deps.Log
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	log = log.With("collector", contract.CollectorSupply)
	urls := common.LedgerRPCs()
	quorum, err := cfg.quorumOf(len(urls))
	if err != nil {
		return nil, err
	}
	c := &Collector{
		token: token, cfg: cfg, mint: mint, metaPDA: pda, maxWhole: maxWhole, log: log,
		quorum: quorum, metrics: deps.Metrics, lastState: contract.CrossCheckAgreed,
		// A node ahead of the quorum is disagreeing once it stays so over
		// two polls: retries within one poll do not count.
		persist: timings[contract.DomainSupply].Refresh / 2,
	}
	for i, u := range urls {
		c.nodes = append(c.nodes, newLedger(i+1, u, deps.HTTPClient, cfg, deps.Metrics, log))
	}
	deps.Metrics.InitBehind(contract.CollectorSupply, len(urls), contract.DomainSupply, contract.DomainMetadata)
	c.runner = &collector.Runner{
		Name:      contract.CollectorSupply,
		Store:     deps.Store,
		Metrics:   deps.Metrics,
		Log:       log,
		Backoff:   collector.Backoff{Attempts: cfg.RetryAttempts, Base: cfg.RetryBase, Max: 30 * cfg.RetryBase},
		Simulated: deps.Simulated,
		Redactor:  config.NewRedactor(append(config.SecretsOf(common), common.LedgerWSs()...)...),
		Watch:     common.CollectorWatch,
		Jobs: []collector.Job{
			{Domain: contract.DomainSupply, Upstream: contract.UpstreamSolanaRPC, Timing: timings[contract.DomainSupply], Poll: c.pollSupply},
			{Domain: contract.DomainMetadata, Upstream: contract.UpstreamSolanaRPC, Timing: timings[contract.DomainMetadata], Poll: c.pollMetadata},
		},
	}
	c.pushes = make(chan struct{}, 1)
	c.noted = make(chan struct{}, 1)
	c.initSubscriptions(common)
	return c, nil
}

// Run polls both domains at once, then each on its own interval, until
// ctx is done. Upstream failures are recorded, never returned.
func (c *Collector) Run(ctx context.Context) error {
	defer c.Close()
	var wg sync.WaitGroup
	wg.Go(func() { c.runSubscriptions(ctx) })
	defer wg.Wait()
	return c.runner.Run(ctx)
}

// RunOnce polls one domain now (with retries), writes its document on
// success and the status record in every case, and returns the poll's
// classified error (*collector.Error) or nil.
func (c *Collector) RunOnce(ctx context.Context, d contract.Domain) error {
	return c.runner.RunOnce(ctx, d)
}

// Runner returns the collector's runner (for its status record).
func (c *Collector) Runner() *collector.Runner { return c.runner }

// Close releases the RPC client's idle connections (Run does it itself
// when it returns).
func (c *Collector) Close() {
	for _, l := range c.nodes {
		l.close()
	}
}

// pollSupply reads every ledger node, compares their answers (compare)
// and builds the supply document of the figure a quorum confirms.
func (c *Collector) pollSupply(ctx context.Context) (collector.Result, error) {
	x, _, err := c.crossCheck(ctx)
	if err != nil {
		return collector.Result{}, err
	}
	w := x.winner.doc
	doc, err := c.supplyDoc(w.sup.Amount, w.sup, w.ownerID, w.program, w.mint)
	if err != nil {
		return collector.Result{}, err
	}
	doc.Slot = x.cc.Slot
	cc := x.cc
	doc.CrossCheck = &cc
	c.logAboveMax(doc)
	return collector.Result{Doc: doc, Source: contract.Source{
		Name: contract.UpstreamSolanaRPC, Method: methodGetTokenSupply, Commitment: c.cfg.Commitment, Slot: doc.Slot,
	}, Samples: contract.SupplySamples(doc), Ledger: &cc}, nil
}

// programName checks the mint's owner program. Another owner, once
// getTokenSupply answered for the mint, is an implausible answer; before
// it, the configured address is not a mint (collector.NotAMint).
func (c *Collector) programName(owner string, supplyAnswered bool) (string, error) {
	switch owner {
	case contract.ProgramIDToken:
		return contract.ProgramToken, nil
	case contract.ProgramIDToken2022:
		return contract.ProgramToken2022, nil
	}
	if supplyAnswered {
		return "", invalidf("the mint account is owned by %s, not by the Token or Token-2022 program", owner)
	}
	return "", collector.NotAMint(methodGetAccountInfo, c.mint.String(), owner, rpcVariable)
}

// supplyDoc builds the supply document with its methodology and
// disclosures.
func (c *Collector) supplyDoc(total string, sup tokenSupply, programID, program string, m mintState) (contract.Supply, error) {
	var maxRaw string // empty: the issuer discloses no maximum supply
	if c.maxWhole != "" {
		var err error
		if maxRaw, err = c.token.MaxSupplyRaw(m.Decimals); err != nil {
			return contract.Supply{}, &collector.Error{Kind: contract.ErrKindConfig,
				Message: fmt.Sprintf("max_supply %q cannot be expressed with %d decimals", c.token.MaxSupply, m.Decimals)}
		}
	}
	doc := contract.Supply{
		Decimals:        m.Decimals,
		TotalRaw:        total,
		CirculatingRaw:  total,
		MaxRaw:          maxRaw,
		TokenProgram:    program,
		TokenProgramID:  programID,
		MintAuthority:   m.MintAuthority,
		FreezeAuthority: m.FreezeAuthority,
		Slot:            sup.Slot,
		Commitment:      c.cfg.Commitment,
		Methodology:     c.methodology(),
		Warnings:        []contract.Warning{},
	}
	warn := func(code, format string, a ...any) {
		doc.Warnings = append(doc.Warnings, contract.Warning{Code: code, Message: fmt.Sprintf(format, a...)})
	}
	if maxRaw != "" && amount.Compare(total, maxRaw) > 0 {
		warn(WarnTotalAboveMax, "The on-chain total supply %s is above the disclosed maximum supply %s.",
			amount.MustFormat(total, m.Decimals), amount.MustFormat(c.maxWhole, 0))
	}
	if m.MintAuthority != nil {
		warn(WarnMintAuthorityActive, "The mint authority %s is still set: the supply can still grow.", *m.MintAuthority)
	}
	if m.FreezeAuthority != nil {
		warn(WarnFreezeAuthorityActive, "The freeze authority %s is set: it can freeze any holder's token account.", *m.FreezeAuthority)
	}
	if c.token.Decimals != nil && *c.token.Decimals != m.Decimals {
		warn(WarnDecimalsMismatch, "The token configuration states %d decimals, the ledger reports %d; the ledger's are used.",
			*c.token.Decimals, m.Decimals)
	}
	if _, ok := m.extension(extPermanentDeleg); ok {
		warn(WarnPermanentDelegate, "The mint has a Token-2022 permanent delegate: it can transfer or burn tokens from any account.")
	}
	_, interest := m.extension(extInterestBearing)
	_, scaled := m.extension(extScaledUIAmount)
	if interest || scaled {
		warn(WarnUIAmountAdjusted, "The mint has a Token-2022 interest-bearing or scaled UI amount extension: wallets may display amounts that differ from the raw supply shown here.")
	}
	if _, ok := m.extension(extTransferFee); ok {
		warn(WarnTransferFee, "The mint has a Token-2022 transfer fee: transfers withhold part of the amount.")
	}
	return doc, nil
}

// logAboveMax logs, once per change rather than every poll, that the
// on-chain total went above the configured maximum supply (at WARN: a
// published figure is wrong) or came back within it.
func (c *Collector) logAboveMax(doc contract.Supply) {
	var w *contract.Warning
	for i := range doc.Warnings {
		if doc.Warnings[i].Code == WarnTotalAboveMax {
			w = &doc.Warnings[i]
		}
	}
	c.mu.Lock()
	changed := (w != nil) != c.aboveMax
	c.aboveMax = w != nil
	c.mu.Unlock()
	switch {
	case !changed:
	case w != nil:
		c.log.Warn("the on-chain total supply is above the configured maximum supply; check max_supply in the token file",
			"warning", WarnTotalAboveMax, "message", w.Message, "total_raw", doc.TotalRaw, "max_raw", doc.MaxRaw)
	default:
		c.log.Info("the on-chain total supply is within the configured maximum supply again",
			"total_raw", doc.TotalRaw, "max_raw", doc.MaxRaw)
	}
}

// methodology explains each figure and states the disclosure rules of
// the service (README, Endpoints).
func (c *Collector) methodology() contract.Methodology {
	maxSupply := "The token's issuer discloses no maximum supply: none is published, and no fully diluted valuation is computed."
	maxRule := "No maximum supply is disclosed."
	if c.maxWhole != "" {
		maxText := groupThousands(c.maxWhole)
		maxSupply = "The disclosed maximum supply of " + maxText + " tokens, from the token's official configuration. " +
			"The ledger enforces it only once the mint authority is disabled; the mint_authority_active warning says when it is not."
		maxRule = "Disclosed maximum supply is " + maxText + " tokens."
	}
	return contract.Methodology{
		TotalSupply: "The current on-chain minted supply, read from the Solana ledger with the getTokenSupply RPC method at " +
			c.cfg.Commitment + " commitment: the mint's supply in base units, divided by 10^decimals, exactly (never through a floating-point number). Burned tokens are no longer part of it.",
		CirculatingSupply: "Equal to the total supply: every minted token is counted as circulating, and no wallet balance is excluded.",
		MaxSupply:         maxSupply,
		Rules: []string{
			"All minted tokens are in circulation, so circulating supply equals current on-chain total minted supply.",
			"No team, treasury, vesting, locked or burn wallet balance is excluded from circulating supply.",
			maxRule,
		},
	}
}

// groupThousands writes a whole number with comma separators, for prose.
func groupThousands(digits string) string {
	var b strings.Builder
	for i, r := range digits {
		if i > 0 && (len(digits)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// pollMetadata reads the on-chain identity: the Token-2022 TokenMetadata
// extension of the mint, else the Metaplex Token Metadata account.
//
// It asks the nodes in order, at the slot of the metadata last published
// or after: the first that answers is read; one behind is skipped (and
// counted).
func (c *Collector) pollMetadata(ctx context.Context) (collector.Result, error) {
	min, _ := c.lastPublished(contract.DomainMetadata)
	var first error
	behind := 0
	for _, l := range c.nodes {
		res, err := c.pollMetadataOn(ctx, l, min)
		var be *behindError
		switch {
		case err == nil:
			return res, nil
		case ctx.Err() != nil:
			return collector.Result{}, ctx.Err()
		case errors.As(err, &be):
			behind++
			c.metrics.ObserveBehind(contract.CollectorSupply, contract.DomainMetadata, l.node)
		case first == nil:
			first = err
		}
	}
	if first != nil {
		return collector.Result{}, first
	}
	return collector.Result{}, &collector.Error{Kind: contract.ErrKindBehind, Retry: true,
		Message: fmt.Sprintf("%d of %d ledger nodes are behind slot %d, the slot of the on-chain metadata last published; it stays", behind, len(c.nodes), min),
		Remedy:  "wait for the nodes to catch up; a node that stays behind should be replaced in SOLANA_RPC_URLS"}
}

// pollMetadataOn reads the on-chain identity from one node.
func (c *Collector) pollMetadataOn(ctx context.Context, l *ledger, min uint64) (collector.Result, error) {
	acc, found, err := l.getAccount(ctx, c.mint, min)
	if err != nil {
		return collector.Result{}, err
	}
	if !found {
		return collector.Result{}, collector.MintNotFound(methodGetAccountInfo, c.mint.String(), rpcVariable)
	}
	program, err := c.programName(acc.Owner, false)
	if err != nil {
		return collector.Result{}, err
	}
	m, err := decodeMint(acc.Data, program == contract.ProgramToken2022)
	if err != nil {
		return collector.Result{}, invalidf("mint account %s: %v", c.mint, err)
	}
	src := contract.Source{Name: contract.UpstreamSolanaRPC, Method: methodGetAccountInfo, Commitment: c.cfg.Commitment, Slot: acc.Slot}

	var on *contract.OnChainMetadata
	if v, ok := m.extension(extTokenMetadata); ok {
		id, err := parseTokenMetadata(v)
		if err != nil {
			return collector.Result{}, invalidf("token metadata extension of %s: %v", c.mint, err)
		}
		on = &contract.OnChainMetadata{Name: id.Name, Symbol: id.Symbol, URI: id.URI,
			Source: contract.MetadataSourceToken2022, Address: c.mint.String(), UpdateAuthority: id.UpdateAuthority}
	} else {
		md, found, err := l.getAccount(ctx, c.metaPDA, min)
		if err != nil {
			return collector.Result{}, err
		}
		if found {
			if md.Owner != solana.TokenMetadataProgramID.String() {
				return collector.Result{}, invalidf("the metadata account %s is owned by %s, not by the Token Metadata program", c.metaPDA, md.Owner)
			}
			id, err := parseMetaplex(md.Data)
			if err != nil {
				return collector.Result{}, invalidf("metadata account %s: %v", c.metaPDA, err)
			}
			if id.Mint != c.mint.String() {
				return collector.Result{}, invalidf("metadata account %s belongs to mint %s, not %s", c.metaPDA, id.Mint, c.mint)
			}
			on = &contract.OnChainMetadata{Name: id.Name, Symbol: id.Symbol, URI: id.URI,
				Source: contract.MetadataSourceMetaplex, Address: c.metaPDA.String(), UpdateAuthority: id.UpdateAuthority}
		}
	}
	return collector.Result{Doc: c.metadataDoc(on), Source: src}, nil
}

// metadataDoc cross-checks the on-chain identity with the official one.
func (c *Collector) metadataDoc(on *contract.OnChainMetadata) contract.Metadata {
	doc := contract.Metadata{OnChain: on, Warnings: []contract.Warning{}}
	if on == nil {
		doc.Warnings = append(doc.Warnings, contract.Warning{Code: WarnMetadataMissing,
			Message: "The ledger holds no metadata for this mint (no Token-2022 metadata extension, no Metaplex metadata account): wallets and explorers cannot show its name."})
		return doc
	}
	if off := strings.TrimSpace(c.token.Name); off != "" && strings.TrimSpace(on.Name) != off {
		doc.Warnings = append(doc.Warnings, contract.Warning{Code: WarnNameMismatch,
			Message: fmt.Sprintf("The on-chain name %q differs from the official name %q.", on.Name, off)})
	}
	if off := strings.TrimSpace(c.token.Symbol); off != "" && strings.TrimSpace(on.Symbol) != off {
		doc.Warnings = append(doc.Warnings, contract.Warning{Code: WarnSymbolMismatch,
			Message: fmt.Sprintf("The on-chain symbol %q differs from the official symbol %q.", on.Symbol, off)})
	}
	return doc
}
