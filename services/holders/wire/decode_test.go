package wire_test

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/tokendata/tokendata/services/holders/holderstest"
	"github.com/tokendata/tokendata/services/holders/tally"
	"github.com/tokendata/tokendata/services/holders/wire"
	"github.com/tokendata/tokendata/shared/simulator/solanasim"
	"github.com/tokendata/tokendata/shared/testkit/simtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// account renders one keyed account whose 40-byte slice holds owner and
// amount.
func account(owner byte, amount uint64) string {
	var d [40]byte
	d[0] = owner
	binary.LittleEndian.PutUint64(d[32:], amount)
	return `{"pubkey":"11111111111111111111111111111111","account":{"lamports":2039280,"data":["` +
		base64.StdEncoding.EncodeToString(d[:]) + `","base64"],"owner":"` + solanasim.TokenProgramID +
		`","executable":false,"rentEpoch":18446744073709551615,"space":165}}`
}

func response(result string) string { return `{"jsonrpc":"2.0","result":` + result + `,"id":1}` }

func TestDecodeShapes(t *testing.T) {
	three := account(1, 5) + "," + account(1, 0) + "," + account(2, 0) // owner 1 holds; owner 2 has only zero
	tests := []struct {
		name                       string
		body                       string
		accounts, nonZero, holders uint64
		slot                       uint64
		wantErr                    string
	}{
		{"plain array", response("[" + three + "]"), 3, 1, 1, 0, ""},
		{"with context", response(`{"context":{"apiVersion":"2.2.14","slot":42},"value":[` + three + `]}`), 3, 1, 1, 42, ""},
		{"id first, whitespace", "\n{ \"id\" : 1 ,\"result\" : [ " + account(7, 1) + " ] , \"jsonrpc\":\"2.0\" }\n", 1, 1, 1, 0, ""},
		{"escaped key", response(`[{"pubkey":"x","account":{"\u0064ata":["` + base64.StdEncoding.EncodeToString(make([]byte, 40)) + `","base64"]}}]`), 1, 0, 0, 0, ""},
		{"empty", response("[]"), 0, 0, 0, 0, ""},
		{"max amount sums", response("[" + account(3, ^uint64(0)) + "," + account(3, ^uint64(0)) + "]"), 2, 2, 1, 0, ""},
		{"rpc error", `{"jsonrpc":"2.0","error":{"code":-32010,"message":"excluded"},"id":1}`, 0, 0, 0, 0, "JSON-RPC error -32010"},
		{"no data", response(`[{"pubkey":"x","account":{"lamports":1}}]`), 0, 0, 0, 0, "without data"},
		{"wrong length", response(`[{"pubkey":"x","account":{"data":["AAAA","base64"]}}]`), 0, 0, 0, 0, "want 40"},
		{"base58 data", response(`[{"pubkey":"x","account":{"data":"1111","owner":"x"}}]`), 0, 0, 0, 0, "want '['"},
		{"other encoding", response(`[{"pubkey":"x","account":{"data":["` + base64.StdEncoding.EncodeToString(make([]byte, 40)) + `","base58"]}}]`), 0, 0, 0, 0, "want base64"},
		{"trailing garbage", response("[]") + "x", 0, 0, 0, 0, "after the end"},
		{"truncated", response("[" + three + "]")[:200], 0, 0, 0, 0, "ended before"},
		{"neither", `{"jsonrpc":"2.0","id":1}`, 0, 0, 0, 0, "without result or error"},
		{"result twice", `{"result":[],"result":[]}`, 0, 0, 0, 0, "twice"},
		{"fraction slot", response(`{"context":{"slot":1.5},"value":[]}`), 0, 0, 0, 0, "fraction"},
		{"control char", response(`[{"pubkey":"a` + "\n" + `b","account":{}}]`), 0, 0, 0, 0, "control character"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := tally.NewCount()
			slot, err := wire.DecodeProgramAccounts(strings.NewReader(tt.body), c, nil)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.TokenAccounts != tt.accounts || c.NonZeroAccounts != tt.nonZero || c.Holders() != tt.holders || slot != tt.slot {
				t.Errorf("accounts %d non-zero %d holders %d slot %d", c.TokenAccounts, c.NonZeroAccounts, c.Holders(), slot)
			}
		})
	}
}

