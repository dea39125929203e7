package ledger

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"sync"
	"testing"

	"github.com/mr-tron/base58"
)

// key returns a deterministic valid address for name.
func key(name string) string {
	h := sha256.Sum256([]byte(name))
	return base58.Encode(h[:])
}

var (
	classicMint = key("classic-mint")
	t22Mint     = key("t22-mint")
	authority   = key("authority")
)

func classicToken(n int) Token {
	return Token{
		Mint: classicMint, Program: ProgramToken, Decimals: 9,
		Supply:        999_999_999_123_456_789,
		MintAuthority: "", FreezeAuthority: authority,
		Metadata: MetadataMetaplex, Name: "Demo Token", Symbol: "DEMO",
		URI: "https://example.org/demo.json", UpdateAuthority: authority,
		Holders: Holders{Accounts: n, Seed: 7, MultiAccountShare: 0.3, ZeroShare: 0.1},
	}
}

func t22Token(n int) Token {
	return Token{
		Mint: t22Mint, Program: ProgramToken2022, Decimals: 6,
		Supply:        5_000_000_000_000_000,
		MintAuthority: authority,
		Metadata:      MetadataToken2022, Name: "Twenty Two", Symbol: "TT",
		URI: "https://example.org/tt.json", UpdateAuthority: authority,
		AdditionalMetadata: [][2]string{{"site", "https://example.org"}},
		Holders:            Holders{Accounts: n, Seed: 9, MultiAccountShare: 0.5, AccountsPerOwner: 4, ZeroShare: 0.2, ExtendedShare: 0.6},
	}
}

// closed reports whether ch is closed.
func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// TestEachChangeAtASlotAndSignalled: every change lands at the slot after
// the ledger's and closes the channel Changes gave before it; a refused
// change does neither. Mint pairs the slot with the state it read.
func TestEachChangeAtASlotAndSignalled(t *testing.T) {
	l := New(1000)
	if err := l.AddToken(classicToken(50)); err != nil {
		t.Fatal(err)
	}
	hv, _ := l.Holders(mustKey(classicMint), 0)
	holder := hv.Address(0).String()
	if hv.State(0).Amount == 0 {
		t.Fatal("account 0 holds nothing") // a whale by construction
	}
	changes := []struct {
		name string
		do   func() error
	}{
		{"SetSupply", func() error { return l.SetSupply(classicMint, 7) }},
		{"AdjustSupply", func() error { _, err := l.AdjustSupply("", 3); return err }},
		{"SetMintAuthority", func() error { return l.SetMintAuthority(classicMint, authority) }},
		{"SetFreezeAuthority", func() error { return l.SetFreezeAuthority(classicMint, "") }},
		{"OpenHolder", func() error { _, err := l.OpenHolder(classicMint, 5); return err }},
		{"SetHolderBalance", func() error { _, err := l.SetHolderBalance(classicMint, holder, 0); return err }},
		{"BackHolder", func() error { _, err := l.BackHolder(classicMint, holder, 9); return err }},
		{"BumpSlot", func() error { l.BumpSlot(1); return nil }},
	}
	for _, c := range changes {
		before, ch := l.Slot(), l.Changes()
		if err := c.do(); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !closed(ch) || l.Slot() != before+1 {
			t.Errorf("%s: signalled %v, slot %d after %d", c.name, closed(ch), l.Slot(), before)
		}
	}
	refused := []struct {
		name string
		do   func() error
	}{
		{"burn past 0", func() error { _, err := l.AdjustSupply(classicMint, -11); return err }},
		{"unknown mint", func() error { return l.SetSupply(t22Mint, 1) }},
		{"balance unchanged", func() error { _, err := l.SetHolderBalance(classicMint, holder, 9); return err }},
		{"close with a balance", func() error { _, err := l.CloseHolderAccount(classicMint, holder); return err }},
	}
	for _, c := range refused {
		before, ch := l.Slot(), l.Changes()
		if err := c.do(); err == nil {
			t.Errorf("%s: not refused", c.name)
		}
		if closed(ch) || l.Slot() != before {
			t.Errorf("%s: signalled %v, slot %d after %d", c.name, closed(ch), l.Slot(), before)
		}
	}
	slot, st, _, ok := l.Mint(mustKey(classicMint), 0)
	if !ok || slot != l.Slot() || st.Supply != 10 || st.MintAuthority == nil || st.FreezeAuthority != nil {
		t.Errorf("Mint: slot %d (ledger %d), %+v", slot, l.Slot(), st)
	}
}

