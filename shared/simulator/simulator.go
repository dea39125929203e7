// Package simulator runs every upstream of the service for one token on
// loopback: a Solana RPC node with Helius DAS (package solanasim) and the
// DexScreener and GeckoTerminal APIs (package dexsim), from one seed. It is
// the upstream of demo mode (`make run`) and of end-to-end tests. Only
// standalone links it; no other production binary does.
package simulator

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/tokendata/tokendata/shared/simulator/dexsim"
	"github.com/tokendata/tokendata/shared/simulator/solanasim"
)

// Options describe the simulated token.
type Options struct {
	// Mint is the token's mint address.
	Mint string
	// Seed makes the scenario deterministic.
	Seed uint64
	// Program is Token or Token-2022 (Token-2022 by default: the zero
	// value, solanasim.ProgramToken, takes the default; set Classic for the
	// classic Token program).
	Program solanasim.Program
	// Classic simulates a mint of the classic Token program.
	Classic bool
	// Decimals of the mint (6 when zero and Decimals0 is false).
	Decimals uint8
	// Decimals0 makes a Decimals of zero mean 0 decimals.
	Decimals0 bool
	// Supply in base units (a value with fraction digits by default).
	Supply uint64
	// Accounts is the number of token accounts (5,000 by default).
	Accounts int
	// Name, Symbol and URI are the on-chain metadata.
	Name, Symbol, URI string
	// Live makes values move while it runs: the price drifts every
	// PriceEvery, and the supply grows every SupplyEvery (the mint
	// authority is active). Zero intervals disable each.
	PriceEvery, SupplyEvery time.Duration
	// RPCPort and DexPort are the ports of the Solana RPC node and of the
	// aggregators (0: ephemeral ones).
	RPCPort, DexPort int
	// Host is the address both listen on: empty for 127.0.0.1; "0.0.0.0"
	// for a simulator that other pods of a demo cluster reach.
	Host string
	// NoMintAuthority leaves the mint without a mint authority (a fixed
	// supply); SupplyEvery then mints nothing.
	NoMintAuthority bool
	// Nodes is the number of ledger nodes (each its own port, over the
	// one ledger, with a fault of its own: Sim.Nodes) for SOLANA_RPC_URLS;
	// 0 starts none.
	Nodes int
	// NodePort is the port of ledger node 1; node i listens on
	// NodePort+i-1 (0: ephemeral ports), so that a cluster's Service can
	// name them.
	NodePort int
	// Slot is the ledger's first slot; 0 takes the clock's (slotAt), so
	// that a simulator started again goes on from where its predecessor
	// was. A test whose output names slots sets it, to read the same
	// slots on every run.
	Slot uint64
}

// MaxNodes bounds Options.Nodes.
const MaxNodes = 9

func (o *Options) defaults() {
	o.Program = solanasim.ProgramToken2022
	if o.Classic {
		o.Program = solanasim.ProgramToken
	}
	if o.Decimals == 0 && !o.Decimals0 {
		o.Decimals = 6
	}
	if o.Supply == 0 {
		o.Supply = 987_654_321_123_456 // 987,654,321.123456 at 6 decimals
	}
	if o.Accounts == 0 {
		o.Accounts = 5000
	}
	if o.Name == "" {
		o.Name, o.Symbol, o.URI = "Demo Token", "DEMO", "https://example.com/demo-token.json"
	}
}

