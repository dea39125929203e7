package standalone

import (
	"context"
	"fmt"
	"io"
	"math/big"
	"strconv"
	"strings"

	"github.com/tokendata/tokendata/shared/amount"
	"github.com/tokendata/tokendata/shared/config"
	"github.com/tokendata/tokendata/shared/simulator"
	"github.com/tokendata/tokendata/shared/simulator/fault"
	"github.com/tokendata/tokendata/shared/simulator/solanasim"
)

// SimulateOptions are the flags of `standalone simulate`.
type SimulateOptions struct {
	// Sim is the simulated token's shape and the ports (Mint is set by
	// Simulate).
	Sim simulator.Options
	// Mint is --mint: the mint to simulate ("": TOKEN_MINT, the token
	// file's, or the demo mint).
	Mint string
	// Faults are injected at start, each on its route.
	Faults []fault.Spec
	// NameSet and SymbolSet say that Sim.Name and Sim.Symbol were given:
	// they then win over the token file's.
	NameSet, SymbolSet bool
	// NodeFaults are the faults of the ledger nodes of Sim.Nodes
	// (--fault nodeN=...).
	NodeFaults []simulator.NodeFaultSpec
}

// DefaultSimulateOptions are the demo's: a live Token-2022 token of 5,000
// accounts.
func DefaultSimulateOptions() SimulateOptions {
	o := SimulateOptions{Sim: DemoSim}
	o.Sim.Decimals = 6
	o.Sim.Name, o.Sim.Symbol = "Demo Token", "DEMO"
	return o
}

// Simulate runs only the simulator (Solana RPC with DAS, DexScreener and
// GeckoTerminal) for one token and prints the variables that point the
// services at it, until ctx is done. It lets the separate services (or a
// cluster) and `check` run against simulated upstreams.
//
// The token is the token file's when TOKEN_CONFIG is set: its mint, name,
// symbol, decimals and official pairs are simulated, and TOKEN_CONFIG is
// printed rather than a TOKEN_MINT that would override the file's mint. A
// --mint that differs from the file's is refused; a TOKEN_MINT that does is
// simulated (the services would serve it) with a warning on warn.
func Simulate(ctx context.Context, c config.Common, o SimulateOptions, out, warn io.Writer) error {
	so := o.Sim
	var (
		mint      string
		file      *config.Token
		maxSupply = c.TokenMaxSupply
	)
	if c.TokenConfig != "" {
		t, err := config.LoadToken(c.TokenConfig, "", c.TokenMaxSupply)
		if err != nil {
			return err
		}
		file = &t
		if mint, err = mintOfFile(c, o.Mint, t, warn); err != nil {
			return err
		}
		so = withTokenFile(so, o, t)
		maxSupply = t.MaxSupply
	} else {
		var err error
		if mint, err = mintWithoutFile(c, o.Mint); err != nil {
			return err
		}
		if maxSupply == "" {
			maxSupply = config.DemoMaxSupply
		}
	}
	if err := config.CheckAddress(mint); err != nil {
		return fmt.Errorf("mint: %w", err)
	}
	so.Mint = mint
	if so.Decimals > 18 {
		return fmt.Errorf("--decimals %d: at most 18", so.Decimals)
	}
	so.Supply = supplyWithin(so, maxSupply)
	if err := checkNodes(so, o.NodeFaults); err != nil {
		return err
	}
	sim, err := simulator.Start(ctx, so)
	if err != nil {
		return err
	}
	defer sim.Close()
	if err := setPairsAndFaults(sim, file, o); err != nil {
		return err
	}
	var b strings.Builder
	writeSimHeader(&b, so, o)
	writeSimVariables(&b, c, sim, file, mint, maxSupply)
	_, _ = io.WriteString(out, b.String())
	<-ctx.Done()
	return nil
}

