// Command standalone runs the collectors and the edge in one process:
//
//	standalone            serve (demo mode without TOKEN_CONFIG/TOKEN_MINT)
//	standalone check      validate the configuration, probe every upstream, exit
//	standalone simulate   run only the upstream simulator and print its URLs
//	standalone verify URL check an answer's digest and signature against the published keys
//
// `standalone help` and `standalone <command> --help` say more.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/tokendata/tokendata/services/holders"
	"github.com/tokendata/tokendata/services/market"
	"github.com/tokendata/tokendata/services/standalone"
	"github.com/tokendata/tokendata/services/supply"
	"github.com/tokendata/tokendata/shared/check"
	"github.com/tokendata/tokendata/shared/cli"
	"github.com/tokendata/tokendata/shared/config"
	"github.com/tokendata/tokendata/shared/httpsig"
	"github.com/tokendata/tokendata/shared/logging"
	"github.com/tokendata/tokendata/shared/process"
	"github.com/tokendata/tokendata/shared/simulator"
	"github.com/tokendata/tokendata/shared/simulator/fault"
)

func main() { cli.Main(newApp(os.Stdout, os.Stderr)) }

// newApp is the command line, printing on stdout and stderr.
func newApp(stdout, stderr io.Writer) *cli.App {
	limits := holders.DefaultCheckLimits
	return &cli.App{
		Name: "standalone", Default: "serve", Footer: process.Footer, Stdout: stdout, Stderr: stderr,
		About: `The whole tokendata service in one process: the supply, market and holders
collectors and the public API, on an in-memory store (or Redis with REDIS_URL).
Without TOKEN_CONFIG or TOKEN_MINT it runs in demo mode, on its built-in
simulator of the Solana RPC node, DexScreener and GeckoTerminal.`,
		Commands: []cli.Command{
			{Name: "serve", Summary: "serve /api/* on HTTP_ADDR until SIGTERM",
				Help: `Runs the three collectors and the edge. The API is on HTTP_ADDR (:8080), metrics
and probes on OPS_ADDR (127.0.0.1:9090). Run "standalone check" first to see
whether your token file and upstreams would serve every endpoint.`,
				Run: func(ctx context.Context, _ *flag.FlagSet) error {
					common, err := standalone.LoadCommon()
					if err != nil {
						return fmt.Errorf("config: %w", err)
					}
					level, _ := config.ParseLevel(common.LogLevel)
					log := logging.New(stdout, "standalone", level)
					return standalone.Run(ctx, standalone.Options{Common: common, Log: log, Banner: stderr})
				}},
			{Name: "check", Summary: "validate the configuration and probe every upstream, print a verdict per endpoint group, and exit",
				Help: process.CheckHelp + `

The holders count is bounded (--holders-max-accounts, --holders-timeout): the
report says when it stopped there. The usable pairs come last, as official_pairs
YAML to paste into the token file.`,
				Flags: limits.Flags,
				Run: func(ctx context.Context, _ *flag.FlagSet) error {
					return process.RunCheck(ctx, stdout, process.CheckSetup{Service: "standalone", LoadCommon: standalone.LoadCommon, AllowDemo: true},
						func(ctx context.Context, c *process.Checked, r *check.Report) {
							supply.Probe(ctx, c.Common, c.Token, r)
							holders.Probe(ctx, c.Common, c.Token, limits, r)
							market.Probe(ctx, c.Common, c.Token, r)
						})
				}},
			simulateCommand(stdout, stderr),
			verifyCommand(stdout),
		},
	}
}

