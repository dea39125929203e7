package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/tokendata/tokendata/shared/config"
	"github.com/tokendata/tokendata/shared/logging"
	"github.com/tokendata/tokendata/shared/simulator"
	"github.com/tokendata/tokendata/shared/simulator/dexsim"
	"github.com/tokendata/tokendata/shared/simulator/fault"
	"github.com/tokendata/tokendata/shared/testkit/freeport"
	"github.com/tokendata/tokendata/shared/testkit/golden"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"))
}

// clearEnv unsets every variable the binary reads, for the test.
func clearEnv(t *testing.T) {
	t.Helper()
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		for _, p := range []string{"TOKEN_", "SOLANA_", "HOLDERS_", "DEXSCREENER_", "GECKOTERMINAL_", "REDIS_", "SUPPLY_", "MARKET_", "METADATA_", "EDGE_", "HTTP_ADDR", "OPS_"} {
			if strings.HasPrefix(k, p) {
				t.Setenv(k, "")
				if err := os.Unsetenv(k); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
}

// run runs the binary's command line with args.
func run(t *testing.T, ctx context.Context, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errw bytes.Buffer
	code = newApp(&out, &errw).Run(ctx, args)
	return code, out.String(), errw.String()
}

// startSim starts the simulator of a token with a fixed ledger and market.
func startSim(t *testing.T, so simulator.Options) *simulator.Sim {
	t.Helper()
	if so.Mint == "" {
		so.Mint = config.DemoMint
	}
	if so.Seed == 0 {
		so.Seed = 1
	}
	if so.Accounts == 0 {
		so.Accounts = 600
	}
	if so.Slot == 0 {
		so.Slot = 300_000_000 // the goldens name slots
	}
	sim, err := simulator.Start(context.Background(), so)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sim.Close)
	return sim
}

// tokenFile writes a token file for the simulated token (its mint, name,
// symbol and official pairs) with edit applied, and points the
// environment at it and at the simulator.
func tokenFile(t *testing.T, sim *simulator.Sim, edit func(string) string) string {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "mint: %s\nname: Demo Token\nsymbol: DEMO\ndecimals: 6\nmax_supply: \"1000000000\"\nofficial_pairs:\n", config.DemoMint)
	for _, p := range sim.OfficialPairs {
		fmt.Fprintf(&b, "  - {address: %s, dex: %s, base: %s, quote: %s}\n", p.Address, p.Dex, p.Base, p.Quote)
	}
	text := b.String()
	if edit != nil {
		text = edit(text)
	}
	path := filepath.Join(t.TempDir(), "token.yaml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	clearEnv(t)
	t.Setenv("TOKEN_CONFIG", path)
	t.Setenv("SOLANA_RPC_URL", sim.RPCURL+"/?api-key=K3Y-0F-TH3-N0D3")
	t.Setenv("DEXSCREENER_URL", sim.DexScreenerURL)
	t.Setenv("GECKOTERMINAL_URL", sim.GeckoTerminalURL)
	return path
}

var (
	portRe     = regexp.MustCompile(`127\.0\.0\.1:\d+`)
	durationRe = regexp.MustCompile(`(in|after) [0-9.]+(ns|µs|ms|s|m)\b`)
)

// masked replaces what changes from run to run: ports, durations, the
// token file's path.
func masked(s, path string) []byte {
	s = strings.ReplaceAll(s, path, "TOKEN_FILE")
	s = portRe.ReplaceAllString(s, "127.0.0.1:PORT")
	s = durationRe.ReplaceAllString(s, "$1 DURATION")
	return []byte(s)
}

// noSecret fails when the RPC key is in the text.
func noSecret(t *testing.T, text string) {
	t.Helper()
	for _, form := range []string{"K3Y-0F-TH3-N0D3", "api-key"} {
		if strings.Contains(text, form) {
			t.Errorf("the report quotes %q:\n%s", form, text)
		}
	}
}

// TestCheckHealthy: a token file that matches the ledger and the
// aggregators passes, exit 0, every group ok.
func TestCheckHealthy(t *testing.T) {
	sim := startSim(t, simulator.Options{})
	path := tokenFile(t, sim, nil)
	code, out, errw := run(t, context.Background(), "check")
	if code != 0 || errw != "" {
		t.Errorf("exit %d, stderr %q\n%s", code, errw, out)
	}
	for _, want := range []string{
		"ok    getTokenSupply: total supply 987654321.123456 (987654321123456 base units, 6 decimals)",
		"ok    mint account: owned by the spl-token-2022 program",
		"ok    name and symbol: the token file's match the ledger",
		"ok    getProgramAccounts: the node enumerates the mint's token accounts: 600 token accounts",
		"would select " + sim.OfficialPairs[0].Address,
		"official_pairs:\n  - {address: " + sim.OfficialPairs[0].Address,
		"verdict: ready",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the report lacks %q:\n%s", want, out)
		}
	}
	noSecret(t, out)
	golden.Check(t, "check_healthy", masked(out, path), *update)
}

