package solanasim

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tokendata/tokendata/shared/simulator/fault"
)

// TestEndlessStreamFault: getProgramAccounts streams new accounts, each of
// a new owner with a balance, for as long as the client reads, and the
// handler stops when the client hangs up (goleak checks it).
func TestEndlessStreamFault(t *testing.T) {
	s, url := start(t, 10)
	s.Faults().Inject("getProgramAccounts", fault.Fault{Kind: fault.EndlessStream, Times: 1})
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "getProgramAccounts",
		"params": []any{TokenProgramID, map[string]any{"encoding": "base64", "withContext": true,
			"dataSlice": map[string]int{"offset": 32, "length": 40}}}})
	resp, err := http.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	const want = 8 << 20 // far more than the token has
	head := make([]byte, want)
	if _, err := io.ReadFull(resp.Body, head); err != nil {
		t.Fatalf("the stream ended after less than %d bytes: %v", want, err)
	}
	_ = resp.Body.Close()
	if !bytes.HasPrefix(head, []byte(`{"jsonrpc":"2.0","result":{"context":{`)) {
		t.Fatalf("not a getProgramAccounts answer: %.100s", head)
	}
	// The second and the thousandth element: different owners, amount 1.
	items := bytes.Split(head, []byte(`{"pubkey":`))
	if len(items) < 1000 {
		t.Fatalf("%d accounts in %d bytes", len(items), want)
	}
	seen := map[string]bool{}
	for _, it := range [][]byte{items[2], items[999]} {
		_, rest, _ := bytes.Cut(it, []byte(`"data":["`))
		b64, _, _ := bytes.Cut(rest, []byte(`"`))
		data, err := base64.StdEncoding.DecodeString(string(b64))
		if err != nil || len(data) != 40 || data[32] != 1 {
			t.Fatalf("account data %q: %v", b64, err)
		}
		seen[string(data[:32])] = true
	}
	if len(seen) != 2 {
		t.Fatal("two accounts of one owner")
	}
	if _, rerr := rpcCall(t, url, "getSlot", nil); rerr != nil {
		t.Fatalf("the fault outlived its one request: %+v", rerr)
	}
}

// TestEndlessPagesFault: getTokenAccounts answers a full page of new owners
// and a cursor to the next, page after page.
func TestEndlessPagesFault(t *testing.T) {
	s, url := start(t, 10)
	s.Faults().Inject("getTokenAccounts", fault.Fault{Kind: fault.EndlessStream})
	owners := map[string]bool{}
	cursor := ""
	for page := range 5 {
		params := map[string]any{"mint": classicMint, "limit": 1000}
		if cursor != "" {
			params["cursor"] = cursor
		}
		res, rerr := rpcCall(t, url, "getTokenAccounts", params)
		if rerr != nil {
			t.Fatal(rerr)
		}
		var p struct {
			Cursor        string `json:"cursor"`
			TokenAccounts []struct {
				Mint, Owner string
				Amount      uint64
			} `json:"token_accounts"`
		}
		if err := json.Unmarshal(res, &p); err != nil {
			t.Fatal(err)
		}
		if len(p.TokenAccounts) != 1000 || p.Cursor == "" || p.Cursor == cursor {
			t.Fatalf("page %d: %d accounts, cursor %q", page, len(p.TokenAccounts), p.Cursor)
		}
		for _, a := range p.TokenAccounts {
			if a.Mint != classicMint || a.Amount != 1 || owners[a.Owner] {
				t.Fatalf("page %d: %+v", page, a)
			}
			owners[a.Owner] = true
		}
		cursor = p.Cursor
	}
}

// TestHugeErrorFault: the node's error message is 8 MiB of valid UTF-8
// with multi-byte characters, on any method.
func TestHugeErrorFault(t *testing.T) {
	s, url := start(t, 10)
	s.Faults().Inject("*", fault.Fault{Kind: fault.HugeError, Times: 1})
	_, rerr := rpcCall(t, url, "getTokenAccounts", map[string]any{"mint": classicMint})
	if rerr == nil {
		t.Fatal("no error")
	}
	if rerr.Code != CodeInternalError || len(rerr.Message) < HugeMessageBytes ||
		!utf8.ValidString(rerr.Message) || !strings.Contains(rerr.Message, "€") {
		t.Fatalf("code %d, message of %d bytes", rerr.Code, len(rerr.Message))
	}
}
