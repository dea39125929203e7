package solanasim

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/mr-tron/base58"

	"github.com/tokendata/tokendata/shared/simulator/fault"
	"github.com/tokendata/tokendata/shared/simulator/solanasim/ledger"
)

// programSubscribe subscribes c to program with cfg and returns the id.
func programSubscribe(t *testing.T, c *websocket.Conn, program string, cfg map[string]any) uint64 {
	t.Helper()
	f := request(t, c, 7, "programSubscribe", program, cfg)
	var id uint64
	if f.Error != nil || json.Unmarshal(f.Result, &id) != nil || id == 0 || string(f.ID) != "7" {
		t.Fatalf("programSubscribe: %+v %s", f.Error, f.Result)
	}
	return id
}

// classicFilters are the collector's filters for the classic mint: the
// mint at 0 and dataSize 165.
func classicFilters(enc string) map[string]any {
	return map[string]any{"commitment": "confirmed", "encoding": enc, "filters": []any{
		map[string]any{"memcmp": map[string]any{"offset": 0, "bytes": classicMint}},
		map[string]any{"dataSize": 165},
	}}
}

// t22Filters: the mint filter alone (base64 bytes), processed.
func t22Filters() map[string]any {
	b, _ := base58.Decode(t22Mint)
	return map[string]any{"commitment": "processed", "encoding": "base64", "filters": []any{
		map[string]any{"memcmp": map[string]any{"offset": 0, "bytes": base64.StdEncoding.EncodeToString(b), "encoding": "base64"}},
	}}
}

// holderChange posts a holder change to the control endpoint.
func holderChange(t *testing.T, u, path string) HolderChange {
	t.Helper()
	status, b := post(t, u+"/_simulator/holders/"+path, "")
	var ch HolderChange
	if status != http.StatusOK || json.Unmarshal(b, &ch) != nil || len(ch.Accounts) == 0 {
		t.Fatalf("%s: %d %s", path, status, b)
	}
	return ch
}

// notified is one programNotification, decoded.
type notified struct {
	sub, slot    uint64
	pubkey       string
	mint, holder string
	amount       uint64
	owner        string
	space        int
}

// nextProgram reads the next frame of c, which must be a base64
// programNotification.
func nextProgram(t *testing.T, c *websocket.Conn) notified {
	t.Helper()
	f, b, err := next(t, c, 5*time.Second)
	if err != nil || f.Method != "programNotification" {
		t.Fatalf("programNotification: %v %s", err, b)
	}
	var v struct {
		Pubkey  string `json:"pubkey"`
		Account struct {
			Lamports   uint64   `json:"lamports"`
			Data       []string `json:"data"`
			Owner      string   `json:"owner"`
			Executable *bool    `json:"executable"`
			RentEpoch  *uint64  `json:"rentEpoch"`
			Space      int      `json:"space"`
		} `json:"account"`
	}
	if err := json.Unmarshal(f.Params.Result.Value, &v); err != nil || len(v.Account.Data) != 2 || v.Account.Data[1] != "base64" ||
		v.Account.Executable == nil || *v.Account.Executable || v.Account.RentEpoch == nil || v.Account.Lamports != ledger.RentExempt(v.Account.Space) {
		t.Fatalf("value: %v %s", err, b)
	}
	data, err := base64.StdEncoding.DecodeString(v.Account.Data[0])
	if err != nil || len(data) != v.Account.Space || len(data) < ledger.TokenAccountLen {
		t.Fatalf("data: %v %s", err, b)
	}
	return notified{
		sub: f.Params.Subscription, slot: f.Params.Result.Context.Slot, pubkey: v.Pubkey,
		mint: base58.Encode(data[:32]), holder: base58.Encode(data[32:64]),
		amount: binary.LittleEndian.Uint64(data[64:72]), owner: v.Account.Owner, space: v.Account.Space,
	}
}

// expect checks that n tells account a of change ch, by subscription sub
// at commitment lag lag.
func (n notified) expect(t *testing.T, sub uint64, mint, program string, ch HolderChange, a AccountChange, lag uint64) {
	t.Helper()
	if n.sub != sub || n.slot != ch.Slot-lag || n.pubkey != a.Address || n.mint != mint || n.holder != a.Owner ||
		n.amount != a.Amount || n.owner != program || ch.Mint != mint {
		t.Fatalf("notification %+v, want %+v of %+v (subscription %d, slot %d)", n, a, ch, sub, ch.Slot-lag)
	}
}

