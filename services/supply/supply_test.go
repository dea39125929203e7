package supply

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tokendata/tokendata/shared/amount"
	"github.com/tokendata/tokendata/shared/collector"
	"github.com/tokendata/tokendata/shared/config"
	"github.com/tokendata/tokendata/shared/contract"
	"github.com/tokendata/tokendata/shared/simulator/fault"
	"github.com/tokendata/tokendata/shared/simulator/solanasim"
	"github.com/tokendata/tokendata/shared/testkit/golden"
)

// The simulated tokens of the tests.
func classic9() solanasim.Token {
	return solanasim.Token{
		Mint: key("classic-9"), Program: solanasim.ProgramToken, Decimals: 9,
		Supply: 999_999_999_123_456_789, FreezeAuthority: authority,
		Metadata: solanasim.MetadataMetaplex, Name: "Demo Token", Symbol: "DEMO",
		URI: "https://example.org/demo.json", UpdateAuthority: authority,
		Holders: solanasim.Holders{Accounts: 10, Seed: 1},
	}
}

func t22six() solanasim.Token {
	return solanasim.Token{
		Mint: key("t22-6"), Program: solanasim.ProgramToken2022, Decimals: 6,
		Supply: 999_999_999_999_999, MintAuthority: authority,
		Metadata: solanasim.MetadataToken2022, Name: "Demo Token", Symbol: "DEMO",
		URI: "https://example.org/t22.json", UpdateAuthority: authority,
		AdditionalMetadata: [][2]string{{"site", "https://example.org"}},
		Holders:            solanasim.Holders{Accounts: 10, Seed: 2},
	}
}

func zeroDecimals() solanasim.Token {
	return solanasim.Token{
		Mint: key("zero-0"), Program: solanasim.ProgramToken, Decimals: 0,
		Supply: 1_000_000_000, Metadata: solanasim.MetadataNone,
		Holders: solanasim.Holders{Accounts: 10, Seed: 3},
	}
}

func u64Max() solanasim.Token {
	return solanasim.Token{
		Mint: key("u64-max"), Program: solanasim.ProgramToken, Decimals: 9,
		Supply: math.MaxUint64, MintAuthority: authority, FreezeAuthority: authority,
		Metadata: solanasim.MetadataMetaplex, Name: "Big Token", Symbol: "BIG",
		URI:     "https://example.org/big.json",
		Holders: solanasim.Holders{Accounts: 10, Seed: 4},
	}
}

func t22Metaplex() solanasim.Token {
	return solanasim.Token{
		Mint: key("t22-metaplex"), Program: solanasim.ProgramToken2022, Decimals: 6,
		Supply: 1_000_000_000_000_000, Metadata: solanasim.MetadataMetaplex,
		Name: "Demo Token", Symbol: "DEMO", URI: "https://example.org/t22m.json", UpdateAuthority: authority,
		Holders: solanasim.Holders{Accounts: 10, Seed: 5},
	}
}