// TestCheckFailures: each common mistake fails the check (exit 1) with
// its remedy, in the group of the endpoints it would leave without data.
func TestCheckFailures(t *testing.T) {
	const otherMint = "9xQeWvG816bUx9EPjHmaT23yvVM2ZWbrrpZb9PusVFin" // a valid address the ledger has no mint at
	remedyMint := "remedy: check the mint address (TOKEN_MINT, or mint in the token file): it must be the token's mint, and SOLANA_RPC_URL must serve the token's cluster (mainnet-beta)"
	remedyGPA := "remedy: use an RPC node that indexes token accounts by mint (secondary indexes), or set HOLDERS_METHOD=das with a Helius DAS endpoint in HOLDERS_RPC_URL"
	for _, tc := range []struct {
		name  string
		edit  func(string) string
		fault func(*simulator.Sim)
		want  []string
	}{
		{name: "wrong_mint", edit: func(s string) string { return strings.Replace(s, config.DemoMint, otherMint, 1) },
			want: []string{
				"FAIL  getTokenSupply and the mint account: config_error: getTokenSupply: the RPC node answered error -32602: Invalid param: could not find account\n        " + remedyMint,
				"FAIL  on-chain metadata: config_error: getAccountInfo: the mint account " + otherMint + " does not exist on the ledger of the node of SOLANA_RPC_URL\n        " + remedyMint,
				"FAIL  getProgramAccounts: config_error: getAccountInfo: the mint account " + otherMint + " does not exist on the ledger of the node of SOLANA_RPC_URL\n        " + remedyMint,
			}},
		{name: "no_secondary_index", fault: func(s *simulator.Sim) {
			s.RPC.Faults().Inject("getProgramAccounts", fault.Fault{Kind: fault.RPCExcludedIndex})
		}, want: []string{"FAIL  getProgramAccounts: enumeration_unsupported: getProgramAccounts: the RPC node answered error -32010", remedyGPA}},
		{name: "no_getprogramaccounts", fault: func(s *simulator.Sim) {
			s.RPC.Faults().Inject("getProgramAccounts", fault.Fault{Kind: fault.RPCMethodNotFound})
		}, want: []string{"FAIL  getProgramAccounts: enumeration_unsupported: getProgramAccounts: the RPC node answered error -32601: Method not found", remedyGPA}},
		{name: "dexscreener_empty", fault: func(s *simulator.Sim) {
			s.Dex.Faults().Inject(dexsim.RouteDexScreener, fault.Fault{Kind: fault.PairsEmpty})
		}, want: []string{"FAIL  DexScreener: lists no pair of the token on chain solana: /api/price answers 503 no_market\n        remedy: check the mint address; a token without a pool has no price"}},
		{name: "metadata_mismatch", edit: func(s string) string {
			return strings.Replace(strings.Replace(s, "name: Demo Token", "name: Demo Coin", 1), "symbol: DEMO", "symbol: DMC", 1)
		}, want: []string{
			"FAIL  name: The on-chain name \"Demo Token\" differs from the official name \"Demo Coin\".\n        remedy: write name: \"Demo Token\" in the token file, or update the on-chain metadata",
			"FAIL  symbol: The on-chain symbol \"DEMO\" differs from the official symbol \"DMC\".\n        remedy: write symbol: \"DEMO\" in the token file",
		}},
		{name: "decimals_and_max_supply", edit: func(s string) string {
			return strings.Replace(strings.Replace(s, "decimals: 6", "decimals: 9", 1), `"1000000000"`, `"1000"`, 1)
		}, want: []string{
			"FAIL  decimals: the token file states 9 decimals, the ledger 6\n        remedy: write decimals: 6 in the token file",
			"FAIL  max_supply: the on-chain total 987654321.123456 is above the token file's max_supply 1000\n        remedy: correct max_supply in the token file",
		}},
		{name: "official_pair_unknown", edit: func(s string) string {
			return strings.Replace(s, "official_pairs:\n", "official_pairs:\n  - {address: "+otherMint+", dex: raydium, base: DEMO, quote: SOL}\n", 1)
		}, want: []string{"FAIL  official pair " + otherMint + ": declared in the token file's official_pairs, not listed by the aggregator for this token"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sim := startSim(t, simulator.Options{})
			path := tokenFile(t, sim, tc.edit)
			if tc.fault != nil {
				tc.fault(sim)
			}
			code, out, _ := run(t, context.Background(), "check")
			if code != 1 || !strings.Contains(out, "verdict: NOT READY") {
				t.Errorf("exit %d:\n%s", code, out)
			}
			for _, want := range tc.want {
				if !strings.Contains(out, want) {
					t.Errorf("the report lacks %q:\n%s", want, out)
				}
			}
			noSecret(t, out)
			golden.Check(t, "check_"+tc.name, masked(out, path), *update)
		})
	}
}

