package supply

import (
	"encoding/binary"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mr-tron/base58"
)

// Byte builders of the on-chain layouts, written from the SPL and
// Metaplex specifications (not from the simulator's code).

func keyBytes(name string) []byte {
	b, _ := base58.Decode(key(name))
	return b
}

func cOption(k []byte) []byte {
	out := make([]byte, 36)
	if k != nil {
		binary.LittleEndian.PutUint32(out, 1)
		copy(out[4:], k)
	}
	return out
}

func mintBytes(mintAuth []byte, supply uint64, decimals uint8, freeze []byte) []byte {
	b := cOption(mintAuth)
	b = binary.LittleEndian.AppendUint64(b, supply)
	b = append(b, decimals, 1)
	return append(b, cOption(freeze)...)
}

func withExtensions(base []byte, exts ...tlv) []byte {
	b := append([]byte(nil), base...)
	b = append(b, make([]byte, tokenAccLen-mintLen)...)
	b = append(b, accountTypeMnt)
	for _, e := range exts {
		b = binary.LittleEndian.AppendUint16(b, e.Type)
		b = binary.LittleEndian.AppendUint16(b, uint16(len(e.Value)))
		b = append(b, e.Value...)
	}
	return b
}

func borshString(s string) []byte {
	return append(binary.LittleEndian.AppendUint32(nil, uint32(len(s))), s...)
}

func tokenMetadataValue(ua []byte, mint []byte, name, symbol, uri string) []byte {
	v := append([]byte(nil), ua...)
	v = append(v, mint...)
	v = append(v, borshString(name)...)
	v = append(v, borshString(symbol)...)
	v = append(v, borshString(uri)...)
	return binary.LittleEndian.AppendUint32(v, 0) // no additional metadata
}

func paddedString(s string, n int) []byte {
	b := binary.LittleEndian.AppendUint32(nil, uint32(n))
	b = append(b, s...)
	return append(b, make([]byte, n-len(s))...)
}

func metaplexBytes(ua, mint []byte, name, symbol, uri string) []byte {
	b := []byte{metaplexKeyV1}
	b = append(b, ua...)
	b = append(b, mint...)
	b = append(b, paddedString(name, 32)...)
	b = append(b, paddedString(symbol, 10)...)
	b = append(b, paddedString(uri, 200)...)
	b = append(b, 0, 0, 0, 0, 1) // fee, creators None, primary sale, mutable
	return append(b, make([]byte, 679-len(b))...)
}

func TestDecodeMint(t *testing.T) {
	auth, frz := keyBytes("a"), keyBytes("f")
	classic := mintBytes(auth, 1234, 9, frz)
	m, err := decodeMint(classic, false)
	if err != nil {
		t.Fatal(err)
	}
	if *m.MintAuthority != key("a") || *m.FreezeAuthority != key("f") || m.Supply != 1234 || m.Decimals != 9 || m.Extensions != nil {
		t.Errorf("decoded %+v", m)
	}
	none, err := decodeMint(mintBytes(nil, 0, 0, nil), false)
	if err != nil || none.MintAuthority != nil || none.FreezeAuthority != nil {
		t.Errorf("no authorities: %+v %v", none, err)
	}

	md := tokenMetadataValue(auth, keyBytes("mint"), "Name", "SYM", "https://x")
	ext := withExtensions(classic, tlv{extMetadataPointer, make([]byte, 64)}, tlv{extTokenMetadata, md}, tlv{0, nil})
	ext = append(ext, 0, 0, 0) // trailing padding
	m, err = decodeMint(ext, true)
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := m.extension(extTokenMetadata); !ok || string(v) != string(md) || len(m.Extensions) != 2 {
		t.Errorf("extensions %+v", m.Extensions)
	}

	bad := map[string]struct {
		data []byte
		t22  bool
		want string
	}{
		"short":                  {classic[:81], true, "81 bytes"},
		"classic with tail":      {append(append([]byte(nil), classic...), 0), false, "want 82"},
		"uninitialized":          {func() []byte { b := append([]byte(nil), classic...); b[45] = 0; return b }(), false, "not initialized"},
		"bad bool":               {func() []byte { b := append([]byte(nil), classic...); b[45] = 7; return b }(), false, "is_initialized"},
		"bad option tag":         {func() []byte { b := append([]byte(nil), classic...); b[0] = 2; return b }(), false, "mint authority"},
		"bad freeze tag":         {func() []byte { b := append([]byte(nil), classic...); b[46] = 9; return b }(), false, "freeze authority"},
		"t22 exactly 165":        {append(append([]byte(nil), classic...), make([]byte, 83)...), true, "extensions need"},
		"t22 wrong account":      {func() []byte { b := withExtensions(classic); b[165] = 2; return b }(), true, "account type"},
		"t22 dirty padding":      {func() []byte { b := withExtensions(classic); b[100] = 1; return b }(), true, "padding"},
		"t22 overlong entry":     {withExtensions(classic, tlv{extTokenMetadata, md})[:200], true, "claims"},
		"t22 between 82 and 165": {append(append([]byte(nil), classic...), 1, 2, 3), true, "extensions need"},
	}
	for name, c := range bad {
		if _, err := decodeMint(c.data, c.t22); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want %q", name, err, c.want)
		}
	}
}