// simulateCommand is `standalone simulate [flags]`.
func simulateCommand(stdout, stderr io.Writer) cli.Command {
	sim := standalone.DefaultSimulateOptions()
	var (
		faults  faultFlag
		nodes   []simulator.NodeFaultSpec
		program = "token-2022"
	)
	return cli.Command{Name: "simulate", Summary: "run only the upstream simulator, print the variables that point the services at it, until SIGTERM",
		Help: simulateHelp(),
		Flags: func(fs *flag.FlagSet) {
			fs.StringVar(&sim.Sim.Host, "host", "", "address to listen on (default 127.0.0.1; 0.0.0.0 in a pod that other pods reach)")
			fs.IntVar(&sim.Sim.RPCPort, "rpc-port", 0, "port of the Solana RPC node (0: any free one)")
			fs.IntVar(&sim.Sim.DexPort, "dex-port", 0, "port of DexScreener and GeckoTerminal (0: any free one)")
			fs.StringVar(&sim.Mint, "mint", "", "mint to simulate (default: the token file's, TOKEN_MINT, or the demo mint)")
			fs.StringVar(&program, "program", program, "token program of the mint: token or token-2022")
			fs.Func("decimals", "decimals of the mint, 0 to 18 (default: the token file's, or 6)", func(v string) error {
				var d uint8
				if _, err := fmt.Sscan(v, &d); err != nil || d > 18 {
					return fmt.Errorf("%q is not 0 to 18", v)
				}
				sim.Sim.Decimals, sim.Sim.Decimals0 = d, d == 0
				return nil
			})
			fs.IntVar(&sim.Sim.Accounts, "accounts", sim.Sim.Accounts, "number of token accounts (about 70 % of them hold a balance)")
			fs.Uint64Var(&sim.Sim.Supply, "supply", 0, "supply in base units (default: 987654321.123456 tokens, kept below max_supply)")
			fs.Func("name", `on-chain name (default: the token file's, or "Demo Token")`, func(v string) error {
				sim.Sim.Name, sim.NameSet = v, true
				return nil
			})
			fs.Func("symbol", `on-chain symbol (default: the token file's, or "DEMO")`, func(v string) error {
				sim.Sim.Symbol, sim.SymbolSet = v, true
				return nil
			})
			fs.Uint64Var(&sim.Sim.Seed, "seed", sim.Sim.Seed, "seed of the holders and of the market scenario")
			fs.DurationVar(&sim.Sim.PriceEvery, "price-every", sim.Sim.PriceEvery, "the price drifts every this long (0: fixed)")
			fs.DurationVar(&sim.Sim.SupplyEvery, "supply-every", sim.Sim.SupplyEvery, "the supply grows every this long (0: fixed)")
			fs.BoolVar(&sim.Sim.NoMintAuthority, "no-mint-authority", false, "no mint authority: a fixed supply")
			fs.IntVar(&sim.Sim.Nodes, "nodes", 0, "number of ledger nodes over the one ledger, printed as SOLANA_RPC_URLS (0: the one node of SOLANA_RPC_URL)")
			fs.IntVar(&sim.Sim.NodePort, "node-port", 0, "port of ledger node 1; node N listens on this port + N - 1 (0: free ports)")
			fs.Func("fault", "inject a fault, route=kind[:param][*times], or nodeN=ok|lag:K|wrong[:D]|down|lb:K|hide:K|ws-drop|ws-stall|ws-garble|ws-off (joined with +; repeatable; the kinds are listed above)", func(v string) error {
				spec, isNode, err := simulator.ParseNodeFaultSpec(v)
				if isNode {
					nodes = append(nodes, spec)
					return err
				}
				return faults.Set(v)
			})
		},
		Run: func(ctx context.Context, _ *flag.FlagSet) error {
			switch program {
			case "token":
				sim.Sim.Classic = true
			case "token-2022":
			default:
				return fmt.Errorf("--program %q: token or token-2022", program)
			}
			sim.Faults, sim.NodeFaults = faults, nodes
			common, err := standalone.LoadCommon()
			if err != nil {
				return fmt.Errorf("config: %w", err)
			}
			return standalone.Simulate(ctx, common, sim, stdout, stderr)
		}}
}

// verifyCommand is `standalone verify URL [--thumbprint T] [--keys URL]`.
func verifyCommand(stdout io.Writer) cli.Command {
	var (
		c    httpsig.Check
		encs = "identity,gzip,br"
	)
	return cli.Command{Name: "verify", Args: "URL", Summary: "fetch an answer, check its Content-Digest and its signature against the published keys, say why when it fails",
		Help: `Fetches URL (any data path: https://…/api/total-supply) once per encoding,
as sent (no decoding), and the service's published keys (/api/keys beside
URL, or --keys). It checks that Content-Digest is the SHA-256 of the bytes
received and that the "tokendata" signature (RFC 9421, Ed25519) covers the
status, Content-Type, Content-Digest and X-Data-Updated-At and was made by
a published key, or only by the key of --thumbprint (the thumbprint the
token file and /api/token-metadata state). Exits 1 when a check fails.
Flags may come before or after URL.`,
		Flags: func(fs *flag.FlagSet) {
			fs.StringVar(&c.Thumbprint, "thumbprint", "", "trust only the key with this RFC 7638 thumbprint (its key id)")
			fs.StringVar(&c.KeysURL, "keys", "", "URL of the published keys (default: the /api/keys beside URL)")
			fs.StringVar(&encs, "encodings", encs, "comma-separated encodings to ask for: identity, gzip, br")
		},
		Run: func(ctx context.Context, fs *flag.FlagSet) error {
			if fs.NArg() == 0 {
				return errors.New("verify needs the URL of an answer: standalone verify URL [--thumbprint T] [--keys URL]")
			}
			c.URL = fs.Arg(0)
			if err := fs.Parse(fs.Args()[1:]); err != nil {
				return err
			}
			if fs.NArg() > 0 {
				return fmt.Errorf("unexpected argument %q after the URL", fs.Arg(0))
			}
			for _, e := range strings.Split(encs, ",") {
				switch e = strings.TrimSpace(e); e {
				case "identity", "gzip", "br":
					c.Encodings = append(c.Encodings, e)
				default:
					return fmt.Errorf("--encodings: %q is not identity, gzip or br", e)
				}
			}
			if _, err := httpsig.KeysURLOf(c.URL); err != nil {
				return err
			}
			if err := c.Run(ctx, stdout); err != nil {
				return &cli.ExitError{Code: cli.ExitFail}
			}
			return nil
		}}
}