// TestCheckConfiguration: a token file or an environment that serving
// would refuse fails the check before any probe, with the loader's own
// words; an unreachable node is named by its variable and host, never its
// key.
func TestCheckConfiguration(t *testing.T) {
	sim := startSim(t, simulator.Options{})
	t.Run("typo in a key", func(t *testing.T) {
		tokenFile(t, sim, func(s string) string { return strings.Replace(s, "official_pairs:", "offical_pairs:", 1) }) //nolint:misspell // a deliberate typo
		code, out, _ := run(t, context.Background(), "check")
		if code != 1 || !strings.Contains(out, `unknown key "offical_pairs" in the token file; did you mean "official_pairs"?`) || //nolint:misspell // a deliberate typo
			!strings.Contains(out, "remedy: fix the token file where the error says; docs/token-file.md") || strings.Contains(out, "\nsupply (") {
			t.Errorf("exit %d:\n%s", code, out)
		}
	})
	t.Run("invalid variable", func(t *testing.T) {
		tokenFile(t, sim, nil)
		t.Setenv("HOLDERS_METHOD", "scan")
		code, out, _ := run(t, context.Background(), "check")
		if code != 1 || !strings.Contains(out, `FAIL  environment: HOLDERS_METHOD: "scan" is not getProgramAccounts or das`) {
			t.Errorf("exit %d:\n%s", code, out)
		}
	})
	t.Run("no token", func(t *testing.T) {
		clearEnv(t)
		code, out, _ := run(t, context.Background(), "check")
		if code != 1 || !strings.Contains(out, "FAIL  token: none configured: standalone would serve the simulated demo token") ||
			!strings.Contains(out, "remedy: set TOKEN_CONFIG to your token file") {
			t.Errorf("exit %d:\n%s", code, out)
		}
	})
	t.Run("unreachable RPC", func(t *testing.T) {
		tokenFile(t, sim, nil)
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		dead := l.Addr().String()
		_ = l.Close() // nothing listens there now
		t.Setenv("SOLANA_RPC_URL", "http://"+dead+"/?api-key=K3Y-0F-TH3-N0D3")
		code, out, _ := run(t, context.Background(), "check")
		want := "FAIL  getTokenSupply and the mint account: upstream_unavailable: getTokenSupply: no connection to the endpoint of SOLANA_RPC_URL (host " + dead + "): connection refused\n" +
			"        remedy: check that " + dead + " is reachable from this process (DNS, firewall, proxy) and that SOLANA_RPC_URL is the endpoint you mean"
		if code != 1 || !strings.Contains(out, want) {
			t.Errorf("exit %d, want %q:\n%s", code, want, out)
		}
		noSecret(t, out)
	})
	t.Run("TOKEN_MINT over the token file", func(t *testing.T) {
		tokenFile(t, sim, nil)
		t.Setenv("TOKEN_MINT", "9xQeWvG816bUx9EPjHmaT23yvVM2ZWbrrpZb9PusVFin")
		_, out, _ := run(t, context.Background(), "check")
		if !strings.Contains(out, "warn  TOKEN_MINT: replaces the token file's mint "+config.DemoMint) {
			t.Errorf("no warning of the override:\n%s", out)
		}
	})
}

