package wire_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tokendata/tokendata/services/holders/holderstest"
	"github.com/tokendata/tokendata/services/holders/tally"
	"github.com/tokendata/tokendata/services/holders/wire"
)

// TestLongNodeMessageDecoded: a node's error message of any length, with
// escapes, is read in the decoder's fixed window: its start is kept,
// clipped, and the rest skipped, on every decoder.
func TestLongNodeMessageDecoded(t *testing.T) {
	msg := strings.Repeat(`n\u0153ud \"occup\u00e9\" `, 200_000) // 4.6 MB of JSON
	body := `{"jsonrpc":"2.0","error":{"code":-32603,"message":"` + msg + `","data":{}},"id":1}`
	want := `nœud "occupé" nœud`
	check := func(name string, err error) {
		t.Helper()
		var re *wire.RPCError
		if !errors.As(err, &re) || re.Code != -32603 || !strings.HasPrefix(re.Message, want) ||
			len(re.Message) > 300+len("…") || !utf8.ValidString(re.Message) {
			t.Errorf("%s: %v", name, err)
		}
	}
	_, err := wire.DecodeProgramAccounts(strings.NewReader(body), tally.NewCount(), nil)
	check("getProgramAccounts", err)
	_, _, err = wire.DecodeAccountOwner(strings.NewReader(body))
	check("getAccountInfo", err)
	_, _, _, err = wire.DecodeDASPage(strings.NewReader(body), holderstest.ClassicMint, tally.NewCount())
	check("getTokenAccounts", err)
}

// FuzzDecodeAccountOwner: arbitrary bytes never panic, and an owner comes
// only from a valid response, equal to encoding/json's reading.
func FuzzDecodeAccountOwner(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","result":{"context":{"apiVersion":"2.2.1","slot":5},"value":{"data":["","base64"],"executable":false,` +
		`"lamports":1461600,"owner":"TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA","rentEpoch":18446744073709551615,"space":82}},"id":1}`))
	f.Add([]byte(`{"jsonrpc":"2.0","result":{"context":{"slot":5},"value":null},"id":1}`))
	f.Add([]byte(`{"jsonrpc":"2.0","error":{"code":-32602,"message":"Invalid param: \u00e9"},"id":1}`))
	f.Add([]byte(`{"jsonrpc":"2.0","result":{"value":{"owner":"a\"b"}},"id":1} `))
	f.Fuzz(func(t *testing.T, b []byte) {
		owner, exists, err := wire.DecodeAccountOwner(bytes.NewReader(b))
		if err != nil {
			return
		}
		var ref struct {
			Result *struct {
				Value *struct {
					Owner *string `json:"owner"`
				} `json:"value"`
			} `json:"result"`
		}
		if json.Unmarshal(b, &ref) != nil || ref.Result == nil {
			t.Fatalf("decoded an invalid response: %q", b)
		}
		// encoding/json turns invalid UTF-8 into U+FFFD; the decoder keeps
		// the bytes (no token program matches either way).
		if (ref.Result.Value != nil) != exists || exists && (ref.Result.Value.Owner == nil ||
			utf8.ValidString(owner) && *ref.Result.Value.Owner != owner) {
			t.Fatalf("owner %q (exists %v), encoding/json %+v for %q", owner, exists, ref.Result.Value, b)
		}
	})
}
