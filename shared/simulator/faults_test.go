package simulator

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/tokendata/tokendata/shared/simulator/solanasim"
)

// TestFaultsControl sets and clears faults over HTTP while the simulator
// runs, as a test on a cluster does through a port-forward: the routes
// answer the fault once it is set, and normally once it is cleared; a bad
// spec in a request sets none of its faults.
func TestFaultsControl(t *testing.T) {
	s, err := Start(context.Background(), Options{Mint: mint, Seed: 1, Accounts: 50, Nodes: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	faults := s.RPCURL + solanasim.ControlPrefix + FaultsControl

	control := func(method string, specs ...string) (int, string) {
		t.Helper()
		q := url.Values{"set": specs}
		req, _ := http.NewRequest(method, faults+"?"+q.Encode(), nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = resp.Body.Close() }()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, strings.TrimSpace(string(b))
	}
	rpcStatus := func(base string) int {
		t.Helper()
		body := `{"jsonrpc":"2.0","id":1,"method":"getTokenSupply","params":["` + mint + `"]}`
		resp, err := http.Post(base, "application/json", bytes.NewBufferString(body))
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = resp.Body.Close() }()
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode
	}
	dexUp := func() bool {
		resp, err := http.Get(s.DexScreenerURL + "/token-pairs/v1/solana/" + mint)
		if err != nil {
			return false // down: the connection reset
		}
		defer func() { _ = resp.Body.Close() }()
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode == http.StatusOK
	}
	if rpcStatus(s.RPCURL) != http.StatusOK || rpcStatus(s.NodeURLs[0]) != http.StatusOK || !dexUp() {
		t.Fatal("a route fails before any fault")
	}

	for _, bad := range [][]string{
		{"getTokenSupply=http_500", "nosuchmethod=http_500"},
		{"getTokenSupply=http_500", "dexscreener=rpc_excluded_index"},
		{"getTokenSupply=http_500", "node2=down"}, // one node
		{"getTokenSupply=http_500", "node1=sideways"},
		{"getTokenSupply=no_such_kind"},
		{},
	} {
		code, body := control(http.MethodPost, bad...)
		if code != http.StatusBadRequest || body == "" {
			t.Errorf("POST %v: %d %q, want 400 with why", bad, code, body)
		}
		if rpcStatus(s.RPCURL) != http.StatusOK {
			t.Fatalf("POST %v was refused but set getTokenSupply's fault", bad)
		}
	}

	if code, body := control(http.MethodPost, "programNotification=lost*1", "accountSubscribe=http_503"); code != http.StatusOK {
		t.Errorf("POST a PubSub fault: %d %s", code, body)
	}
	code, body := control(http.MethodPost, "getTokenSupply=http_500", "dexscreener=down", "node1=down")
	var set struct{ Set []string }
	if code != http.StatusOK || json.Unmarshal([]byte(body), &set) != nil || len(set.Set) != 3 {
		t.Fatalf("POST: %d %s, want 200 naming the three faults", code, body)
	}
	if got := rpcStatus(s.RPCURL); got != http.StatusInternalServerError {
		t.Errorf("getTokenSupply with its fault set: %d, want 500", got)
	}
	if got := rpcStatus(s.NodeURLs[0]); got != http.StatusServiceUnavailable {
		t.Errorf("node 1 down: %d, want 503", got)
	}
	if dexUp() {
		t.Error("dexscreener answered while down")
	}

	if code, body := control(http.MethodDelete); code != http.StatusOK || body != `{"set":[]}` {
		t.Errorf("DELETE: %d %s", code, body)
	}
	if rpcStatus(s.RPCURL) != http.StatusOK || rpcStatus(s.NodeURLs[0]) != http.StatusOK || !dexUp() {
		t.Error("a route still fails after every fault was cleared")
	}
	if code, _ := control(http.MethodGet); code != http.StatusMethodNotAllowed {
		t.Errorf("GET: %d, want 405", code)
	}
}