func TestSupplyDocuments(t *testing.T) {
	type want struct {
		program, total, max string
		mintAuth, freeze    bool
		warnings            []string
	}
	cases := []struct {
		name string
		tok  solanasim.Token
		want want
	}{
		{"classic_9_decimals", classic9(), want{contract.ProgramToken, "999999999.123456789", "1000000000", false, true,
			[]string{WarnFreezeAuthorityActive}}},
		{"token2022_6_decimals", t22six(), want{contract.ProgramToken2022, "999999999.999999", "1000000000", true, false,
			[]string{WarnMintAuthorityActive}}},
		{"classic_0_decimals", zeroDecimals(), want{contract.ProgramToken, "1000000000", "1000000000", false, false, nil}},
		{"u64_max", u64Max(), want{contract.ProgramToken, "18446744073.709551615", "1000000000", true, true,
			[]string{WarnTotalAboveMax, WarnMintAuthorityActive, WarnFreezeAuthorityActive}}},
		{"token2022_no_extensions", t22Metaplex(), want{contract.ProgramToken2022, "1000000000", "1000000000", false, false, nil}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, tc.tok, fixtureOpts{})
			f.mustRun(t, contract.DomainSupply)
			env, doc := f.supplyDoc(t)

			if doc.TotalRaw != fmtU64(tc.tok.Supply) || doc.CirculatingRaw != doc.TotalRaw {
				t.Errorf("total %s circulating %s, want both %d", doc.TotalRaw, doc.CirculatingRaw, tc.tok.Supply)
			}
			if got := amount.MustFormat(doc.TotalRaw, doc.Decimals); got != tc.want.total {
				t.Errorf("total formats as %s, want %s", got, tc.want.total)
			}
			if got := amount.MustFormat(doc.MaxRaw, doc.Decimals); got != tc.want.max {
				t.Errorf("max formats as %s, want %s", got, tc.want.max)
			}
			if doc.Decimals != tc.tok.Decimals || doc.TokenProgram != tc.want.program || doc.TokenProgramID != tc.tok.Program.ID() {
				t.Errorf("decimals %d program %s (%s)", doc.Decimals, doc.TokenProgram, doc.TokenProgramID)
			}
			if (doc.MintAuthority != nil) != tc.want.mintAuth || (doc.FreezeAuthority != nil) != tc.want.freeze {
				t.Errorf("mint authority %v freeze authority %v", doc.MintAuthority, doc.FreezeAuthority)
			}
			if doc.MintAuthority != nil && *doc.MintAuthority != authority {
				t.Errorf("mint authority %s, want %s", *doc.MintAuthority, authority)
			}
			if got := codes(doc.Warnings); !slices.Equal(got, tc.want.warnings) {
				t.Errorf("warnings %v, want %v", got, tc.want.warnings)
			}
			wantSlot := f.sim.Slot() - 32 // finalized
			if doc.Slot != wantSlot || env.Source.Slot != wantSlot || env.Source.Commitment != "finalized" || doc.Commitment != "finalized" {
				t.Errorf("slot %d source %+v, want slot %d finalized", doc.Slot, env.Source, wantSlot)
			}
			if len(doc.Methodology.Rules) != 3 || !strings.Contains(doc.Methodology.Rules[2], "1,000,000,000 tokens") {
				t.Errorf("rules %q", doc.Methodology.Rules)
			}
			golden.Check(t, "supply_"+tc.name, normalized(t, env.Envelope), *update)
		})
	}
}

func fmtU64(v uint64) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func codes(ws []contract.Warning) []string {
	var out []string
	for _, w := range ws {
		out = append(out, w.Code)
	}
	return out
}

func TestSupplyChangesBetweenPolls(t *testing.T) {
	tok := classic9()
	f := newFixture(t, tok, fixtureOpts{})
	f.mustRun(t, contract.DomainSupply)
	_, first := f.supplyDoc(t)

	if err := f.sim.SetSupply(tok.Mint, 999_999_998_000_000_001); err != nil {
		t.Fatal(err)
	}
	f.sim.BumpSlot(10)
	f.mustRun(t, contract.DomainSupply)
	_, second := f.supplyDoc(t)
	if second.TotalRaw != "999999998000000001" || second.CirculatingRaw != second.TotalRaw {
		t.Errorf("after SetSupply: total %s circulating %s", second.TotalRaw, second.CirculatingRaw)
	}
	if second.Slot != first.Slot+1+10 { // the change's slot, then 10
		t.Errorf("slot %d, want %d", second.Slot, first.Slot+11)
	}
	if got := amount.MustFormat(second.TotalRaw, 9); got != "999999998.000000001" {
		t.Errorf("formatted %s", got)
	}
}