// TestLaggingReads: a node lagging by K slots reads the mint and the
// holder set as they were K slots ago; the reads are copies.
func TestLaggingReads(t *testing.T) {
	l := New(1000)
	if err := l.AddToken(classicToken(50)); err != nil {
		t.Fatal(err)
	}
	k := mustKey(classicMint)
	if err := l.SetSupply(classicMint, 100); err != nil { // slot 1001
		t.Fatal(err)
	}
	if _, err := l.OpenHolder(classicMint, 5); err != nil { // slot 1002, account 50
		t.Fatal(err)
	}
	if err := l.SetSupply(classicMint, 200); err != nil { // slot 1003
		t.Fatal(err)
	}
	for lag, want := range map[uint64]struct {
		supply uint64
		opened bool
	}{0: {200, true}, 1: {100, true}, 2: {100, false}, 9: {classicToken(0).Supply, false}} {
		_, st, hv, _ := l.Mint(k, lag)
		if st.Supply != want.supply || hv.State(50).Closed == want.opened {
			t.Errorf("lag %d: supply %d, account 50 %+v", lag, st.Supply, hv.State(50))
		}
	}
	_, st, _, _ := l.Mint(k, 0)
	st.Supply = 1
	if s, _ := l.Supply(classicMint); s != 200 {
		t.Errorf("a read's copy changed the ledger: %d", s)
	}
	if _, _, kind := l.Account(l.tokens[k].metaPDA, 0); kind != MetadataAccount {
		t.Errorf("the metadata PDA is %v", kind)
	}
}

// TestConcurrentChangesAndReads runs changes, reads and waits on Changes
// together (-race).
func TestConcurrentChangesAndReads(t *testing.T) {
	l := New(1000)
	if err := l.AddToken(classicToken(200)); err != nil {
		t.Fatal(err)
	}
	k := mustKey(classicMint)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 50 {
				switch g {
				case 0:
					_ = l.SetSupply(classicMint, uint64(i))
					_, _ = l.OpenHolder(classicMint, uint64(i))
				case 1:
					ch := l.Changes()
					l.BumpSlot(1)
					<-ch // closed by this bump at the latest
				default:
					_, _, hv, _ := l.Mint(k, uint64(i%3))
					_ = hv.Truth()
					_, _ = l.ProgramChanges(ProgramToken.Key(), 0, 0)
				}
			}
		})
	}
	wg.Wait()
}