func TestParseTokenMetadata(t *testing.T) {
	id, err := parseTokenMetadata(tokenMetadataValue(make([]byte, 32), keyBytes("mint"), "Näme", "SYM", "https://x/y.json"))
	if err != nil {
		t.Fatal(err)
	}
	if id.Name != "Näme" || id.Symbol != "SYM" || id.URI != "https://x/y.json" || id.UpdateAuthority != nil || id.Mint != key("mint") {
		t.Errorf("parsed %+v", id)
	}
	full := tokenMetadataValue(keyBytes("ua"), keyBytes("mint"), "N", "S", "U")
	for n := range len(full) - 4 { // every cut before the additional metadata fails
		if _, err := parseTokenMetadata(full[:n]); err == nil {
			t.Errorf("cut at %d parsed", n)
		}
	}
	huge := append(append(keyBytes("ua"), keyBytes("mint")...), 0xff, 0xff, 0xff, 0x7f)
	if _, err := parseTokenMetadata(huge); err == nil || !strings.Contains(err.Error(), "name") {
		t.Errorf("huge length: %v", err)
	}
}

func TestParseMetaplex(t *testing.T) {
	id, err := parseMetaplex(metaplexBytes(keyBytes("ua"), keyBytes("mint"), "Demo Token", "DEMO", "https://example.org/d.json"))
	if err != nil {
		t.Fatal(err)
	}
	if id.Name != "Demo Token" || id.Symbol != "DEMO" || id.URI != "https://example.org/d.json" || *id.UpdateAuthority != key("ua") || id.Mint != key("mint") {
		t.Errorf("parsed %+v (NUL padding must be trimmed)", id)
	}
	noUA, _ := parseMetaplex(metaplexBytes(make([]byte, 32), keyBytes("mint"), "a", "b", "c"))
	if noUA.UpdateAuthority != nil {
		t.Errorf("system program update authority = %v, want none", *noUA.UpdateAuthority)
	}
	wrongKey := metaplexBytes(keyBytes("ua"), keyBytes("mint"), "a", "b", "c")
	wrongKey[0] = 6 // MasterEditionV2
	if _, err := parseMetaplex(wrongKey); err == nil || !strings.Contains(err.Error(), "MetadataV1") {
		t.Errorf("wrong key: %v", err)
	}
	if _, err := parseMetaplex(metaplexBytes(keyBytes("ua"), keyBytes("mint"), "a", "b", "c")[:100]); err == nil {
		t.Error("truncated account parsed")
	}
	bad := metaplexBytes(keyBytes("ua"), keyBytes("mint"), "ok\xff\xfe", "b", "c")
	if id, err := parseMetaplex(bad); err != nil || !utf8.ValidString(id.Name) || !strings.HasPrefix(id.Name, "ok") {
		t.Errorf("invalid UTF-8: %q %v", id.Name, err)
	}
}

