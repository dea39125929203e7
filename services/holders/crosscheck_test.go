package holders_test

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/tokendata/tokendata/services/holders"
	"github.com/tokendata/tokendata/services/holders/holderstest"
	"github.com/tokendata/tokendata/shared/config"
	"github.com/tokendata/tokendata/shared/contract"
	"github.com/tokendata/tokendata/shared/simulator/solanasim"
)

// crossFixture starts a primary node and a second one over the same
// simulated ledger, and a collector that counts from the first and
// cross-checks with the second (method second, every every-th poll).
func crossFixture(t *testing.T, second string, every int) (*solanasim.Server, *solanasim.Node, fixture) {
	t.Helper()
	s, url := sim(t, holderstest.ClassicToken(200))
	node := s.NewNode()
	nodeURL, err := node.StartOn(context.Background(), "", 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = node.Close() })
	cfg := holders.DefaultConfig()
	cfg.CrossCheckRPCURL = config.Secret(nodeURL + "/?api-key=" + apiKey + "-second")
	cfg.CrossCheckMethod = second
	cfg.CrossCheckEvery = every
	return s, node, newCollector(t, setup{url: url, mint: holderstest.ClassicMint, cfg: cfg})
}

func poll(t *testing.T, f fixture) contract.Holders {
	t.Helper()
	if err := f.c.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	h, _ := readHolders(t, f.store)
	return h
}

// TestCrossCheckAgreed: a second source (DAS over the same ledger) counts
// the same holders at the same slot: agreed, no warning, the metric says so.
func TestCrossCheckAgreed(t *testing.T) {
	s, _, f := crossFixture(t, contract.HoldersMethodDAS, 1)
	h := poll(t, f)
	checkTruth(t, s, holderstest.ClassicMint, h)
	x := h.CrossCheck
	if x == nil {
		t.Fatal("no cross_check in the document")
	}
	if x.Verdict != contract.HoldersAgreed || x.Primary.Holders != h.Holders || x.Secondary.Holders != h.Holders ||
		x.Difference != 0 || x.SlotDistance != 0 || x.Primary.Slot != h.Slot || x.Secondary.Slot != h.Slot {
		t.Errorf("cross_check %+v, want agreed at the same slot and count %d (slot %d)", *x, h.Holders, h.Slot)
	}
	if x.Primary.Method != contract.HoldersMethodGPA || x.Secondary.Method != contract.HoldersMethodDAS {
		t.Errorf("methods %q and %q", x.Primary.Method, x.Secondary.Method)
	}
	if x.AllowedChurn != 5 || x.CheckedAt.IsZero() {
		t.Errorf("allowed churn %d (want the floor, 5), checked_at %v", x.AllowedChurn, x.CheckedAt)
	}
	if len(h.Warnings) != 0 {
		t.Errorf("warnings %v", h.Warnings)
	}
	if v := metricValue(t, f.reg, "tokendata_holders_crosscheck_verdict", map[string]string{"verdict": "agreed"}); v != 1 {
		t.Errorf("verdict agreed metric %v", v)
	}
}

// TestCrossCheckDisagree: a second node that lost 60 accounts from its
// index counts fewer holders at the same slot: the verdict is disagree with
// both counts, the primary's (true) count is published, not an average,
// with the holders_sources_disagree warning; the next poll checks again
// (though HOLDERS_CROSSCHECK_EVERY is 10) and, the node healed, agrees.
func TestCrossCheckDisagree(t *testing.T) {
	s, node, f := crossFixture(t, contract.HoldersMethodGPA, 10)
	node.SetFault(solanasim.NodeFault{Kind: solanasim.NodeHide, Accounts: 60})
	h := poll(t, f)
	checkTruth(t, s, holderstest.ClassicMint, h)
	x := h.CrossCheck
	if x == nil || x.Verdict != contract.HoldersDisagree {
		t.Fatalf("cross_check %+v, want disagree", x)
	}
	if x.Primary.Holders != h.Holders || x.Secondary.Holders >= h.Holders || x.Difference != h.Holders-x.Secondary.Holders ||
		x.Difference <= x.AllowedChurn {
		t.Errorf("cross_check %+v with the published %d", *x, h.Holders)
	}
	if len(h.Warnings) != 1 || h.Warnings[0].Code != contract.WarnHoldersSourcesDisagree || h.Warnings[0].Message != x.Reason {
		t.Errorf("warnings %v", h.Warnings)
	}
	if strings.Contains(x.Reason, apiKey) || strings.Contains(x.Reason, "127.0.0.1") {
		t.Errorf("the reason quotes an endpoint: %s", x.Reason)
	}
	if v := metricValue(t, f.reg, "tokendata_holders_crosscheck_verdict", map[string]string{"verdict": "disagree"}); v != 1 {
		t.Errorf("verdict disagree metric %v", v)
	}

	node.SetFault(solanasim.NodeFault{})
	h2 := poll(t, f)
	if h2.CrossCheck == nil || h2.CrossCheck.Verdict != contract.HoldersAgreed || !h2.CrossCheck.CheckedAt.After(x.CheckedAt) {
		t.Fatalf("after the node healed: cross_check %+v, want a new check that agrees", h2.CrossCheck)
	}
	if len(h2.Warnings) != 0 {
		t.Errorf("warnings %v after agreement", h2.Warnings)
	}
}