// mintOfFile is the mint simulated for token file t: the file's, or
// TOKEN_MINT (with a warning on warn) when it differs, since the services
// would serve it. A --mint (given) that differs from the file's is
// refused.
func mintOfFile(c config.Common, given string, t config.Token, warn io.Writer) (string, error) {
	if given != "" && given != t.Mint {
		return "", fmt.Errorf("--mint %s differs from the mint %s of the token file (TOKEN_CONFIG=%s): "+
			"drop --mint to simulate the file's token, or unset TOKEN_CONFIG to simulate another mint", given, t.Mint, c.TokenConfig)
	}
	mint := t.Mint
	if c.TokenMint != "" && c.TokenMint != t.Mint {
		_, _ = fmt.Fprintf(warn, "simulate: warning: TOKEN_MINT=%s overrides the mint %s of the token file: the services will serve %s, so it is the one simulated; unset TOKEN_MINT to serve the file's mint\n",
			c.TokenMint, t.Mint, c.TokenMint)
		mint = c.TokenMint
	}
	return mint, nil
}

// withTokenFile gives so the token file's name and symbol (unless the
// flags gave them) and decimals.
func withTokenFile(so simulator.Options, o SimulateOptions, t config.Token) simulator.Options {
	if !o.NameSet && t.Name != "" {
		so.Name = t.Name
	}
	if !o.SymbolSet && t.Symbol != "" {
		so.Symbol = t.Symbol
	}
	if t.Decimals != nil {
		so.Decimals, so.Decimals0 = *t.Decimals, *t.Decimals == 0
	}
	return so
}

// mintWithoutFile is the mint simulated without a token file: --mint
// (given), TOKEN_MINT or the demo mint; a --mint and a TOKEN_MINT that
// differ are refused.
func mintWithoutFile(c config.Common, given string) (string, error) {
	switch {
	case given != "" && c.TokenMint != "" && given != c.TokenMint:
		return "", fmt.Errorf("--mint %s differs from TOKEN_MINT=%s: give one", given, c.TokenMint)
	case given != "":
		return given, nil
	case c.TokenMint != "":
		return c.TokenMint, nil
	default:
		return config.DemoMint, nil
	}
}

// setPairsAndFaults gives the started simulator the token file's official pairs and
// the faults of o.
func setPairsAndFaults(sim *simulator.Sim, file *config.Token, o SimulateOptions) error {
	if file != nil && len(file.OfficialPairs) > 0 {
		addrs := make([]string, len(file.OfficialPairs))
		for i, p := range file.OfficialPairs {
			addrs[i] = p.Address
		}
		sim.SetOfficialPairs(addrs)
	}
	for _, f := range o.Faults {
		if err := sim.InjectFault(f); err != nil {
			return fmt.Errorf("--fault %w", err)
		}
	}
	for _, nf := range o.NodeFaults {
		if err := sim.SetNodeFault(nf); err != nil {
			return fmt.Errorf("--fault %w", err)
		}
	}
	return nil
}

// writeSimHeader writes the comment lines that say what is simulated: the
// token and the faults.
func writeSimHeader(b *strings.Builder, so simulator.Options, o SimulateOptions) {
	program := "Token-2022"
	if so.Classic {
		program = "Token"
	}
	fmt.Fprintf(b, "# tokendata simulator: mint %s (%s program, %d decimals, %d token accounts, name %q, symbol %q)\n",
		so.Mint, program, so.Decimals, so.Accounts, so.Name, so.Symbol)
	for _, f := range o.Faults {
		fmt.Fprintf(b, "# fault: %s on %s\n", f.Fault.Kind, f.Route)
	}
	for _, nf := range o.NodeFaults {
		text := nodeFaultText(nf.Fault)
		if sf := socketFaultText(nf.Fault.Socket); sf != "" {
			text += "; " + sf
		}
		fmt.Fprintf(b, "# fault: ledger node %d: %s\n", nf.Node, text)
	}
}