// gpaAccounts lists mint's accounts by getProgramAccounts with the
// subscription's filters: address -> amount, and the context slot.
func gpaAccounts(t *testing.T, u, program string, cfg map[string]any) (map[string]uint64, uint64) {
	t.Helper()
	c := map[string]any{"withContext": true}
	for k, v := range cfg {
		c[k] = v
	}
	res, rerr := rpcCall(t, u, "getProgramAccounts", []any{program, c})
	if rerr != nil {
		t.Fatalf("getProgramAccounts: %+v", rerr)
	}
	var got struct {
		Context struct{ Slot uint64 }
		Value   []struct {
			Pubkey  string
			Account struct{ Data []string }
		}
	}
	if err := json.Unmarshal(res, &got); err != nil {
		t.Fatal(err)
	}
	out := map[string]uint64{}
	for _, a := range got.Value {
		b, _ := base64.StdEncoding.DecodeString(a.Account.Data[0])
		out[a.Pubkey] = binary.LittleEndian.Uint64(b[64:72])
	}
	return out, got.Context.Slot
}

// TestProgramSubscribeHolderChanges: every kind of holder change is
// notified as a node does, once per account and slot, at the change's
// slot minus the commitment's lag; a closure and another mint's changes
// are not; getProgramAccounts and the truth agree with the notifications.
func TestProgramSubscribeHolderChanges(t *testing.T) {
	s, u := start(t, 50)
	other := key("other-classic-mint")
	if err := s.AddToken(Token{Mint: other, Program: ProgramToken, Decimals: 2, Supply: 1e9, Holders: Holders{Accounts: 5, Seed: 3}}); err != nil {
		t.Fatal(err)
	}
	c := dial(t, u)
	sub := programSubscribe(t, c, TokenProgramID, classicFilters("base64"))
	c22 := dial(t, u)
	sub22 := programSubscribe(t, c22, Token2022ProgramID, t22Filters())
	before, _ := s.Truth(classicMint)
	largest, _ := s.Largest(classicMint)

	// A new holder.
	nw := holderChange(t, u, "new?amount=500")
	nextProgram(t, c).expect(t, sub, classicMint, TokenProgramID, nw, nw.Accounts[0], confirmedLag)
	holder := nw.Accounts[0].Address
	if tr, _ := s.Truth(classicMint); tr.Holders != before.Holders+1 || tr.TokenAccounts != before.TokenAccounts+1 ||
		tr.NonZeroAccounts != before.NonZeroAccounts+1 || tr.Owners != before.Owners+1 || tr.TotalAmount != before.TotalAmount+500 {
		t.Errorf("truth after a new holder: %+v, before %+v", tr, before)
	}
	// Sold out, then back.
	out := holderChange(t, u, "sellout?account="+holder)
	nextProgram(t, c).expect(t, sub, classicMint, TokenProgramID, out, AccountChange{Address: holder, Owner: nw.Accounts[0].Owner}, confirmedLag)
	if tr, _ := s.Truth(classicMint); tr.Holders != before.Holders || tr.TokenAccounts != before.TokenAccounts+1 {
		t.Errorf("truth after a sell-out: %+v", tr)
	}
	back := holderChange(t, u, "back?amount=7&account="+holder)
	nextProgram(t, c).expect(t, sub, classicMint, TokenProgramID, back, back.Accounts[0], confirmedLag)
	// A balance moved: two accounts in one slot, in the order changed.
	mv := holderChange(t, u, "move?amount=3&from="+largest[0].Address+"&to="+holder)
	if len(mv.Accounts) != 2 || mv.Accounts[0].Amount != largest[0].Amount-3 || mv.Accounts[1].Amount != 10 {
		t.Fatalf("move: %+v", mv)
	}
	nextProgram(t, c).expect(t, sub, classicMint, TokenProgramID, mv, mv.Accounts[0], confirmedLag)
	nextProgram(t, c).expect(t, sub, classicMint, TokenProgramID, mv, mv.Accounts[1], confirmedLag)
	// An account opened empty, then closed: the closure is not told.
	opened := holderChange(t, u, "open")
	nextProgram(t, c).expect(t, sub, classicMint, TokenProgramID, opened, opened.Accounts[0], confirmedLag)
	closed := holderChange(t, u, "close?account="+opened.Accounts[0].Address)
	if !closed.Accounts[0].Closed {
		t.Fatalf("close: %+v", closed)
	}
	// Another mint of the same program, then the Token-2022 mint.
	holderChange(t, u, "new?amount=1&mint="+other)
	nw22 := holderChange(t, u, "new?amount=9&mint="+t22Mint)
	n22 := nextProgram(t, c22)
	n22.expect(t, sub22, t22Mint, Token2022ProgramID, nw22, nw22.Accounts[0], 0)
	// The next frame of the classic subscription is the next classic
	// change: nothing was sent for the closure, the other mint or
	// Token-2022.
	last := holderChange(t, u, "sellout?account="+holder)
	nextProgram(t, c).expect(t, sub, classicMint, TokenProgramID, last, last.Accounts[0], confirmedLag)

	// getProgramAccounts with the same filters: the state notified.
	accs, slot := gpaAccounts(t, u, TokenProgramID, classicFilters("base64"))
	if slot != s.Slot()-confirmedLag || slot != last.Slot-confirmedLag {
		t.Errorf("getProgramAccounts' context slot %d, want %d", slot, last.Slot-confirmedLag)
	}
	if amt, ok := accs[holder]; !ok || amt != 0 {
		t.Errorf("getProgramAccounts: the holder who sold out: %d %v", amt, ok)
	}
	if _, ok := accs[opened.Accounts[0].Address]; ok {
		t.Error("getProgramAccounts lists the closed account")
	}
	if accs[largest[0].Address] != largest[0].Amount-3 || len(accs) != before.Accounts165+1 {
		t.Errorf("getProgramAccounts: %d accounts, the largest holds %d", len(accs), accs[largest[0].Address])
	}
	// 500 in, 500 sold, 7 back, 3 moved in, 10 sold.
	if tr, _ := s.Truth(classicMint); tr.TokenAccounts != len(accs) || tr.Holders != before.Holders || tr.TotalAmount != before.TotalAmount-3 {
		t.Errorf("truth at the end: %+v, before %+v", tr, before)
	}
	l, _ := s.Largest(classicMint)
	for _, e := range l {
		if e.Address == largest[0].Address && e.Amount != largest[0].Amount-3 {
			t.Errorf("largest after the move: %+v", e)
		}
	}
	// A node's getProgramAccounts of Token-2022 needs more than the mint
	// filter that programSubscribe takes alone.
	cfg22 := t22Filters()
	cfg22["filters"] = append(cfg22["filters"].([]any), "tokenAccountState")
	if accs22, _ := gpaAccounts(t, u, Token2022ProgramID, cfg22); accs22[n22.pubkey] != 9 {
		t.Errorf("getProgramAccounts of Token-2022: the new holder holds %d", accs22[n22.pubkey])
	}
}

