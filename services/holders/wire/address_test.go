package wire

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/mr-tron/base58"

	"github.com/tokendata/tokendata/services/holders/tally"
)

// agree checks DecodeAddress against github.com/mr-tron/base58 on s: the
// same 32 bytes, or an error where that decoder errs or decodes to
// another length.
func agree(t *testing.T, s string) {
	t.Helper()
	var got tally.Owner
	err := DecodeAddress(s, &got)
	want, wantErr := base58.Decode(s)
	switch {
	case wantErr != nil || len(want) != len(got):
		if err == nil {
			t.Fatalf("DecodeAddress(%q) = %x; base58.Decode: %x, %v", s, got, want, wantErr)
		}
	case err != nil:
		t.Fatalf("DecodeAddress(%q): %v; base58.Decode: %x", s, err, want)
	case !bytes.Equal(got[:], want):
		t.Fatalf("DecodeAddress(%q) = %x, base58.Decode %x", s, got, want)
	}
	var fromBytes tally.Owner
	if errB := DecodeAddress([]byte(s), &fromBytes); (errB == nil) != (err == nil) || fromBytes != got {
		t.Fatalf("DecodeAddress(%q) as bytes: %x, %v; as a string: %x, %v", s, fromBytes, errB, got, err)
	}
}

func TestDecodeAddressAgreesWithBase58(t *testing.T) {
	r := rand.New(rand.NewPCG(58, 32))
	for _, s := range []string{"", "1", strings.Repeat("1", 31), strings.Repeat("1", 32), strings.Repeat("1", 33),
		strings.Repeat("z", 44), strings.Repeat("z", 45), "0", "O", "I", "l", "So11111111111111111111111111111111111111112",
		"TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA", "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5D", "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DAA",
		"TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5D\x00", "1TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5D", "Tokenkeg Qf"} {
		agree(t, s)
	}
	for range 200_000 {
		var k [32]byte
		for i := range k {
			k[i] = byte(r.Uint32())
		}
		for i := range r.IntN(4) { // leading zero bytes, each a '1'
			k[i] = 0
		}
		s := base58.Encode(k[:])
		agree(t, s)
		switch b := []byte(s); r.IntN(4) { // and its neighbours: a digit changed, one more, one less
		case 0:
			b[r.IntN(len(b))] = base58Alphabet[r.IntN(58)]
			agree(t, string(b))
		case 1:
			agree(t, s+string(base58Alphabet[r.IntN(58)]))
		case 2:
			agree(t, s[:len(s)-1])
		case 3:
			agree(t, "1"+s)
		}
	}
}

func FuzzDecodeAddress(f *testing.F) {
	for _, s := range []string{"", "1", strings.Repeat("1", 32), strings.Repeat("z", 44), "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA"} {
		f.Add(s)
	}
	f.Fuzz(agree)
}

// The enumeration decodes an address per token account: none may
// allocate (the garbage of a million is what the live count's peak
// memory was made of).
func TestDecodeAddressAllocatesNothing(t *testing.T) {
	s := []byte("TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA")
	var a tally.Owner
	if n := testing.AllocsPerRun(1000, func() {
		if err := DecodeAddress(s, &a); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Fatalf("DecodeAddress made %v allocations a call, want 0", n)
	}
}