// TestCheckHoldersBounded: the count stops at the check's limit and says
// so; the node is still judged able to enumerate.
func TestCheckHoldersBounded(t *testing.T) {
	sim := startSim(t, simulator.Options{Accounts: 5000})
	tokenFile(t, sim, nil)
	code, out, _ := run(t, context.Background(), "check", "--holders-max-accounts", "1000")
	if code != 0 || !strings.Contains(out, "ok    getProgramAccounts: the node enumerates the mint's token accounts: the check stopped at its limit of 1000 token accounts") {
		t.Errorf("exit %d:\n%s", code, out)
	}
	sim.RPC.Faults().Inject("getProgramAccounts", fault.Fault{Kind: fault.EndlessStream})
	start := time.Now()
	code, out, _ = run(t, context.Background(), "check", "--holders-max-accounts", "100000000", "--holders-timeout", "1s")
	if code != 0 || !strings.Contains(out, "warn  getProgramAccounts: the node enumerates the mint's token accounts, slowly:") ||
		!strings.Contains(out, "when the check stopped at its bound of 1s") {
		t.Errorf("exit %d:\n%s", code, out)
	}
	if took := time.Since(start); took > 30*time.Second {
		t.Errorf("a bounded count of 1s took %s", took)
	}
}

// TestHelpOnEverySubcommand: -h, --help and help work on the binary and
// on every subcommand (stdout, exit 0, nothing started); an unknown
// subcommand or flag exits 2 with the usage on stderr.
func TestHelpOnEverySubcommand(t *testing.T) {
	clearEnv(t)
	for _, args := range [][]string{
		{"--help"}, {"-h"}, {"help"},
		{"serve", "--help"}, {"serve", "-h"}, {"help", "serve"},
		{"check", "--help"}, {"check", "-h"}, {"help", "check"},
		{"simulate", "--help"}, {"simulate", "-h"}, {"help", "simulate"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		start := time.Now()
		code, out, errw := run(t, ctx, args...)
		cancel()
		if code != 0 || errw != "" || !strings.HasPrefix(out, "Usage: standalone") || !strings.Contains(out, "docs/environment.md") {
			t.Errorf("%q: exit %d, stderr %q, stdout:\n%s", args, code, errw, out)
		}
		if time.Since(start) > 3*time.Second {
			t.Errorf("%q ran something (%s)", args, time.Since(start))
		}
	}
	_, out, _ := run(t, context.Background(), "simulate", "--help")
	for _, i := range fault.Catalog {
		if !strings.Contains(out, "  "+string(i.Kind)+" ") {
			t.Errorf("simulate --help does not document the fault %s", i.Kind)
		}
	}
	for _, f := range []string{"--rpc-port", "--dex-port", "--program", "--decimals", "--accounts", "--fault", "--mint"} {
		if !strings.Contains(out, f+" ") {
			t.Errorf("simulate --help lacks %s", f)
		}
	}
	for _, args := range [][]string{{"bogus"}, {"--bogus"}, {"check", "--bogus"}, {"simulate", "--fault", "x=nope"}, {"check", "extra"}} {
		code, out, errw := run(t, context.Background(), args...)
		if code != 2 || out != "" || !strings.Contains(errw, "Usage: standalone") {
			t.Errorf("%q: exit %d, stdout %q, stderr:\n%s", args, code, out, errw)
		}
	}
}

// startSimulate runs `standalone simulate args` and returns the variables
// it printed, its stderr and a stop function.
func startSimulate(t *testing.T, args ...string) (vars map[string]string, stderr *logging.Buffer, stop func() int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var out logging.Buffer
	stderr = &logging.Buffer{}
	done := make(chan int, 1)
	go func() { done <- newApp(&out, stderr).Run(ctx, append([]string{"simulate"}, args...)) }()
	stop = func() int {
		cancel()
		http.DefaultClient.CloseIdleConnections()
		return <-done
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		select {
		case code := <-done:
			cancel()
			done <- code
			return nil, stderr, stop
		default:
		}
		if strings.Contains(out.String(), "GECKOTERMINAL_URL=") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("simulate printed nothing: %q %q", out.String(), stderr.String())
		}
	}
	vars = map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(out.String()))
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok && !strings.HasPrefix(k, "#") {
			vars[k] = v
		}
	}
	vars["#"] = out.String()
	return vars, stderr, stop
}

