package main

import (
	"context"
	"encoding/json"
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

	"github.com/shopspring/decimal"

	"github.com/tokendata/tokendata/shared/amount"
	"github.com/tokendata/tokendata/shared/logging"
	"github.com/tokendata/tokendata/shared/testkit/freeport"
)

// The README's "serve your token" steps, end to end, against the
// simulator: copy docs/examples/token.yaml, try it on `standalone
// simulate`, run `check` (exit 0), serve, and read every endpoint. Then the
// same with each common mistake, where check must print the remedy
// docs/check.md prints, word for word.

// repoFile reads a file of the repository.
func repoFile(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "..", rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// publicPaths are every path of the API, all 200 for the example token.
var publicPaths = []string{"/api/total-supply", "/api/circulating-supply", "/api/max-supply", "/api/supply",
	"/api/coingecko-supply", "/api/price", "/api/holders", "/api/token-metadata", "/api/health", "/api/exchanges",
	"/api/market", "/api/market-data", "/api/market-pairs", "/api/status", "/api/openapi.json"}

// exampleOnSimulator writes docs/examples/token.yaml as it is (its mint is
// the one `standalone simulate` then simulates), points TOKEN_CONFIG at
// it and the environment at a simulator of its token, and returns the
// file's path and its text.
func exampleOnSimulator(t *testing.T, simArgs ...string) (path, text string) {
	t.Helper()
	clearEnv(t)
	text = repoFile(t, "docs/examples/token.yaml")
	path = filepath.Join(t.TempDir(), "token.yaml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TOKEN_CONFIG", path)
	vars, _, stop := startSimulate(t, append([]string{"--price-every", "0", "--supply-every", "0", "--accounts", "400"}, simArgs...)...)
	if vars == nil {
		t.Fatal("simulate did not start")
	}
	t.Cleanup(func() { stop() })
	for _, k := range []string{"SOLANA_RPC_URL", "DEXSCREENER_URL", "GECKOTERMINAL_URL"} {
		t.Setenv(k, vars[k])
	}
	return path, text
}

// serve runs `standalone serve` on free loopback ports until the test
// ends; it returns the API's base URL.
func serve(t *testing.T) string {
	t.Helper()
	api, ops := freeport.Port(t), freeport.Port(t)
	t.Setenv("HTTP_ADDR", "127.0.0.1:"+strconv.Itoa(api))
	t.Setenv("OPS_ADDR", "127.0.0.1:"+strconv.Itoa(ops))
	ctx, cancel := context.WithCancel(context.Background())
	var out, errw logging.Buffer
	done := make(chan int, 1)
	go func() { done <- newApp(&out, &errw).Run(ctx, []string{"serve"}) }()
	t.Cleanup(func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("serve exited %d: %s", code, errw.String())
		}
		http.DefaultClient.CloseIdleConnections()
	})
	base := "http://127.0.0.1:" + strconv.Itoa(api)
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(api), time.Second); err == nil {
			_ = c.Close()
			return base
		}
		select {
		case code := <-done:
			done <- code
			t.Fatalf("serve exited %d:\n%s\n%s", code, out.String(), errw.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not listen:\n%s", out.String())
		}
	}
}

func getBody(t *testing.T, url string) (int, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

// waitStatusOK waits until /api/status is ok: every domain collected,
// every collector's last run good.
func waitStatusOK(t *testing.T, base string) {
	t.Helper()
	var body []byte
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		_, body = getBody(t, base+"/api/status")
		var s struct{ Status string }
		if json.Unmarshal(body, &s) == nil && s.Status == "ok" {
			return
		}
	}
	t.Fatalf("/api/status never ok: %s", body)
}

var bodyTime = regexp.MustCompile(`"(checked_at|updated_at|expires_at|started_at|finished_at|last_success_at|last_ok_at|last_run_at)":"([^"]*)"`)