// Sim is a running simulator.
type Sim struct {
	RPC *solanasim.Server
	Dex *dexsim.Server
	// RPCURL serves Solana JSON-RPC and Helius DAS.
	RPCURL string
	// DexScreenerURL and GeckoTerminalURL are the aggregator base URLs.
	DexScreenerURL, GeckoTerminalURL string
	// OfficialPairs are the scenario's official pairs, as a token file
	// would declare them.
	OfficialPairs []OfficialPair
	// Nodes are the ledger nodes of Options.Nodes, node 1 first, and
	// NodeURLs their URLs (SOLANA_RPC_URLS, comma-joined).
	Nodes    []*solanasim.Node
	NodeURLs []string

	opts   Options
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// OfficialPair is one official pair of the scenario.
type OfficialPair struct {
	Address, Dex, Base, Quote string
	// URL is the pair's page at the aggregator.
	URL string
}

// MintAuthority is the simulated token's mint authority.
const MintAuthority = "9xQeWvG816bUx9EPjHmaT23yvVM2ZWbrrpZb9PusVFin"

// Start starts both simulators for the token of opts, until ctx is done
// or Close is called.
func Start(ctx context.Context, opts Options) (*Sim, error) {
	opts.defaults()
	if opts.Mint == "" {
		return nil, errors.New("simulator: Options.Mint is required")
	}
	ctx, cancel := context.WithCancel(ctx)
	first := opts.Slot
	if first == 0 {
		first = slotAt(time.Now())
	}
	s := &Sim{RPC: solanasim.New(solanasim.WithSlot(first)), Dex: dexsim.New(), opts: opts, cancel: cancel}
	authority := MintAuthority
	if opts.NoMintAuthority {
		authority, opts.SupplyEvery = "", 0
	}
	tok := solanasim.Token{
		Mint: opts.Mint, Program: opts.Program, Decimals: opts.Decimals, Supply: opts.Supply,
		MintAuthority: authority,
		Metadata:      solanasim.MetadataToken2022,
		Name:          opts.Name, Symbol: opts.Symbol, URI: opts.URI, UpdateAuthority: MintAuthority,
		Holders: solanasim.Holders{Accounts: opts.Accounts, Seed: opts.Seed, MultiAccountShare: 0.3,
			AccountsPerOwner: 3, ZeroShare: 0.1, ExtendedShare: 0.5},
	}
	if opts.Program == solanasim.ProgramToken {
		tok.Metadata = solanasim.MetadataMetaplex
		tok.Holders.ExtendedShare = 0
	}
	if err := s.RPC.AddToken(tok); err != nil {
		cancel()
		return nil, fmt.Errorf("simulator: %w", err)
	}
	s.RPC.HandleControl(FaultsControl, http.HandlerFunc(s.serveFaults))
	s.Dex.LoadScenario(opts.Mint, opts.Seed)
	// One identity on every upstream: the aggregators name the token as
	// its on-chain metadata does.
	s.Dex.Update(opts.Mint, func(m *dexsim.Market) { m.Token.Name, m.Token.Symbol = opts.Name, opts.Symbol })
	market, _ := s.Dex.Market(opts.Mint)
	for _, p := range market.Pairs {
		if !p.Official {
			continue
		}
		base, quote := p.BaseQuote(market.Token)
		s.OfficialPairs = append(s.OfficialPairs, OfficialPair{Address: p.Address, Dex: p.Dex,
			Base: base.Symbol, Quote: quote.Symbol, URL: p.URL()})
	}
	var err error
	if s.RPCURL, err = s.RPC.StartOn(ctx, opts.Host, opts.RPCPort); err != nil {
		cancel()
		return nil, err
	}
	if _, err = s.Dex.StartOn(ctx, opts.Host, opts.DexPort); err != nil {
		cancel()
		_ = s.RPC.Close()
		return nil, err
	}
	s.DexScreenerURL, s.GeckoTerminalURL = s.Dex.DexScreenerURL(), s.Dex.GeckoTerminalURL()
	if opts.Nodes < 0 || opts.Nodes > MaxNodes {
		s.Close()
		return nil, fmt.Errorf("simulator: Nodes %d: 0 to %d", opts.Nodes, MaxNodes)
	}
	if opts.NodePort < 0 || opts.NodePort+opts.Nodes-1 > 65535 {
		s.Close()
		return nil, fmt.Errorf("simulator: NodePort %d: the %d ledger nodes' ports run past 65535", opts.NodePort, opts.Nodes)
	}
	for i := range opts.Nodes {
		n := s.RPC.NewNode()
		port := 0
		if opts.NodePort > 0 {
			port = opts.NodePort + i
		}
		u, err := n.StartOn(ctx, opts.Host, port)
		if err != nil {
			s.Close()
			return nil, err
		}
		s.Nodes, s.NodeURLs = append(s.Nodes, n), append(s.NodeURLs, u)
	}
	if opts.PriceEvery > 0 {
		s.wg.Go(func() { s.Dex.Drift(ctx, opts.Mint, opts.Seed, opts.PriceEvery, 2) })
	}
	if opts.SupplyEvery > 0 {
		s.wg.Go(func() { s.growSupply(ctx) })
	}
	return s, nil
}

// SetOfficialPairs gives the scenario's official pairs the addresses a
// token file declares, in order (the simulated pools of a real token file),
// so that a check or a service run against the simulator finds them. It
// returns the official pairs as they now are.
func (s *Sim) SetOfficialPairs(addresses []string) []OfficialPair {
	s.Dex.Update(s.opts.Mint, func(m *dexsim.Market) {
		i := 0
		for j := range m.Pairs {
			if m.Pairs[j].Official && i < len(addresses) {
				m.Pairs[j].Address = addresses[i]
				i++
			}
		}
	})
	market, _ := s.Dex.Market(s.opts.Mint)
	s.OfficialPairs = s.OfficialPairs[:0]
	for _, p := range market.Pairs {
		if p.Official {
			base, quote := p.BaseQuote(market.Token)
			s.OfficialPairs = append(s.OfficialPairs, OfficialPair{Address: p.Address, Dex: p.Dex,
				Base: base.Symbol, Quote: quote.Symbol, URL: p.URL()})
		}
	}
	return s.OfficialPairs
}

// growSupply mints a little (0.001 % of the supply, plus a fraction) every
// SupplyEvery, as a token with an active mint authority may.
func (s *Sim) growSupply(ctx context.Context) {
	t := time.NewTicker(s.opts.SupplyEvery)
	defer t.Stop()
	supply := s.opts.Supply
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			supply += supply/100_000 + 123
			before := s.RPC.Slot()
			_ = s.RPC.SetSupply(s.opts.Mint, supply) // in a slot of its own
			if to, at := afterMint(before, time.Now()), s.RPC.Slot(); to > at {
				s.RPC.BumpSlot(to - at)
			}
		}
	}
}