func rpc(t *testing.T, url, method string, params ...any) map[string]any {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	resp, err := http.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestSimulateFlags: the ports, the token's shape and the faults given on
// the command line are what the simulator serves.
func TestSimulateFlags(t *testing.T) {
	clearEnv(t)
	rpcPort, dexPort := freeport.Port(t), freeport.Port(t)
	vars, _, stop := startSimulate(t, "--rpc-port", fmt.Sprint(rpcPort), "--dex-port", fmt.Sprint(dexPort),
		"--program", "token", "--decimals", "9", "--accounts", "300", "--name", "Flag Token", "--symbol", "FLAG",
		"--price-every", "0", "--supply-every", "0", "--fault", "dexscreener=pairs_empty", "--fault", "getProgramAccounts=rpc_method_not_found*1",
		"--fault", "programSubscribe=rpc_method_not_found") // a PubSub route is accepted
	defer func() {
		if code := stop(); code != 0 {
			t.Errorf("simulate exited %d", code)
		}
	}()
	if vars == nil {
		t.Fatal("simulate did not start")
	}
	if vars["SOLANA_RPC_URL"] != fmt.Sprintf("http://127.0.0.1:%d", rpcPort) || vars["DEXSCREENER_URL"] != fmt.Sprintf("http://127.0.0.1:%d", dexPort) ||
		vars["TOKEN_MINT"] != config.DemoMint || vars["TOKEN_MAX_SUPPLY"] != config.DemoMaxSupply {
		t.Fatalf("printed:\n%s", vars["#"])
	}
	sup := rpc(t, vars["SOLANA_RPC_URL"], "getTokenSupply", config.DemoMint)
	if v := sup["result"].(map[string]any)["value"].(map[string]any); v["decimals"] != float64(9) {
		t.Errorf("getTokenSupply: %v", sup)
	}
	acc := rpc(t, vars["SOLANA_RPC_URL"], "getAccountInfo", config.DemoMint, map[string]any{"encoding": "base64"})
	if owner := acc["result"].(map[string]any)["value"].(map[string]any)["owner"]; owner != "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA" {
		t.Errorf("--program token: the mint is owned by %v", owner)
	}
	if e := rpc(t, vars["SOLANA_RPC_URL"], "getProgramAccounts", "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA"); e["error"] == nil {
		t.Errorf("the fault getProgramAccounts=rpc_method_not_found*1 was not served: %v", e)
	}
	resp, err := http.Get(vars["DEXSCREENER_URL"] + "/token-pairs/v1/solana/" + config.DemoMint)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if strings.TrimSpace(string(b)) != "[]" {
		t.Errorf("--fault dexscreener=pairs_empty: DexScreener answered %.100s", b)
	}
	if !strings.Contains(vars["#"], `300 token accounts, name "Flag Token", symbol "FLAG"`) || !strings.Contains(vars["#"], "# fault: pairs_empty on dexscreener") {
		t.Errorf("the summary lines: %s", vars["#"])
	}
}

// TestSimulateTokenFileThenCheck: with TOKEN_CONFIG, simulate serves the
// token file's token and prints TOKEN_CONFIG, not a TOKEN_MINT that would
// override the file's mint; check against what it printed passes. A --mint
// that differs from the file's is refused, a TOKEN_MINT that does is warned
// about.
func TestSimulateTokenFileThenCheck(t *testing.T) {
	clearEnv(t)
	path := filepath.Join(t.TempDir(), "token.yaml")
	// the official pair is an address the simulator does not make up
	const pair = "7qbRF6YsyGuLUVs6Y1q64bdVrfe4ZcUUz1JRdoVNUJnm"
	file := "mint: " + config.DemoMint + "\nname: File Token\nsymbol: FILE\ndecimals: 9\nmax_supply: \"5000000\"\n" +
		"official_pairs:\n  - {address: " + pair + ", dex: raydium, base: FILE, quote: SOL}\n"
	if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TOKEN_CONFIG", path)

	code, _, errw := run(t, context.Background(), "simulate", "--mint", "9xQeWvG816bUx9EPjHmaT23yvVM2ZWbrrpZb9PusVFin")
	if code != 1 || !strings.Contains(errw, "--mint 9xQeWvG816bUx9EPjHmaT23yvVM2ZWbrrpZb9PusVFin differs from the mint "+config.DemoMint+" of the token file") {
		t.Errorf("a --mint other than the file's: exit %d, %q", code, errw)
	}

	vars, _, stop := startSimulate(t, "--price-every", "0", "--supply-every", "0", "--accounts", "400")
	if vars == nil {
		t.Fatal("simulate did not start")
	}
	if vars["TOKEN_CONFIG"] != path || vars["TOKEN_MINT"] != "" || vars["TOKEN_MAX_SUPPLY"] != "" {
		t.Errorf("printed:\n%s", vars["#"])
	}
	for k, v := range vars {
		if k != "#" {
			t.Setenv(k, v)
		}
	}
	code, out, _ := run(t, context.Background(), "check")
	if code != 0 || !strings.Contains(out, "ok    official pair "+pair+": listed, and the one serving would select") ||
		!strings.Contains(out, `name "File Token", symbol "FILE"`) || !strings.Contains(out, "9 decimals") {
		t.Errorf("check against simulate: exit %d\n%s", code, out)
	}
	if code := stop(); code != 0 {
		t.Errorf("simulate exited %d", code)
	}

	t.Setenv("TOKEN_MINT", "9xQeWvG816bUx9EPjHmaT23yvVM2ZWbrrpZb9PusVFin")
	vars, errw2, stop := startSimulate(t, "--price-every", "0", "--supply-every", "0", "--accounts", "100")
	defer stop()
	if vars == nil || vars["TOKEN_MINT"] != "9xQeWvG816bUx9EPjHmaT23yvVM2ZWbrrpZb9PusVFin" ||
		!strings.Contains(errw2.String(), "warning: TOKEN_MINT=9xQeWvG816bUx9EPjHmaT23yvVM2ZWbrrpZb9PusVFin overrides the mint "+config.DemoMint+" of the token file") {
		t.Errorf("TOKEN_MINT over the file: %v %q", vars, errw2.String())
	}
}

// TestSimulateNodePort: --node-port serves node N on the port given plus
// N - 1 (a cluster's Service names them), and is refused without --nodes.
func TestSimulateNodePort(t *testing.T) {
	clearEnv(t)
	if code, _, errw := run(t, context.Background(), "simulate", "--node-port", "8901"); code != 1 || !strings.Contains(errw, "--node-port 8901 without --nodes") {
		t.Errorf("--node-port without --nodes: exit %d, %q", code, errw)
	}
	if code, _, errw := run(t, context.Background(), "simulate", "--nodes", "2", "--node-port", "65535"); code != 1 || !strings.Contains(errw, "past 65535") {
		t.Errorf("ports past 65535: exit %d, %q", code, errw)
	}
	port := freePortPair(t)
	vars, _, stop := startSimulate(t, "--price-every", "0", "--supply-every", "0", "--accounts", "10",
		"--nodes", "2", "--node-port", strconv.Itoa(port))
	defer stop()
	if vars == nil {
		t.Fatal("simulate did not start")
	}
	want := fmt.Sprintf("http://127.0.0.1:%d,http://127.0.0.1:%d", port, port+1)
	if got := vars["SOLANA_RPC_URLS"]; got != want {
		t.Errorf("SOLANA_RPC_URLS=%s, want %s", got, want)
	}
}

// freePortPair finds a port p, with p+1, that nothing listens on now.
func freePortPair(t *testing.T) int {
	t.Helper()
	for range 50 {
		a, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		p := a.Addr().(*net.TCPAddr).Port
		b, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p+1)))
		_ = a.Close()
		if err == nil {
			_ = b.Close()
			return p
		}
	}
	t.Fatal("no two free ports in a row")
	return 0
}

