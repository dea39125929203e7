package edge

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/tokendata/tokendata/services/edge/edgetest"
	"github.com/tokendata/tokendata/services/edge/view"
	"github.com/tokendata/tokendata/shared/contract"
)

// TestEchoedMessagesCarryNoURL: a status record's message is shown to the
// public; whatever a collector wrote, no URL (where keys live) goes out,
// even when this process does not know the secret.
func TestEchoedMessagesCarryNoURL(t *testing.T) {
	h := newHarness(t, nil)
	st := edgetest.Unsupported(t0)
	run := st.Runs[contract.DomainHolders]
	run.Error = `Post "https://mainnet.helius-rpc.com/?api-key=SECRETKEY": getProgramAccounts disabled`
	st.Runs[contract.DomainHolders] = run
	if err := h.store.WriteStatus(context.Background(), st); err != nil {
		t.Fatal(err)
	}
	h.refresh()
	for _, p := range []string{view.PathHolders, view.PathStatus} {
		rec := h.do(http.MethodGet, p)
		if strings.Contains(rec.Body.String(), "SECRETKEY") || strings.Contains(rec.Body.String(), "helius-rpc.com") {
			t.Errorf("%s leaks the URL: %s", p, rec.Body)
		}
	}
	if rec := h.do(http.MethodGet, view.PathHolders); rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), "holders_unavailable") {
		t.Errorf("holders: %d %s", rec.Code, rec.Body)
	}
}