// writeSimVariables writes the variables that point the services at sim,
// and without a token file the simulated official pairs for one.
func writeSimVariables(b *strings.Builder, c config.Common, sim *simulator.Sim, file *config.Token, mint, maxSupply string) {
	if file != nil {
		fmt.Fprintf(b, "TOKEN_CONFIG=%s\n", c.TokenConfig)
		if mint != file.Mint {
			fmt.Fprintf(b, "TOKEN_MINT=%s\n", mint)
		}
	} else {
		fmt.Fprintf(b, "TOKEN_MINT=%s\nTOKEN_MAX_SUPPLY=%s\n", mint, maxSupply)
	}
	if len(sim.NodeURLs) > 0 {
		// the nodes for the supply collector; the faultless node for holders
		fmt.Fprintf(b, "SOLANA_RPC_URLS=%s\nHOLDERS_RPC_URL=%s\n", strings.Join(sim.NodeURLs, ","), sim.RPCURL)
		ws := make([]string, len(sim.NodeURLs))
		for i, u := range sim.NodeURLs {
			ws[i] = config.DeriveWS(config.Secret(u)).Reveal()
		}
		fmt.Fprintf(b, "SOLANA_WS_URLS=%s\n", strings.Join(ws, ","))
	} else {
		fmt.Fprintf(b, "SOLANA_RPC_URL=%s\nSOLANA_WS_URLS=%s\n", sim.RPCURL, config.DeriveWS(config.Secret(sim.RPCURL)).Reveal())
	}
	fmt.Fprintf(b, "DEXSCREENER_URL=%s\nGECKOTERMINAL_URL=%s\n", sim.DexScreenerURL, sim.GeckoTerminalURL)
	// what the services publish from here is marked simulated
	b.WriteString("UPSTREAMS_SIMULATED=true\n")
	if file == nil {
		b.WriteString("# the simulated official pairs, for a token file:\n# official_pairs:\n")
		for _, p := range sim.OfficialPairs {
			fmt.Fprintf(b, "#   - {address: %s, dex: %s, base: %s, quote: %s}\n", p.Address, p.Dex, p.Base, p.Quote)
		}
	}
}

// checkNodes refuses a --node-port without ledger nodes and a fault of a
// node that --nodes does not start.
func checkNodes(so simulator.Options, faults []simulator.NodeFaultSpec) error {
	if so.NodePort != 0 && so.Nodes == 0 {
		return fmt.Errorf("--node-port %d without --nodes: there are no ledger nodes to serve on it", so.NodePort)
	}
	for _, nf := range faults {
		if nf.Node > so.Nodes {
			return fmt.Errorf("--fault node%d: there are %d ledger nodes (--nodes %d or more)", nf.Node, so.Nodes, nf.Node)
		}
	}
	return nil
}

// nodeFaultText says a node fault in words, for the header.
func nodeFaultText(f solanasim.NodeFault) string {
	switch f.Kind {
	case solanasim.NodeLag:
		return fmt.Sprintf("lags %d slots", f.Slots)
	case solanasim.NodeBalancer:
		return fmt.Sprintf("a load balancer alternating a current node and one %d slots behind", f.Slots)
	case solanasim.NodeWrong:
		return fmt.Sprintf("answers the supply off by %d base units", f.Delta)
	case solanasim.NodeDown:
		return "down (HTTP 503)"
	case solanasim.NodeHide:
		return fmt.Sprintf("leaves %d token accounts of each mint out of its account listings", f.Accounts)
	}
	return "healthy"
}

// socketFaultText says a socket fault in words, for the header.
func socketFaultText(f solanasim.SocketFault) string {
	switch f {
	case solanasim.SocketDrop:
		return "its PubSub sockets are dropped"
	case solanasim.SocketStall:
		return "its PubSub sockets stall (no answer, no pong)"
	case solanasim.SocketGarble:
		return "its PubSub sockets send garbled frames"
	case solanasim.SocketOff:
		return "no PubSub (the upgrade is refused with HTTP 405)"
	}
	return ""
}

// supplyWithin keeps the simulated supply within the token's maximum
// supply (at 98.7654321 % of it when the default would pass it), so that a
// token file's max_supply and the simulated ledger agree.
func supplyWithin(so simulator.Options, maxSupply string) uint64 {
	supply := so.Supply
	if supply == 0 {
		supply = 987_654_321_123_456
	}
	t := config.Token{MaxSupply: maxSupply}
	if !t.MaxSupplyDisclosed() {
		return supply
	}
	maxRaw, err := t.MaxSupplyRaw(so.Decimals)
	if err != nil {
		return supply
	}
	if amount.Compare(strconv.FormatUint(supply, 10), maxRaw) <= 0 {
		return supply
	}
	m, ok := new(big.Int).SetString(maxRaw, 10)
	if !ok {
		return supply
	}
	m.Mul(m, big.NewInt(9_876_543_210)).Quo(m, big.NewInt(10_000_000_000))
	return m.Uint64() // below the supply, so within u64
}