// TestSimulateNodes: `simulate --nodes 3` serves three ledger nodes with
// the faults given per node, and `check` against them says which agree.
func TestSimulateNodes(t *testing.T) {
	clearEnv(t)
	if code, _, errw := run(t, context.Background(), "simulate", "--nodes", "1", "--fault", "node2=down"); code != 1 || !strings.Contains(errw, "--fault node2") {
		t.Errorf("a fault of node 2 with one node: exit %d, %q", code, errw)
	}
	if code, _, errw := run(t, context.Background(), "simulate", "--nodes", "3", "--fault", "node2=lag"); code != 2 || !strings.Contains(errw, "lag needs a number of slots") {
		t.Errorf("lag without slots: exit %d, %q", code, errw)
	}
	vars, _, stop := startSimulate(t, "--price-every", "0", "--supply-every", "0", "--accounts", "100",
		"--nodes", "3", "--fault", "node2=wrong:7", "--fault", "node3=lag:1000")
	defer stop()
	if vars == nil {
		t.Fatal("simulate did not start")
	}
	nodes := strings.Split(vars["SOLANA_RPC_URLS"], ",")
	if len(nodes) != 3 || vars["SOLANA_RPC_URL"] != "" || vars["HOLDERS_RPC_URL"] == "" ||
		!strings.Contains(vars["#"], "# fault: ledger node 2: answers the supply off by 7 base units") {
		t.Fatalf("printed:\n%s", vars["#"])
	}
	for k, v := range vars {
		if k != "#" {
			t.Setenv(k, v)
		}
	}
	code, out, _ := run(t, context.Background(), "check")
	for _, want := range []string{"ledger node 1: agrees", "ledger node 2: disagrees", "ledger node 3: lags 1000 slots behind the others", "cross-check: 2 of 3 ledger nodes agree"} {
		if !strings.Contains(out, want) {
			t.Errorf("check against three nodes (exit %d) lacks %q:\n%s", code, want, out)
		}
	}
}