func TestMintAuthorityDisclosure(t *testing.T) {
	tok := t22six()
	f := newFixture(t, tok, fixtureOpts{})
	f.mustRun(t, contract.DomainSupply)
	if _, doc := f.supplyDoc(t); !slices.Contains(codes(doc.Warnings), WarnMintAuthorityActive) || doc.MintAuthority == nil {
		t.Fatalf("active authority not disclosed: %+v", doc)
	}
	if err := f.sim.SetMintAuthority(tok.Mint, ""); err != nil {
		t.Fatal(err)
	}
	if err := f.sim.SetFreezeAuthority(tok.Mint, authority); err != nil {
		t.Fatal(err)
	}
	f.mustRun(t, contract.DomainSupply)
	_, doc := f.supplyDoc(t)
	if doc.MintAuthority != nil || slices.Contains(codes(doc.Warnings), WarnMintAuthorityActive) {
		t.Errorf("disabled authority still disclosed: %+v", doc)
	}
	if doc.FreezeAuthority == nil || *doc.FreezeAuthority != authority || !slices.Contains(codes(doc.Warnings), WarnFreezeAuthorityActive) {
		t.Errorf("freeze authority: %v %v", doc.FreezeAuthority, doc.Warnings)
	}
}

// TestMaxSupplyNotDisclosed: a token whose issuer discloses no maximum
// supply gets none in its document (not a default), no total_above_max
// warning however large the supply, and a methodology that says so.
func TestMaxSupplyNotDisclosed(t *testing.T) {
	tok := u64Max()
	official := officialToken(tok.Mint)
	official.MaxSupply = config.MaxSupplyNone
	f := newFixture(t, tok, fixtureOpts{token: &official})
	f.mustRun(t, contract.DomainSupply)
	env, doc := f.supplyDoc(t)
	if doc.MaxRaw != "" {
		t.Errorf("max_raw %q, want none", doc.MaxRaw)
	}
	if slices.Contains(codes(doc.Warnings), WarnTotalAboveMax) {
		t.Errorf("warnings %v: no maximum, so nothing to be above", codes(doc.Warnings))
	}
	if !strings.Contains(doc.Methodology.MaxSupply, "discloses no maximum supply") ||
		doc.Methodology.Rules[2] != "No maximum supply is disclosed." {
		t.Errorf("methodology %+v", doc.Methodology)
	}
	golden.Check(t, "supply_max_not_disclosed", normalized(t, env.Envelope), *update)
}

// TestTotalAboveMaxLoggedOncePerChange: a configured maximum below the
// on-chain total is a warning in the document at every poll, and one WARN
// line when it appears (not one per poll); coming back within it is
// logged once at INFO.
func TestTotalAboveMaxLoggedOncePerChange(t *testing.T) {
	tok := classic9() // 999,999,999.123456789 tokens
	official := officialToken(tok.Mint)
	official.MaxSupply = "999999999"
	f := newFixture(t, tok, fixtureOpts{token: &official})
	count := func(level, msg string) int {
		n := 0
		for _, line := range strings.Split(f.logs.String(), "\n") {
			if strings.Contains(line, `"level":"`+level+`"`) && strings.Contains(line, msg) {
				n++
			}
		}
		return n
	}
	const above, within = "above the configured maximum supply", "within the configured maximum supply again"
	for range 3 {
		f.sim.BumpSlot(1)
		f.mustRun(t, contract.DomainSupply)
		if _, doc := f.supplyDoc(t); !slices.Contains(codes(doc.Warnings), WarnTotalAboveMax) {
			t.Fatalf("warnings %v, want %s", codes(doc.Warnings), WarnTotalAboveMax)
		}
	}
	if n := count("WARN", above); n != 1 || !strings.Contains(f.logs.String(), `"warning":"total_above_max"`) {
		t.Errorf("%d WARN lines for three polls above the maximum, want 1:\n%s", n, f.logs.String())
	}

	if err := f.sim.SetSupply(tok.Mint, 999_999_999_000_000_000); err != nil { // burned down to the maximum
		t.Fatal(err)
	}
	for range 2 {
		f.sim.BumpSlot(1)
		f.mustRun(t, contract.DomainSupply)
	}
	if _, doc := f.supplyDoc(t); slices.Contains(codes(doc.Warnings), WarnTotalAboveMax) {
		t.Errorf("warnings %v at the maximum", codes(doc.Warnings))
	}
	if count("INFO", within) != 1 || count("WARN", above) != 1 {
		t.Errorf("after the burn: %d INFO, %d WARN lines:\n%s", count("INFO", within), count("WARN", above), f.logs.String())
	}

	if err := f.sim.SetSupply(tok.Mint, 999_999_999_000_000_001); err != nil {
		t.Fatal(err)
	}
	f.sim.BumpSlot(1)
	f.mustRun(t, contract.DomainSupply)
	if n := count("WARN", above); n != 2 {
		t.Errorf("%d WARN lines after going above again, want 2", n)
	}
}