func TestMintLayouts(t *testing.T) {
	l := New(300_000_000)
	if err := l.AddToken(classicToken(0)); err != nil {
		t.Fatal(err)
	}
	if err := l.AddToken(t22Token(0)); err != nil {
		t.Fatal(err)
	}
	classic := l.tokens[mustKey(classicMint)].state.MintData()
	if len(classic) != 82 {
		t.Fatalf("classic mint is %d bytes", len(classic))
	}
	if binary.LittleEndian.Uint32(classic[0:4]) != 0 || binary.LittleEndian.Uint64(classic[36:44]) != 999_999_999_123_456_789 ||
		classic[44] != 9 || classic[45] != 1 || binary.LittleEndian.Uint32(classic[46:50]) != 1 || base58.Encode(classic[50:82]) != authority {
		t.Errorf("classic mint layout wrong: %x", classic)
	}

	d := l.tokens[mustKey(t22Mint)].state.MintData()
	if len(d) <= 166 || d[165] != accountTypeMint {
		t.Fatalf("token-2022 mint: len %d, type byte %d", len(d), d[165])
	}
	for _, b := range d[82:165] {
		if b != 0 {
			t.Fatal("padding between 82 and 165 is not zero")
		}
	}
	// Walk the TLV entries.
	seen := map[uint16][]byte{}
	for p := 166; p < len(d); {
		typ, n := binary.LittleEndian.Uint16(d[p:]), int(binary.LittleEndian.Uint16(d[p+2:]))
		seen[typ] = d[p+4 : p+4+n]
		p += 4 + n
	}
	mp := seen[extMetadataPointer]
	if len(mp) != 64 || base58.Encode(mp[:32]) != authority || base58.Encode(mp[32:]) != t22Mint {
		t.Errorf("metadata pointer = %x", mp)
	}
	tm := seen[extTokenMetadata]
	readStr := func(b []byte) (string, []byte) {
		n := binary.LittleEndian.Uint32(b)
		return string(b[4 : 4+n]), b[4+n:]
	}
	if base58.Encode(tm[:32]) != authority || base58.Encode(tm[32:64]) != t22Mint {
		t.Fatalf("token metadata authorities wrong")
	}
	name, rest := readStr(tm[64:])
	sym, rest := readStr(rest)
	uri, rest := readStr(rest)
	if name != "Twenty Two" || sym != "TT" || uri != "https://example.org/tt.json" || binary.LittleEndian.Uint32(rest) != 1 {
		t.Errorf("token metadata = %q %q %q %x", name, sym, uri, rest)
	}

	// Metaplex metadata account.
	md := l.tokens[mustKey(classicMint)].state.MetaplexData()
	if len(md) != metaplexMetadataLen || md[0] != 4 || base58.Encode(md[1:33]) != authority || base58.Encode(md[33:65]) != classicMint {
		t.Fatalf("metaplex header wrong")
	}
	if n := binary.LittleEndian.Uint32(md[65:69]); n != 32 || string(bytes.TrimRight(md[69:101], "\x00")) != "Demo Token" {
		t.Errorf("metaplex name: len %d %q", n, md[69:101])
	}
	if n := binary.LittleEndian.Uint32(md[101:105]); n != 10 || string(bytes.TrimRight(md[105:115], "\x00")) != "DEMO" {
		t.Errorf("metaplex symbol: len %d %q", n, md[105:115])
	}
	if n := binary.LittleEndian.Uint32(md[115:119]); n != 200 || string(bytes.TrimRight(md[119:319], "\x00")) != "https://example.org/demo.json" {
		t.Errorf("metaplex uri: len %d", n)
	}
}

func TestMetadataAddressIsPDA(t *testing.T) {
	// A known mainnet pair: USDC's Metaplex metadata account.
	got, err := MetadataAddress("EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v")
	if err != nil {
		t.Fatal(err)
	}
	if got != "5x38Kp4hvdomTCnCrAny4UtMUt5rQBdB6px2K1Ui45Wq" {
		t.Errorf("MetadataAddress(USDC) = %s", got)
	}
}