// TestDecodeOneByteAtATime feeds a real response one byte per Read: every
// token crosses a window refill.
func TestDecodeOneByteAtATime(t *testing.T) {
	s, url := simtest.StartTB(t, holderstest.T22Token(300))
	body := recordGPA(t, url, solanasim.Token2022ProgramID, holderstest.T22Mint, classicFilters(holderstest.T22Mint))
	want := tally.NewCount()
	if _, err := wire.DecodeProgramAccounts(bytes.NewReader(body), want, nil); err != nil {
		t.Fatal(err)
	}
	got := tally.NewCount()
	if _, err := wire.DecodeProgramAccounts(oneByte{bytes.NewReader(body)}, got, nil); err != nil {
		t.Fatal(err)
	}
	truth, _ := s.Truth(holderstest.T22Mint)
	if got.TokenAccounts != want.TokenAccounts || got.Holders() != want.Holders() || got.TokenAccounts != uint64(truth.Accounts165) {
		t.Errorf("one byte at a time: %d/%d, whole: %d/%d, truth 165-byte accounts %d",
			got.TokenAccounts, got.Holders(), want.TokenAccounts, want.Holders(), truth.Accounts165)
	}
}

type oneByte struct{ r io.Reader }

func (o oneByte) Read(p []byte) (int, error) { return o.r.Read(p[:min(1, len(p))]) }

// TestEveryPrefixFails: no prefix of a valid response is ever a count.
func TestEveryPrefixFails(t *testing.T) {
	_, url := simtest.StartTB(t, holderstest.ClassicToken(40))
	body := recordGPA(t, url, solanasim.TokenProgramID, holderstest.ClassicMint, classicFilters(holderstest.ClassicMint))
	body = bytes.TrimRight(body, " \n")
	for n := range len(body) {
		_, err := wire.DecodeProgramAccounts(bytes.NewReader(body[:n]), tally.NewCount(), nil)
		if err == nil {
			t.Fatalf("prefix of %d/%d bytes decoded without error", n, len(body))
		}
	}
}

// TestUnindexedQueryRefused sends a query the node cannot serve from its
// mint index (no mint filter): the simulator refuses it like a real node,
// and the decoder reports the JSON-RPC error, never a count.
func TestUnindexedQueryRefused(t *testing.T) {
	_, url := simtest.StartTB(t, holderstest.ClassicToken(100))
	body := `{"jsonrpc":"2.0","id":1,"method":"getProgramAccounts","params":["` + solanasim.TokenProgramID +
		`",{"encoding":"base64","dataSlice":{"offset":32,"length":40},"filters":[{"dataSize":165}]}]}`
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	c := tally.NewCount()
	_, err = wire.DecodeProgramAccounts(resp.Body, c, nil)
	var re *wire.RPCError
	if !errors.As(err, &re) || re.Code != -32010 || c.TokenAccounts != 0 {
		t.Fatalf("err = %v, accounts %d", err, c.TokenAccounts)
	}
}

// TestBrokenStream: a read error is reported as such, not as a count.
func TestBrokenStream(t *testing.T) {
	r := io.MultiReader(strings.NewReader(`{"jsonrpc":"2.0","result":[`+account(1, 1)+","), errReader{})
	_, err := wire.DecodeProgramAccounts(r, tally.NewCount(), nil)
	if err == nil || !errors.Is(err, errBroken) {
		t.Fatalf("err = %v", err)
	}
}

var errBroken = errors.New("connection reset by peer")

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errBroken }