// faultFlag collects --fault values.
type faultFlag []fault.Spec

func (f *faultFlag) String() string { return "" }

func (f *faultFlag) Set(v string) error {
	s, err := fault.ParseSpec(v)
	if err != nil {
		return err
	}
	*f = append(*f, s)
	return nil
}

// simulateHelp explains simulate, its routes and every fault kind.
func simulateHelp() string {
	var b strings.Builder
	b.WriteString(`Serves, on 127.0.0.1 (or --host), a Solana JSON-RPC node (with Helius DAS getTokenAccounts)
and the DexScreener and GeckoTerminal APIs for one token, and prints the
variables that point the services (or "check") at them:

  eval "$(standalone simulate --fault dexscreener=pairs_empty | grep '^[A-Z]')"

With TOKEN_CONFIG set, the token file's token is simulated (its mint, name,
symbol, decimals and official pairs) and TOKEN_CONFIG is printed, never a
TOKEN_MINT that would override the file's mint; a --mint that differs from the
file's is refused. Otherwise the mint is --mint, TOKEN_MINT or the demo mint.

Faults (--fault route=kind[:param][*times]): route is an RPC method
(getTokenSupply, getAccountInfo, getProgramAccounts, getTokenAccounts, ...),
a PubSub subscription (programSubscribe, accountSubscribe: a kind rpc_* is
the node's error to the subscription, reset drops the socket), * for every
RPC request, dexscreener or geckoterminal; times is how many
requests it applies to (every one when absent). Kinds:
`)
	for _, i := range fault.Catalog {
		fmt.Fprintf(&b, "  %-21s %s [%s]\n", i.Kind, i.Doc, i.Routes)
	}
	b.WriteString(`
Examples: --fault getProgramAccounts=rpc_excluded_index (a node that cannot
enumerate holders), --fault getTokenSupply=rpc_node_unhealthy*3,
--fault '*=latency:3s', --fault geckoterminal=gecko_not_found.

Ledger nodes (--nodes N): N RPC endpoints over the one ledger, printed as
SOLANA_RPC_URLS, each with a fault of its own: --fault node2=lag:1000 (answers
from 1,000 slots ago, and -32016 below a minContextSlot it has not reached),
node2=wrong[:D] (a supply off by D base units), node3=down (HTTP 503),
node1=lb:1000 (a load balancer alternating a current node and one 1,000 slots
behind), node2=hide:10 (leaves 10 token accounts of each mint out of
getProgramAccounts and getTokenAccounts: fewer holders). --node-port P serves
node N on port P+N-1 (a cluster's Service names them); by default each takes a
free port.

PubSub: every port (the node's and each ledger node's) also speaks Solana's
PubSub WebSocket on a GET with Upgrade: websocket at the RPC URL's own path
(accountSubscribe, accountNotification, accountUnsubscribe; programSubscribe,
programNotification, programUnsubscribe with getProgramAccounts' filters); the services
derive ws:// from http:// (SOLANA_WS_URLS, printed). A node's socket has faults
of its own, alone or joined to another with +: node1=ws-drop (every socket
dropped when set, and each new one right after its upgrade), node2=ws-stall
(sockets stay open and answer nothing, no pong either), node2=ws-garble
(frames that are not JSON or of the wrong shape), node3=ws-off (the upgrade
refused with HTTP 405: a provider without PubSub), node2=lag:1000+ws-stall.

Burn and mint on demand, from any process, on any of the printed RPC ports:
  curl -X POST 'http://127.0.0.1:PORT/_simulator/burn?amount=1000000'
  curl -X POST 'http://127.0.0.1:PORT/_simulator/mint?amount=1000000'
(base units of the simulated token; the answer is the new supply and the slot).
Holders change on demand the same way, each change at a new slot (the answer
is the slot and the accounts changed); A and B are token account addresses:
  curl -X POST 'http://127.0.0.1:PORT/_simulator/holders/new?amount=N'
  curl -X POST 'http://127.0.0.1:PORT/_simulator/holders/open'
  curl -X POST 'http://127.0.0.1:PORT/_simulator/holders/sellout?account=A'
  curl -X POST 'http://127.0.0.1:PORT/_simulator/holders/back?account=A&amount=N'
  curl -X POST 'http://127.0.0.1:PORT/_simulator/holders/move?from=A&to=B&amount=N'
  curl -X POST 'http://127.0.0.1:PORT/_simulator/holders/close?account=A'
(close is refused unless A holds 0).`)
	return b.String()
}