// TestProgramUnsubscribe: unsubscribing stops the notifications; an id
// is unsubscribed once.
func TestProgramUnsubscribe(t *testing.T) {
	_, u := start(t, 10)
	c := dial(t, u)
	old := programSubscribe(t, c, TokenProgramID, classicFilters("base64"))
	if f := request(t, c, 8, "programUnsubscribe", old); f.Error != nil || string(f.Result) != "true" {
		t.Fatalf("programUnsubscribe: %+v %s", f.Error, f.Result)
	}
	if f := request(t, c, 9, "programUnsubscribe", old); f.Error == nil || f.Error.Code != CodeInvalidParams || f.Error.Message != "Invalid subscription id." {
		t.Fatalf("programUnsubscribe again: %+v %s", f.Error, f.Result)
	}
	holderChange(t, u, "new?amount=1")
	sub := programSubscribe(t, c, TokenProgramID, classicFilters("base64"))
	ch := holderChange(t, u, "new?amount=2")
	nextProgram(t, c).expect(t, sub, classicMint, TokenProgramID, ch, ch.Accounts[0], confirmedLag)
}

// TestProgramSubscribeErrors: bad params are the node's -32602.
func TestProgramSubscribeErrors(t *testing.T) {
	_, u := start(t, 10)
	c := dial(t, u)
	memcmp := func(bytes string) map[string]any {
		return map[string]any{"memcmp": map[string]any{"offset": 0, "bytes": bytes}}
	}
	for _, tc := range []struct {
		name   string
		params []any
		msg    string
	}{
		{"no params", nil, "`params` should have at least 1 argument(s)"},
		{"bad program", []any{"not-a-key!"}, "Invalid Request: Invalid pubkey provided"},
		{"short program", []any{"1111"}, "Invalid Request: Invalid pubkey provided"},
		{"program not a string", []any{42}, ""},
		{"too many filters", []any{TokenProgramID, map[string]any{"filters": []any{
			memcmp(classicMint), memcmp(classicMint), memcmp(classicMint), memcmp(classicMint), memcmp(classicMint)}}},
			"Too many filters provided; max 4"},
		{"bad memcmp bytes", []any{TokenProgramID, map[string]any{"filters": []any{memcmp("0OIl")}}}, "Invalid param: filter: invalid memcmp bytes"},
		{"unknown filter", []any{TokenProgramID, map[string]any{"filters": []any{map[string]any{"size": 165}}}}, ""},
		{"bad filter before bad program", []any{"not-a-key!", map[string]any{"filters": []any{memcmp("0OIl")}}}, "Invalid param: filter: invalid memcmp bytes"},
		{"bad encoding", []any{TokenProgramID, map[string]any{"encoding": "hex"}}, ""},
		{"jsonParsed", []any{TokenProgramID, map[string]any{"encoding": "jsonParsed"}}, ""},
		{"zstd", []any{TokenProgramID, map[string]any{"encoding": "base64+zstd"}}, ""},
		{"bad commitment", []any{TokenProgramID, map[string]any{"commitment": "soon"}}, ""},
		{"unknown field", []any{TokenProgramID, map[string]any{"colour": "red"}}, ""},
		{"unknown id", nil, "Invalid subscription id."},
	} {
		method, params := "programSubscribe", tc.params
		if tc.name == "unknown id" {
			method, params = "programUnsubscribe", []any{424242}
		}
		f := request(t, c, 3, method, params...)
		if f.Error == nil || f.Error.Code != CodeInvalidParams || tc.msg != "" && f.Error.Message != tc.msg {
			t.Errorf("%s: %s %+v, want error %d %q", tc.name, f.Result, f.Error, CodeInvalidParams, tc.msg)
		}
	}
	// Accepted: the config's other fields, and any program.
	for _, cfg := range []map[string]any{
		{"withContext": true, "sortResults": false, "minContextSlot": 1, "dataSlice": map[string]any{"offset": 0, "length": 32}},
		{"commitment": "finalized", "encoding": "base58"},
	} {
		programSubscribe(t, c, TokenProgramID, cfg)
	}
	programSubscribe(t, c, key("some-program"), nil)
}