// reference decodes a getProgramAccounts response with encoding/json
// (exact keys, last duplicate wins), as an oracle for the fuzzer.
func reference(b []byte) (accounts, nonZero, holders uint64, ok bool) {
	var top map[string]json.RawMessage
	if json.Unmarshal(b, &top) != nil || top["error"] != nil || top["result"] == nil {
		return 0, 0, 0, false
	}
	res := top["result"]
	if bytes.HasPrefix(bytes.TrimSpace(res), []byte("{")) {
		var wc map[string]json.RawMessage
		if json.Unmarshal(res, &wc) != nil || wc["value"] == nil {
			return 0, 0, 0, false
		}
		res = wc["value"]
	}
	var items []map[string]json.RawMessage
	if json.Unmarshal(res, &items) != nil {
		return 0, 0, 0, false
	}
	owners := map[[32]byte]bool{}
	for _, it := range items {
		var pk string
		var acc map[string]json.RawMessage
		if json.Unmarshal(it["pubkey"], &pk) != nil || json.Unmarshal(it["account"], &acc) != nil {
			return 0, 0, 0, false
		}
		var data []string
		if json.Unmarshal(acc["data"], &data) != nil || len(data) != 2 || data[1] != "base64" {
			return 0, 0, 0, false
		}
		raw, err := base64.StdEncoding.DecodeString(data[0])
		if err != nil || len(raw) != 40 {
			return 0, 0, 0, false
		}
		accounts++
		if binary.LittleEndian.Uint64(raw[32:]) > 0 {
			nonZero++
			owners[[32]byte(raw[:32])] = true
		}
	}
	return accounts, nonZero, uint64(len(owners)), true
}

// FuzzDecodeProgramAccounts: arbitrary bytes never panic, and a count
// comes only from a valid response, equal to encoding/json's reading.
func FuzzDecodeProgramAccounts(f *testing.F) {
	f.Add([]byte(response("[" + account(1, 5) + "," + account(1, 0) + "," + account(2, 7) + "]")))
	f.Add([]byte(response(`{"context":{"slot":9},"value":[` + account(4, 1) + `]}`)))
	f.Add([]byte(`{"jsonrpc":"2.0","error":{"code":-32010,"message":"x","data":{"a":[1,2.5e3,true,null]}},"id":1}`))
	f.Add([]byte(response(`[{"pubkey":"\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00","account":{"data":["` + base64.StdEncoding.EncodeToString(make([]byte, 40)) + `","base64"]}}]`)))
	f.Add([]byte(response("[" + account(1, 1))))
	f.Add([]byte{0x1f, 0x8b, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		c := tally.NewCount()
		_, err := wire.DecodeProgramAccounts(bytes.NewReader(b), c, nil)
		if err != nil {
			return
		}
		accounts, nonZero, h, ok := reference(b)
		if !ok {
			t.Fatalf("decoded an invalid response: %q", b)
		}
		if accounts != c.TokenAccounts || nonZero != c.NonZeroAccounts || h != c.Holders() {
			t.Fatalf("count %d/%d/%d, encoding/json %d/%d/%d for %q", c.TokenAccounts, c.NonZeroAccounts, c.Holders(), accounts, nonZero, h, b)
		}
	})
}