// afterMint is the slot the ledger moves on to with a mint made at now
// while it was at slot before: 150 slots on (past every commitment's lag,
// so that the mint is final at once), or the clock's slot (slotAt) when
// that is further.
func afterMint(before uint64, now time.Time) uint64 { return max(before+150, slotAt(now)) }

// slotAt is the slot at t of a cluster that was at slot 300,000,000 at
// slotEpoch and makes one every 400 ms (Solana's target). The scenario's
// ledger starts there, and minting once a minute or less often (the
// chart's and make run's cadence) it stays that far ahead of the clock, so
// that a simulator started again (a pod moved to another node, a process
// restarted) goes on from where the one before it was rather than from a
// fixed slot: the collectors refuse an answer older than the slot they
// last published, and polled a restarted simulator in vain until it
// caught up with its predecessor.
func slotAt(t time.Time) uint64 {
	return 300_000_000 + uint64(max(0, t.Sub(slotEpoch))/(400*time.Millisecond))
}

// slotEpoch is when slotAt is 300,000,000.
var slotEpoch = time.Date(2024, time.October, 1, 0, 0, 0, 0, time.UTC)

// Holders is the exact holder count of the simulated token.
func (s *Sim) Holders() solanasim.Truth {
	t, _ := s.RPC.Truth(s.opts.Mint)
	return t
}

// Market is the aggregator ground truth of the simulated token.
func (s *Sim) Market() dexsim.Truth { return s.Dex.Truth(s.opts.Mint) }

// Close stops both simulators and waits for their goroutines.
func (s *Sim) Close() {
	s.cancel()
	for _, n := range s.Nodes {
		_ = n.Close()
	}
	_ = s.RPC.Close()
	_ = s.Dex.Close()
	s.wg.Wait()
}