func TestDecimalsMismatch(t *testing.T) {
	tok := classic9()
	six := uint8(6)
	official := officialToken(tok.Mint)
	official.Decimals = &six
	f := newFixture(t, tok, fixtureOpts{token: &official})
	f.mustRun(t, contract.DomainSupply)
	_, doc := f.supplyDoc(t)
	if doc.Decimals != 9 || !slices.Contains(codes(doc.Warnings), WarnDecimalsMismatch) {
		t.Errorf("decimals %d warnings %v", doc.Decimals, codes(doc.Warnings))
	}
	if doc.MaxRaw != "1000000000000000000" {
		t.Errorf("max raw %s: it must use the ledger's decimals", doc.MaxRaw)
	}
}

func TestCommitment(t *testing.T) {
	for _, c := range []struct {
		commitment string
		lag        uint64
	}{{CommitmentProcessed, 0}, {CommitmentConfirmed, 1}, {CommitmentFinalized, 32}} {
		t.Run(c.commitment, func(t *testing.T) {
			cfg := testConfig()
			cfg.Commitment = c.commitment
			f := newFixture(t, classic9(), fixtureOpts{cfg: &cfg})
			f.mustRun(t, contract.DomainSupply)
			env, doc := f.supplyDoc(t)
			if doc.Slot != f.sim.Slot()-c.lag || doc.Commitment != c.commitment || env.Source.Commitment != c.commitment {
				t.Errorf("slot %d commitment %s, want %d %s", doc.Slot, doc.Commitment, f.sim.Slot()-c.lag, c.commitment)
			}
			if !strings.Contains(doc.Methodology.TotalSupply, c.commitment+" commitment") {
				t.Errorf("methodology does not name the commitment: %s", doc.Methodology.TotalSupply)
			}
		})
	}
}

func TestMetadataDocuments(t *testing.T) {
	mismatch := t22six()
	mismatch.Mint = key("t22-mismatch")
	mismatch.Name, mismatch.Symbol = "Demo Token Old", "DEM0"
	padded := classic9()
	padded.Mint = key("classic-long")
	padded.Name = "A name of exactly thirty-two chr" // fills the 32-byte field: no NUL
	padded.Symbol = "DEMO"

	cases := []struct {
		name     string
		tok      solanasim.Token
		source   string // "" when none
		warnings []string
	}{
		{"metaplex", classic9(), contract.MetadataSourceMetaplex, nil},
		{"token2022_extension", t22six(), contract.MetadataSourceToken2022, nil},
		{"token2022_metaplex", t22Metaplex(), contract.MetadataSourceMetaplex, nil},
		{"none", zeroDecimals(), "", []string{WarnMetadataMissing}},
		{"mismatch", mismatch, contract.MetadataSourceToken2022, []string{WarnNameMismatch, WarnSymbolMismatch}},
		{"metaplex_full_field", padded, contract.MetadataSourceMetaplex, []string{WarnNameMismatch}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, tc.tok, fixtureOpts{})
			f.mustRun(t, contract.DomainMetadata)
			env, doc := f.metadataDoc(t)
			if got := codes(doc.Warnings); !slices.Equal(got, tc.warnings) {
				t.Errorf("warnings %v, want %v", got, tc.warnings)
			}
			if tc.source == "" {
				if doc.OnChain != nil {
					t.Errorf("on-chain metadata %+v, want none", doc.OnChain)
				}
			} else {
				on := doc.OnChain
				if on == nil {
					t.Fatal("no on-chain metadata")
				}
				if on.Name != tc.tok.Name || on.Symbol != tc.tok.Symbol || on.URI != tc.tok.URI || on.Source != tc.source {
					t.Errorf("on-chain %+v, want %q %q %q from %s", on, tc.tok.Name, tc.tok.Symbol, tc.tok.URI, tc.source)
				}
				wantAddr := tc.tok.Mint
				if tc.source == contract.MetadataSourceMetaplex {
					wantAddr, _ = solanasim.MetadataAddress(tc.tok.Mint)
				}
				if on.Address != wantAddr {
					t.Errorf("address %s, want %s", on.Address, wantAddr)
				}
				if on.UpdateAuthority == nil || *on.UpdateAuthority != authority {
					t.Errorf("update authority %v", on.UpdateAuthority)
				}
			}
			golden.Check(t, "metadata_"+tc.name, normalized(t, env.Envelope), *update)
		})
	}
}