// FuzzDecodeDASPage: arbitrary bytes never panic; a page decodes only
// from valid JSON.
func FuzzDecodeDASPage(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","result":{"last_indexed_slot":5,"total":1,"limit":1,"cursor":"abc","token_accounts":[{"address":"x","mint":"` +
		holderstest.ClassicMint + `","owner":"` + holderstest.ClassicMint + `","amount":18446744073709551615,"delegated_amount":0,"frozen":false}]},"id":1}`))
	f.Add([]byte(`{"jsonrpc":"2.0","result":{"token_accounts":[]},"id":1}`))
	f.Add([]byte(`{"jsonrpc":"2.0","error":{"code":-32601,"message":"Method not found"},"id":1}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		c := tally.NewCount()
		_, n, _, err := wire.DecodeDASPage(bytes.NewReader(b), holderstest.ClassicMint, c)
		if err != nil {
			return
		}
		if !json.Valid(b) || uint64(n) != c.TokenAccounts {
			t.Fatalf("decoded %d accounts (%d counted) from %q", n, c.TokenAccounts, b)
		}
	})
}

func TestDASAmountAbove2to53(t *testing.T) {
	page := `{"jsonrpc":"2.0","result":{"cursor":"c","token_accounts":[` +
		`{"address":"a","mint":"` + holderstest.ClassicMint + `","owner":"` + holderstest.T22Mint + `","amount":9007199254740993},` +
		`{"address":"b","mint":"` + holderstest.ClassicMint + `","owner":"` + holderstest.T22Mint + `","amount":0},` +
		`{"address":"c","mint":"` + holderstest.ClassicMint + `","owner":"` + holderstest.ClassicMint + `","amount":0}]},"id":1}`
	c := tally.NewCount()
	cursor, n, _, err := wire.DecodeDASPage(strings.NewReader(page), holderstest.ClassicMint, c)
	if err != nil || cursor != "c" || n != 3 || c.Holders() != 1 || c.NonZeroAccounts != 1 {
		t.Fatalf("cursor %q n %d holders %d err %v", cursor, n, c.Holders(), err)
	}
	for name, bad := range map[string]string{
		"fraction":   strings.Replace(page, "9007199254740993", "1.5", 1),
		"negative":   strings.Replace(page, "9007199254740993", "-1", 1),
		"other mint": strings.Replace(page, `"mint":"`+holderstest.ClassicMint, `"mint":"`+holderstest.T22Mint, 1),
		"no amount":  strings.Replace(page, `,"amount":9007199254740993`, ``, 1),
		"bad owner":  strings.Replace(page, `"owner":"`+holderstest.T22Mint, `"owner":"0OIl"`, 1),
	} {
		if _, _, _, err := wire.DecodeDASPage(strings.NewReader(bad), holderstest.ClassicMint, tally.NewCount()); err == nil {
			t.Errorf("%s: decoded", name)
		}
	}
}

// FuzzDecodeProgramNotification: arbitrary account data never panics,
// and is read only at a length the subscription's slice or a whole token
// account has, the owner and amount from the bytes at their place.
func FuzzDecodeProgramNotification(f *testing.F) {
	mint := tally.Owner{9}
	for _, n := range []int{40, 133, 134, 165, 166, 0, 39, 72} {
		f.Add(bytes.Repeat([]byte{2}, n), false)
		f.Add(append(append([]byte(nil), mint[:]...), bytes.Repeat([]byte{2}, max(n-32, 0))...), true)
	}
	f.Fuzz(func(t *testing.T, data []byte, t22 bool) {
		program := solanasim.ProgramToken.ID()
		if t22 {
			program = solanasim.Token2022ProgramID
		}
		msg := `{"jsonrpc":"2.0","method":"programNotification","params":{"result":{"context":{"slot":7},"value":{"pubkey":"` +
			solanasim.ProgramToken.ID() + `","account":{"data":["` + base64.StdEncoding.EncodeToString(data) + `","base64"],"owner":"` +
			program + `"}}},"subscription":3}}`
		ch, err := wire.DecodeProgramNotification([]byte(msg), &mint, program)
		if err != nil {
			return
		}
		part := data
		switch n := len(data); {
		case n >= 165:
			part = data[32:]
		case !t22 && n == 40, t22 && (n == 133 || n == 134):
		default:
			t.Fatalf("read %d bytes of data (Token-2022 %v)", n, t22)
		}
		if ch.Slot != 7 || ch.Subscription != 3 || ch.Owner != tally.Owner(part[:32]) || ch.Amount != binary.LittleEndian.Uint64(part[32:40]) {
			t.Fatalf("read %+v from %x", ch, data)
		}
	})
}