func TestTruthMatchesBruteForce(t *testing.T) {
	for _, tok := range []Token{classicToken(3000), t22Token(3000)} {
		l := New(300_000_000)
		if err := l.AddToken(tok); err != nil {
			t.Fatal(err)
		}
		hs := l.tokens[mustKey(tok.Mint)].holders
		sums := map[Key]uint64{}
		var want Truth
		seenAddr := map[Key]bool{}
		for i := range hs.n {
			a := hs.account(i)
			if seenAddr[a.Address] {
				t.Fatal("duplicate account address")
			}
			seenAddr[a.Address] = true
			sums[a.Owner] += a.Amount
			want.TokenAccounts++
			want.TotalAmount += a.Amount
			if a.Amount > 0 {
				want.NonZeroAccounts++
			}
			if a.Size == 170 {
				want.Accounts170++
			} else {
				want.Accounts165++
			}
		}
		want.Owners = len(sums)
		for _, v := range sums {
			if v > 0 {
				want.Holders++
			}
		}
		got, ok := l.Truth(tok.Mint)
		if !ok || got != want {
			t.Errorf("%s: truth %+v, brute force %+v", tok.Name, got, want)
		}
		if want.Holders == want.NonZeroAccounts || want.Owners == want.TokenAccounts {
			t.Errorf("%s: generator has no multi-account owners: %+v", tok.Name, want)
		}
		if tok.Program == ProgramToken2022 && (want.Accounts170 == 0 || want.Accounts165 == 0) {
			t.Errorf("token-2022 sizes not mixed: %+v", want)
		}
	}
}

// TestHolderTruthAfterChanges: the truth and the largest accounts kept
// from the generated set's are those of a full pass over the changed set,
// through many changes (the largest ones included, past the depth kept).
func TestHolderTruthAfterChanges(t *testing.T) {
	l := New(300_000_000)
	tok := classicToken(3000)
	tok.Holders.AccountsPerOwner = 4
	if err := l.AddToken(tok); err != nil {
		t.Fatal(err)
	}
	check := func(when string) {
		t.Helper()
		v, _ := l.holdersNow(classicMint)
		want := Truth{}
		owners, holders := map[int]bool{}, map[int]bool{}
		for i := range v.Total() {
			a, ok := v.Account(i)
			if !ok {
				continue
			}
			want.TokenAccounts++
			want.Accounts165++
			owners[v.ownerIndex(i)] = true
			if a.Amount > 0 {
				want.NonZeroAccounts++
				want.TotalAmount += a.Amount
				holders[v.ownerIndex(i)] = true
			}
		}
		want.Owners, want.Holders = len(owners), len(holders)
		if got, _ := l.Truth(classicMint); got != want {
			t.Fatalf("%s: truth %+v, want %+v", when, got, want)
		}
		got, _ := l.Largest(classicMint)
		full := v.largestFull()
		if len(got) != len(full) {
			t.Fatalf("%s: %d largest, want %d", when, len(got), len(full))
		}
		for k := range got {
			if got[k] != full[k] {
				t.Fatalf("%s: largest %d is %+v, want %+v", when, k, got[k], full[k])
			}
		}
	}
	check("generated")
	var opened []string
	for round := range 60 {
		largest, _ := l.Largest(classicMint)
		// The largest sells out (to a new holder), a new empty account
		// opens, every third round one closes, a multi-account owner's
		// account moves its balance.
		ch, err := l.OpenHolder(classicMint, 0)
		if err != nil {
			t.Fatal(err)
		}
		opened = append(opened, ch.Accounts[0].Address)
		if _, err := l.MoveHolderBalance(classicMint, largest[0].Address, ch.Accounts[0].Address, largest[0].Amount); err != nil {
			t.Fatal(err)
		}
		if _, err := l.SetHolderBalance(classicMint, ch.Accounts[0].Address, 0); err != nil {
			t.Fatal(err)
		}
		if round%3 == 0 {
			if _, err := l.CloseHolderAccount(classicMint, opened[0]); err != nil {
				t.Fatal(err)
			}
			opened = opened[1:]
		}
		v, _ := l.holdersNow(classicMint)
		if st := v.State(round); !st.Closed && st.Amount > 0 {
			if _, err := l.SetHolderBalance(classicMint, v.Address(round).String(), 0); err != nil {
				t.Fatal(err)
			}
		}
		check(fmt.Sprint("round ", round))
	}
	if _, err := l.CloseHolderAccount(classicMint, opened[0]); err != nil {
		t.Fatal(err)
	}
	check("end")
}