// TestMetadataWithoutOfficialIdentity: a token given by TOKEN_MINT alone
// has no official name to compare with, so nothing is flagged.
func TestMetadataWithoutOfficialIdentity(t *testing.T) {
	tok := classic9()
	tok.Name = "Whatever"
	bare, err := config.TokenFromMint(tok.Mint, "1000000000")
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, tok, fixtureOpts{token: &bare})
	f.mustRun(t, contract.DomainMetadata)
	if _, doc := f.metadataDoc(t); len(doc.Warnings) != 0 || doc.OnChain.Name != "Whatever" {
		t.Errorf("doc %+v", doc)
	}
}

// faultCase is one injected upstream failure and the kind it must be
// recorded as.
type faultCase struct {
	name  string
	fault fault.Fault
	kind  string
}

func faultCases() []faultCase {
	return []faultCase{
		{"latency_beyond_timeout", fault.Fault{Kind: fault.Latency, Delay: 2 * time.Second}, contract.ErrKindUnavailable},
		{"http_429", fault.Fault{Kind: fault.HTTP429}, contract.ErrKindRateLimited},
		{"http_403", fault.Fault{Kind: fault.HTTP403}, contract.ErrKindForbidden},
		{"http_500", fault.Fault{Kind: fault.HTTP500}, contract.ErrKindUnavailable},
		{"http_503", fault.Fault{Kind: fault.HTTP503}, contract.ErrKindUnavailable},
		{"reset", fault.Fault{Kind: fault.Reset}, contract.ErrKindUnavailable},
		{"truncate", fault.Fault{Kind: fault.Truncate, AfterBytes: 40}, contract.ErrKindInvalid},
		{"malformed", fault.Fault{Kind: fault.Malformed}, contract.ErrKindInvalid},
		{"rpc_node_unhealthy", fault.Fault{Kind: fault.RPCNodeUnhealthy}, contract.ErrKindNodeBehind},
		{"rpc_invalid_params", fault.Fault{Kind: fault.RPCInvalidParams}, contract.ErrKindRPC},
		{"rpc_method_not_found", fault.Fault{Kind: fault.RPCMethodNotFound}, contract.ErrKindRPC},
		{"rpc_excluded_index", fault.Fault{Kind: fault.RPCExcludedIndex}, contract.ErrKindRPC},
	}
}