// TestProgramSubscribeBase58: the default encoding is the legacy binary,
// whose data is the node's error string past 128 bytes, and base58 of a
// data slice that fits.
func TestProgramSubscribeBase58(t *testing.T) {
	_, u := start(t, 10)
	c := dial(t, u)
	sub := programSubscribe(t, c, TokenProgramID, map[string]any{"filters": []any{map[string]any{"dataSize": 165}}})
	c2 := dial(t, u)
	programSubscribe(t, c2, TokenProgramID, map[string]any{"encoding": "base58", "dataSlice": map[string]any{"offset": 64, "length": 8}})
	ch := holderChange(t, u, "new?amount=258")
	f, b, err := next(t, c, 5*time.Second)
	if err != nil || f.Params.Subscription != sub || !strings.Contains(string(b), `"data":"error: data too large for bs58 encoding"`) ||
		f.Params.Result.Context.Slot != ch.Slot-finalizedLag {
		t.Fatalf("binary: %v %s", err, b)
	}
	f, b, err = next(t, c2, 5*time.Second)
	amount := base58.Encode(binary.LittleEndian.AppendUint64(nil, 258))
	if err != nil || !strings.Contains(string(b), `"data":["`+amount+`","base58"]`) || !strings.Contains(string(b), `"space":165`) {
		t.Fatalf("base58 slice: %v %s", err, b)
	}
}

// TestProgramSubscribeLaggingNode: a node lagging K slots notifies a
// change when its slot reaches it, and answers getProgramAccounts without
// it until then.
func TestProgramSubscribeLaggingNode(t *testing.T) {
	s, _ := start(t, 10)
	n, nu := startNode(t, s)
	n.SetFault(NodeFault{Kind: NodeLag, Slots: 100})
	c := dial(t, nu)
	programSubscribe(t, c, TokenProgramID, classicFilters("base64"))
	ch := holderChange(t, nu, "new?amount=5")
	if _, b, err := next(t, c, 300*time.Millisecond); err == nil {
		t.Fatalf("a node 100 slots behind notified at once: %s", b)
	}
	if accs, _ := gpaAccounts(t, nu, TokenProgramID, classicFilters("base64")); len(accs) != 10 {
		t.Errorf("the lagging node lists %d accounts, the new one included", len(accs))
	}
	c = dial(t, nu) // a read that timed out broke the socket
	sub := programSubscribe(t, c, TokenProgramID, classicFilters("base64"))
	s.BumpSlot(60)
	s.BumpSlot(60)
	nextProgram(t, c).expect(t, sub, classicMint, TokenProgramID, ch, ch.Accounts[0], confirmedLag)
	if accs, _ := gpaAccounts(t, nu, TokenProgramID, classicFilters("base64")); accs[ch.Accounts[0].Address] != 5 {
		t.Errorf("the lagging node, past the change, lists %v", accs)
	}
}