// TestServeYourToken follows the README with the documented example token
// file: check passes, then every endpoint answers 200, and the figures are
// as the docs describe them (names, units, precision, times).
func TestServeYourToken(t *testing.T) {
	exampleOnSimulator(t)
	code, out, errw := run(t, context.Background(), "check")
	if code != 0 || errw != "" || !strings.Contains(out, "verdict: ready") {
		t.Fatalf("check of docs/examples/token.yaml: exit %d, stderr %q\n%s", code, errw, out)
	}
	noSecret(t, out)

	base := serve(t)
	waitStatusOK(t, base)
	bodies := map[string][]byte{}
	for _, p := range publicPaths {
		code, b := getBody(t, base+p)
		if code != http.StatusOK {
			t.Errorf("%s: %d %s", p, code, b)
		}
		bodies[p] = b
	}

	// Names: one per meaning, the deprecated 2.0 names beside them.
	var st struct {
		APIVersion string `json:"api_version"`
		Checks     struct {
			Store, Redis struct{ Backend string }
		}
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(bodies["/api/status"], &raw); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(bodies["/api/status"], &st); err != nil {
		t.Fatal(err)
	}
	if st.APIVersion != "2.0" || string(raw["version"]) != `"2.0"` || st.Checks.Store.Backend != "memory" || st.Checks.Redis != st.Checks.Store {
		t.Errorf("status: api_version %q, version %s, checks.store %+v, checks.redis %+v", st.APIVersion, raw["version"], st.Checks.Store, st.Checks.Redis)
	}
	// Times: RFC 3339 UTC with milliseconds, in every body.
	for p, b := range bodies {
		for _, m := range bodyTime.FindAllStringSubmatch(string(b), -1) {
			if _, err := time.Parse("2006-01-02T15:04:05.000Z", m[2]); err != nil {
				t.Errorf("%s: %s %q is not RFC 3339 UTC with milliseconds", p, m[1], m[2])
			}
		}
	}
	// Pair counts mean what they say: the simulator lists a pair on
	// another chain, which the rule does not keep.
	var md struct {
		PairsDetected int `json:"pairs_detected"`
		PairsKept     int `json:"pairs_kept"`
		PairsUsable   int `json:"pairs_usable"`
		PairCount     int `json:"pair_count"`
	}
	if err := json.Unmarshal(bodies["/api/market-data"], &md); err != nil {
		t.Fatal(err)
	}
	if md.PairsKept >= md.PairsDetected || md.PairsUsable > md.PairsKept || md.PairsUsable == 0 || md.PairCount != md.PairsDetected {
		t.Errorf("market-data pair counts %+v: want usable ≤ kept < detected = pair_count", md)
	}
	// Precision: market cap and FDV to the price's significant digits
	// and no finer than cents; USD totals to the cent.
	var fields map[string]any
	dec := json.NewDecoder(strings.NewReader(string(bodies["/api/market"])))
	dec.UseNumber()
	if err := dec.Decode(&fields); err != nil {
		t.Fatal(err)
	}
	mk := map[string]json.Number{}
	for k, v := range fields {
		if n, ok := v.(json.Number); ok {
			mk[k] = n
		}
	}
	price := decimal.RequireFromString(mk["price_usd"].String())
	for _, f := range []string{"market_cap_usd", "fdv_usd", "liquidity_usd", "volume_24h_usd"} {
		v := decimal.RequireFromString(mk[f].String())
		sig := amount.Significant(price)
		if f == "liquidity_usd" || f == "volume_24h_usd" {
			sig = 0
		}
		if !amount.RoundUSD(v, sig).Equal(v) || v.Exponent() < -amount.Cents {
			t.Errorf("%s %s is finer than its precision (price %s)", f, v, price)
		}
	}
	circ := decimal.RequireFromString(mk["circulating_supply"].String())
	if want := amount.RoundUSD(price.Mul(circ), amount.Significant(price)); mk["market_cap_usd"].String() != want.String() {
		t.Errorf("market_cap_usd %s, want %s (price %s × circulating %s at the price's precision)", mk["market_cap_usd"], want, price, circ)
	}
}

// docHas fails unless docs/check.md prints text, where the values of
// fill stand for their placeholders (<host>).
func docHas(t *testing.T, doc, text string, fill map[string]string) {
	t.Helper()
	for placeholder, v := range fill {
		text = strings.ReplaceAll(text, v, placeholder)
	}
	if !strings.Contains(doc, text) {
		t.Errorf("docs/check.md does not print %q", text)
	}
}

// TestServeYourTokenMistakes: each common mistake of the README's steps,
// with the exact remedy check prints, which docs/check.md prints too.
func TestServeYourTokenMistakes(t *testing.T) {
	doc := repoFile(t, "docs/check.md")
	const otherMint = "9xQeWvG816bUx9EPjHmaT23yvVM2ZWbrrpZb9PusVFin" // a valid address the ledger has no mint at
	write := func(path, text string) {
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	checkFails := func(t *testing.T, wants ...string) string {
		t.Helper()
		code, out, _ := run(t, context.Background(), "check")
		if code != 1 || !strings.Contains(out, "verdict: NOT READY") {
			t.Errorf("check exit %d:\n%s", code, out)
		}
		for _, w := range wants {
			if !strings.Contains(out, w) {
				t.Errorf("check does not print %q:\n%s", w, out)
			}
		}
		noSecret(t, out)
		return out
	}

	t.Run("wrong mint", func(t *testing.T) {
		path, text := exampleOnSimulator(t)
		write(path, strings.Replace(text, "mint: Ag2ntwSLqsLLyasGT6KpgbL8EMsSfmmsjDCrG7noZ2HR", "mint: "+otherMint, 1))
		remedy := "remedy: check the mint address (TOKEN_MINT, or mint in the token file): it must be the token's mint, and SOLANA_RPC_URL must serve the token's cluster (mainnet-beta)"
		checkFails(t, "FAIL  getTokenSupply and the mint account: config_error: ", remedy)
		docHas(t, doc, remedy, nil)
	})
	t.Run("typo in a key", func(t *testing.T) {
		path, text := exampleOnSimulator(t)
		write(path, strings.Replace(text, "\nofficial_pairs:", "\noffical_pairs:", 1)) //nolint:misspell // a deliberate typo
		line := strconv.Itoa(1 + strings.Count(text[:strings.Index(text, "\nofficial_pairs:")+1], "\n"))
		msg := `line ` + line + `: unknown key "offical_pairs" in the token file; did you mean "official_pairs"?` //nolint:misspell // a deliberate typo
		remedy := "remedy: fix the token file where the error says; docs/token-file.md describes every key, docs/examples/token.yaml is a complete file"
		checkFails(t, msg, remedy)
		docHas(t, doc, remedy, nil)
		docHas(t, doc, msg, nil)
		// serving refuses the file with the same words, and starts nothing
		code, _, errw := run(t, context.Background(), "serve")
		if code != 1 || !strings.Contains(errw, msg) {
			t.Errorf("serve with the typo: exit %d, stderr %q", code, errw)
		}
	})
	t.Run("unreachable RPC", func(t *testing.T) {
		exampleOnSimulator(t)
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		dead := l.Addr().String()
		_ = l.Close() // nothing listens there now
		t.Setenv("SOLANA_RPC_URL", "http://"+dead+"/?api-key=K3Y-0F-TH3-N0D3")
		remedy := "remedy: check that " + dead + " is reachable from this process (DNS, firewall, proxy) and that SOLANA_RPC_URL is the endpoint you mean"
		checkFails(t, "FAIL  getTokenSupply and the mint account: upstream_unavailable: getTokenSupply: no connection to the endpoint of SOLANA_RPC_URL (host "+dead+"): connection refused", remedy)
		docHas(t, doc, remedy, map[string]string{"<host>": dead})
	})
	t.Run("RPC refuses enumeration", func(t *testing.T) {
		exampleOnSimulator(t, "--fault", "getProgramAccounts=rpc_excluded_index")
		remedy := "remedy: use an RPC node that indexes token accounts by mint (secondary indexes), or set HOLDERS_METHOD=das with a Helius DAS endpoint in HOLDERS_RPC_URL"
		checkFails(t, "FAIL  getProgramAccounts: enumeration_unsupported: getProgramAccounts: the RPC node answered error -32010", remedy)
		docHas(t, doc, remedy, nil)
		if !strings.Contains(repoFile(t, "README.md"), remedy) {
			t.Errorf("README.md does not print %q", remedy)
		}
		// Served anyway, /api/holders says why and what to do; every
		// other endpoint answers.
		base := serve(t)
		var code int
		var body []byte
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			if code, body = getBody(t, base+"/api/holders"); strings.Contains(string(body), "holders_unavailable") {
				break
			}
		}
		if code != http.StatusServiceUnavailable || !strings.Contains(string(body), "Use an RPC node that indexes token accounts by mint (secondary indexes), or set HOLDERS_METHOD=das with a Helius DAS endpoint in HOLDERS_RPC_URL.") {
			t.Errorf("/api/holders: %d %s", code, body)
		}
		waitFor200 := func(p string) {
			for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
				c, b := getBody(t, base+p)
				if c == http.StatusOK {
					return
				}
				if time.Now().After(deadline) {
					t.Errorf("%s: %d %s", p, c, b)
					return
				}
			}
		}
		for _, p := range publicPaths {
			if p != "/api/holders" {
				waitFor200(p)
			}
		}
	})
}