func TestGroupThousands(t *testing.T) {
	for in, want := range map[string]string{"0": "0", "999": "999", "1000": "1,000", "1000000000": "1,000,000,000", "21000000": "21,000,000"} {
		if got := groupThousands(in); got != want {
			t.Errorf("groupThousands(%s) = %s, want %s", in, got, want)
		}
	}
}

// FuzzDecodeMint walks arbitrary mint account bytes: never a panic, and
// what decodes is consistent with the input.
func FuzzDecodeMint(f *testing.F) {
	classic := mintBytes(keyBytes("a"), 1234, 9, keyBytes("f"))
	f.Add(classic, false)
	f.Add(classic, true)
	md := tokenMetadataValue(keyBytes("ua"), keyBytes("mint"), "Name", "SYM", "https://x")
	f.Add(withExtensions(classic, tlv{extMetadataPointer, make([]byte, 64)}, tlv{extTokenMetadata, md}), true)
	f.Add(withExtensions(classic, tlv{extTokenMetadata, md[:10]}), true)
	f.Add(withExtensions(classic, tlv{extPermanentDeleg, keyBytes("d")}, tlv{0, nil}), true)
	f.Add([]byte{}, true)
	f.Fuzz(func(t *testing.T, data []byte, t22 bool) {
		m, err := decodeMint(data, t22)
		if err != nil {
			return
		}
		if !t22 && len(data) != mintLen {
			t.Fatalf("classic mint of %d bytes decoded", len(data))
		}
		total := 0
		for _, e := range m.Extensions {
			total += 4 + len(e.Value)
			if e.Type == extTokenMetadata {
				if id, err := parseTokenMetadata(e.Value); err == nil {
					checkIdentity(t, id)
				}
			}
		}
		if len(m.Extensions) > 0 && tokenAccLen+1+total > len(data) {
			t.Fatalf("extensions span %d bytes of %d", total, len(data))
		}
	})
}

// FuzzParseTokenMetadata parses arbitrary TokenMetadata extension values.
func FuzzParseTokenMetadata(f *testing.F) {
	f.Add(tokenMetadataValue(keyBytes("ua"), keyBytes("mint"), "Name", "SYM", "https://x"))
	f.Add(tokenMetadataValue(make([]byte, 32), keyBytes("mint"), "", "", ""))
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, v []byte) {
		if id, err := parseTokenMetadata(v); err == nil {
			checkIdentity(t, id)
			if len(id.Name)+len(id.Symbol)+len(id.URI) > len(v)*3 { // U+FFFD is 3 bytes
				t.Fatalf("strings longer than the input: %+v", id)
			}
		}
	})
}

// FuzzParseMetaplex parses arbitrary Metaplex metadata accounts.
func FuzzParseMetaplex(f *testing.F) {
	f.Add(metaplexBytes(keyBytes("ua"), keyBytes("mint"), "Demo Token", "DEMO", "https://example.org/d.json"))
	f.Add(metaplexBytes(make([]byte, 32), keyBytes("mint"), "", "", ""))
	f.Add([]byte{metaplexKeyV1})
	f.Fuzz(func(t *testing.T, data []byte) {
		if id, err := parseMetaplex(data); err == nil {
			checkIdentity(t, id)
		}
	})
}

func checkIdentity(t *testing.T, id onChainIdentity) {
	t.Helper()
	for _, s := range []string{id.Name, id.Symbol, id.URI} {
		if !utf8.ValidString(s) || strings.HasSuffix(s, "\x00") {
			t.Fatalf("string %q is not clean UTF-8 without NUL padding", s)
		}
	}
	if b, err := base58.Decode(id.Mint); err != nil || len(b) != 32 {
		t.Fatalf("mint %q", id.Mint)
	}
}