// TestFaults injects every fault kind of the simulator into each RPC call
// of each domain: the poll fails with the right kind, the previous
// document stays byte-identical, and the status record and the logs say
// so without the RPC URL.
func TestFaults(t *testing.T) {
	targets := []struct {
		domain contract.Domain
		method string
	}{
		{contract.DomainSupply, methodGetTokenSupply},
		{contract.DomainSupply, methodGetAccountInfo},
		{contract.DomainMetadata, methodGetAccountInfo},
	}
	cfg := testConfig()
	cfg.RPCTimeout = 250 * time.Millisecond
	f := newFixture(t, classic9(), fixtureOpts{cfg: &cfg})
	f.mustRun(t, contract.DomainSupply)
	f.mustRun(t, contract.DomainMetadata)

	for _, tg := range targets {
		for _, fc := range faultCases() {
			t.Run(string(tg.domain)+"/"+tg.method+"/"+fc.name, func(t *testing.T) {
				before := f.raw(t, tg.domain)
				prevFailures := f.c.Runner().Status().Runs[tg.domain].ConsecutiveFailures
				f.sim.Faults().Inject(tg.method, fc.fault) // every try fails
				runErr := f.c.RunOnce(context.Background(), tg.domain)
				f.sim.Faults().ClearAll()

				var ce *collector.Error
				if !errors.As(runErr, &ce) || ce.Kind != fc.kind {
					t.Fatalf("RunOnce = %v, want kind %s", runErr, fc.kind)
				}
				if after := f.raw(t, tg.domain); string(after) != string(before) {
					t.Errorf("a failed poll changed the document:\nbefore %s\nafter  %s", before, after)
				}
				sts, err := f.store.ReadStatuses(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				run := sts[contract.CollectorSupply].Runs[tg.domain]
				if run.OK || run.ErrorKind != fc.kind || run.Error == "" || run.ConsecutiveFailures != prevFailures+1 || run.LastSuccessAt == nil {
					t.Errorf("status run %+v, want failed %s after %d failures", run, fc.kind, prevFailures)
				}
				if !strings.Contains(run.Error, tg.method) {
					t.Errorf("status error %q does not name the method %s", run.Error, tg.method)
				}
				if run.Remedy == "" {
					t.Errorf("status run of %s has no remedy", fc.kind)
				}
				if fc.kind == contract.ErrKindUnavailable && fc.name != "http_500" && fc.name != "http_503" {
					// no answer: the variable and the host are named, the key is not
					host := strings.TrimPrefix(strings.SplitN(f.rpcURL, "/?", 2)[0], "http://")
					if !strings.Contains(run.Error, "SOLANA_RPC_URL (host "+host+")") {
						t.Errorf("a connection failure does not name the variable and the host: %q", run.Error)
					}
				}
				st, _ := json.Marshal(sts)
				f.assertNoSecret(t, "status record", string(st))
				f.assertNoSecret(t, "logs", f.logs.String())
				f.assertNoSecret(t, "error", runErr.Error())
			})
		}
	}
	// The debug log carries the client's own error text, redacted.
	if !strings.Contains(f.logs.String(), "[redacted]") || !strings.Contains(f.logs.String(), "JSON-RPC error -32005") {
		t.Error("no redacted RPC error in the debug log: the secret check above proves nothing")
	}
	// Recovery: the next good poll writes and resets the failure count.
	f.mustRun(t, contract.DomainSupply)
	if run := f.c.Runner().Status().Runs[contract.DomainSupply]; !run.OK || run.ConsecutiveFailures != 0 {
		t.Errorf("after recovery: %+v", run)
	}
	// Every failure was observed by RPC method and outcome.
	if n := f.metric(t, "tokendata_upstream_requests_total", map[string]string{
		"upstream": contract.UpstreamSolanaRPC, "method": methodGetTokenSupply, "outcome": contract.ErrKindRateLimited}); n != 1 {
		// The 429 asks for 1 s, more than half the 200 ms refresh: the poll
		// ends after its first try rather than retrying before that.
		t.Errorf("getTokenSupply rate_limited observed %v times, want 1 (no retry before its Retry-After)", n)
	}
}

// metric sums the values of the counters or gauges (or the sample counts
// of the histograms) name whose labels include labels; 0 when none.
func (f *fixture) metric(t testing.TB, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := f.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if v, ok := labels[lp.GetName()]; ok && v != lp.GetValue() {
					continue next
				}
			}
			switch {
			case m.GetCounter() != nil:
				sum += m.GetCounter().GetValue()
			case m.GetHistogram() != nil:
				sum += float64(m.GetHistogram().GetSampleCount())
			case m.GetGauge() != nil:
				sum += m.GetGauge().GetValue()
			}
		}
	}
	return sum
}