// TestProgramSubscribeRefused: the fault table's route programSubscribe
// refuses subscriptions as a node that does not serve the method (-32601,
// the answer of a node started without a subscription), for the times
// set; reset drops the socket; the socket faults apply to program
// notifications as to account ones.
func TestProgramSubscribeRefused(t *testing.T) {
	s, u := start(t, 10)
	c := dial(t, u)
	s.Faults().Inject("programSubscribe", fault.Fault{Kind: fault.RPCMethodNotFound, Times: 1})
	f := request(t, c, 4, "programSubscribe", TokenProgramID, classicFilters("base64"))
	if f.Error == nil || f.Error.Code != CodeMethodNotFound || f.Error.Message != "Method not found" || string(f.ID) != "4" {
		t.Fatalf("refused programSubscribe: %+v %s", f.Error, f.Result)
	}
	subscribe(t, c, classicMint, "base64") // accountSubscribe is served
	programSubscribe(t, c, TokenProgramID, classicFilters("base64"))

	s.Faults().Inject("programSubscribe", fault.Fault{Kind: fault.Reset})
	c2 := dial(t, u)
	if err := c2.WriteJSON(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "programSubscribe", "params": []any{TokenProgramID}}); err != nil {
		t.Fatal(err)
	}
	if _, b, err := next(t, c2, 5*time.Second); err == nil || isTimeout(err) {
		t.Fatalf("reset: %v %s", err, b)
	}
	s.Faults().Clear("programSubscribe")
	for _, r := range []string{"programSubscribe", RouteProgramNotification, RouteAccountNotification} {
		if !Serves(r) {
			t.Errorf("Serves(%s) is false: the simulate command would refuse the route", r)
		}
	}
	if Serves("notAMethod") {
		t.Error("Serves(notAMethod) is true")
	}

	n, nu := startNode(t, s)
	c3 := dial(t, nu)
	programSubscribe(t, c3, TokenProgramID, classicFilters("base64"))
	n.SetSocketFault(SocketStall)
	holderChange(t, u, "new?amount=1")
	if _, b, err := next(t, c3, 300*time.Millisecond); err == nil {
		t.Fatalf("a stalled socket notified: %s", b)
	}
}

// TestHolderControl: the control endpoint's refusals.
func TestHolderControl(t *testing.T) {
	s, u := start(t, 10)
	largest, _ := s.Largest(classicMint)
	for _, tc := range []struct {
		path string
		want int
	}{
		{"new", 400},
		{"new?amount=0", 400},
		{"close?account=" + largest[0].Address, 400}, // a balance
		{"sellout", 400},
		{"back?amount=1&account=" + largest[0].Address, 400}, // not at 0
		{"move?amount=1&from=" + largest[0].Address + "&to=" + largest[0].Address, 400},
		{"move?amount=18446744073709551615&from=" + largest[0].Address + "&to=" + largest[1].Address, 400},
		{"sellout?account=" + key("nobody"), 404},
		{"new?amount=1&mint=" + key("nobody"), 404},
		{"melt", 404},
	} {
		if status, b := post(t, u+"/_simulator/holders/"+tc.path, ""); status != tc.want {
			t.Errorf("%s: %d %s, want %d", tc.path, status, b, tc.want)
		}
	}
	opened := holderChange(t, u, "open")
	holderChange(t, u, "close?account="+opened.Accounts[0].Address)
	if status, b := post(t, u+"/_simulator/holders/close?account="+opened.Accounts[0].Address, ""); status != 404 {
		t.Errorf("closing a closed account: %d %s", status, b)
	}
	resp, err := http.Get(u + "/_simulator/holders/open")
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET: %d", resp.StatusCode)
	}
	if tr, _ := s.Truth(classicMint); tr.TokenAccounts != 10 {
		t.Errorf("after the refusals, an account opened and closed: %d accounts", tr.TokenAccounts)
	}
}
