package wire

import (
	"encoding/binary"
	"fmt"

	"github.com/tokendata/tokendata/services/holders/tally"
)

// base58Alphabet is Bitcoin's, which Solana's addresses use.
const base58Alphabet = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"

// base58Digit maps a byte to its base58 digit, 0xff for a byte that is
// none.
var base58Digit = func() (t [256]byte) {
	for i := range t {
		t[i] = 0xff
	}
	for i := range len(base58Alphabet) {
		t[base58Alphabet[i]] = byte(i)
	}
	return t
}()

// maxAddressLen is the longest base58 text of 32 bytes (58^44 > 2^256).
const maxAddressLen = 44

// DecodeAddress decodes a base58 address (32 bytes) into a, allocating
// nothing: an enumeration decodes one per token account, a million at a
// time, and the decoder of github.com/mr-tron/base58 made three
// allocations of each, the garbage the live count's peak memory was made
// of (docs/benchmarks.md). What it accepts is exactly what that decoder
// decodes to 32 bytes (TestDecodeAddressAgreesWithBase58): each leading
// '1' a zero byte, the rest the number in big-endian base 58 with no
// zero byte before it.
func DecodeAddress[T string | []byte](s T, a *tally.Owner) error {
	if len(s) == 0 || len(s) > maxAddressLen {
		return fmt.Errorf("%q is not a base58 address", clip(string(s)))
	}
	zeros := 0
	for zeros < len(s) && s[zeros] == '1' {
		zeros++
	}
	var limbs [8]uint32 // the number, most significant limb first
	for i := zeros; i < len(s); i++ {
		d := base58Digit[s[i]]
		if d == 0xff {
			return fmt.Errorf("%q is not a base58 address", clip(string(s)))
		}
		carry := uint64(d)
		for j := len(limbs) - 1; j >= 0; j-- {
			x := uint64(limbs[j])*58 + carry
			limbs[j], carry = uint32(x), x>>32
		}
		if carry != 0 {
			return fmt.Errorf("%q is not a base58 address (above 32 bytes)", clip(string(s)))
		}
	}
	var b tally.Owner
	for j, l := range limbs {
		binary.BigEndian.PutUint32(b[4*j:], l)
	}
	lead := 0
	for lead < len(b) && b[lead] == 0 {
		lead++
	}
	if lead != zeros { // zeros + (32 - lead) bytes, not 32
		return fmt.Errorf("%q is not a base58 address (%d bytes)", clip(string(s)), zeros+len(b)-lead)
	}
	*a = b
	return nil
}