// TestCrossCheckEvery: with HOLDERS_CROSSCHECK_EVERY=3 the first poll
// checks, the two next carry that check, the fourth checks again.
func TestCrossCheckEvery(t *testing.T) {
	_, _, f := crossFixture(t, contract.HoldersMethodGPA, 3)
	first := poll(t, f).CrossCheck
	if first == nil {
		t.Fatal("the first poll did not check")
	}
	for i := 2; i <= 3; i++ {
		if got := poll(t, f).CrossCheck; got == nil || !got.CheckedAt.Equal(first.CheckedAt) {
			t.Fatalf("poll %d: cross_check %+v, want the first poll's carried", i, got)
		}
	}
	if got := poll(t, f).CrossCheck; got == nil || !got.CheckedAt.After(first.CheckedAt) {
		t.Fatalf("poll 4: cross_check %+v, want a new check", got)
	}
}

// TestCrossCheckSecondDown: a second source that fails never fails the
// poll: the primary's count is published, not_checked with the error kind,
// the endpoint never quoted.
func TestCrossCheckSecondDown(t *testing.T) {
	s, node, f := crossFixture(t, contract.HoldersMethodDAS, 1)
	node.SetFault(solanasim.NodeFault{Kind: solanasim.NodeDown})
	h := poll(t, f)
	checkTruth(t, s, holderstest.ClassicMint, h)
	x := h.CrossCheck
	if x == nil || x.Verdict != contract.HoldersNotChecked || x.ErrorKind != contract.ErrKindUnavailable || x.Secondary.Holders != 0 {
		t.Fatalf("cross_check %+v, want not_checked upstream_unavailable", x)
	}
	if len(h.Warnings) != 0 {
		t.Errorf("warnings %v", h.Warnings)
	}
	if strings.Contains(x.Reason, apiKey) || strings.Contains(f.logs.String(), apiKey) {
		t.Errorf("an API key in the reason or the logs: %s", x.Reason)
	}
}

// TestNoCrossCheck: without a second source the document has none.
func TestNoCrossCheck(t *testing.T) {
	_, url := sim(t, holderstest.ClassicToken(50))
	f := newCollector(t, setup{url: url, mint: holderstest.ClassicMint})
	if h := poll(t, f); h.CrossCheck != nil || h.Warnings != nil {
		t.Errorf("cross_check %+v warnings %v without a second source", h.CrossCheck, h.Warnings)
	}
}

func TestAllowedChurn(t *testing.T) {
	for _, c := range []struct {
		dist         uint64
		floor, per1k int64
		want         uint64
	}{
		{0, 5, 500, 5},
		{1, 5, 500, 6}, // ceil(0.5)
		{2, 5, 500, 6}, // 1
		{1000, 5, 500, 505},
		{25, 0, 0, 0},
		{math.MaxUint64, 5, 500, math.MaxUint64}, // saturates
	} {
		if got := holders.AllowedChurn(c.dist, c.floor, c.per1k); got != c.want {
			t.Errorf("AllowedChurn(%d, %d, %d) = %d, want %d", c.dist, c.floor, c.per1k, got, c.want)
		}
	}
}

func TestCrossCheckConfig(t *testing.T) {
	cfg := holders.DefaultConfig()
	cfg.CrossCheckMethod = "both"
	cfg.CrossCheckRPCURL = "ftp://x.example/?api-key=" + apiKey
	err := cfg.Validate()
	if err == nil || !strings.Contains(err.Error(), "HOLDERS_CROSSCHECK_METHOD") || !strings.Contains(err.Error(), "HOLDERS_CROSSCHECK_RPC_URL") {
		t.Fatalf("Validate: %v", err)
	}
	if strings.Contains(err.Error(), apiKey) {
		t.Errorf("the error quotes the URL: %v", err)
	}
}
