package ledger

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"math/big"

	"github.com/mr-tron/base58"
)

// Well-known program ids.
const (
	TokenProgramID     = "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA"
	Token2022ProgramID = "TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb"
	MetadataProgramID  = "metaqbxxUerdq28cj1RbAWkYQm3ybzjb6a8bt518x1s"
)

// Token account layout.
const (
	// TokenAccountLen is the length of a token account without
	// extensions (one with ImmutableOwner has 5 bytes more).
	TokenAccountLen = 165
	// AccountTypeAccount is the account type byte (at TokenAccountLen)
	// of a Token-2022 token account with extensions.
	AccountTypeAccount = 2
)

const (
	mintLen                = 82
	metaplexMetadataLen    = 679
	extImmutableOwner      = 7
	extMetadataPointer     = 18
	extTokenMetadata       = 19
	accountTypeMint        = 1
	lamportsPerByteYear    = 3480
	exemptionThresholdYear = 2
	accountStorageOverhead = 128
)

// Program selects the SPL token program that owns a mint.
type Program int

const (
	// ProgramToken is the classic SPL Token program.
	ProgramToken Program = iota
	// ProgramToken2022 is the Token Extensions (Token-2022) program.
	ProgramToken2022
)

// ID returns the program's base58 address.
func (p Program) ID() string {
	if p == ProgramToken2022 {
		return Token2022ProgramID
	}
	return TokenProgramID
}

// Key returns the program's address.
func (p Program) Key() Key {
	if p == ProgramToken2022 {
		return token2022ProgramKey
	}
	return tokenProgramKey
}

// MetadataLocation says where a token's on-chain name, symbol and uri live.
type MetadataLocation int

const (
	// MetadataNone: the token has no on-chain metadata.
	MetadataNone MetadataLocation = iota
	// MetadataMetaplex: a Metaplex Token Metadata account at the PDA
	// ["metadata", MetadataProgramID, mint].
	MetadataMetaplex
	// MetadataToken2022: the Token-2022 TokenMetadata extension on the mint
	// itself, with a MetadataPointer extension pointing at the mint.
	MetadataToken2022
)

// Token describes one simulated token: its mint account, its metadata and
// its holder set.
type Token struct {
	// Mint is the mint address (base58, 32 bytes).
	Mint string
	// Program owns the mint and its token accounts.
	Program Program
	// Decimals of the mint.
	Decimals uint8
	// Supply in base units.
	Supply uint64
	// MintAuthority and FreezeAuthority are base58 addresses; "" means
	// disabled (COption::None).
	MintAuthority   string
	FreezeAuthority string
	// Metadata says where Name, Symbol and URI are stored on chain.
	Metadata MetadataLocation
	// Name, Symbol and URI are the on-chain metadata.
	Name, Symbol, URI string
	// UpdateAuthority of the metadata ("" = none; Metaplex requires one and
	// then uses the system program id).
	UpdateAuthority string
	// AdditionalMetadata are the Token-2022 key/value pairs.
	AdditionalMetadata [][2]string
	// Holders parameterises the deterministic holder set.
	Holders Holders
}

// Key is a raw 32-byte Solana address.
type Key [32]byte

func (k Key) String() string { return base58.Encode(k[:]) }

const b58Alphabet = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"

// AppendBase58 appends the base58 form of k (String's) to dst without
// allocating: getProgramAccounts writes one per account.
func (k Key) AppendBase58(dst []byte) []byte {
	var digits [44]byte // 32 bytes need at most 44 base58 digits
	n := 0
	for _, b := range k {
		carry := int(b)
		for j := 0; j < n; j++ {
			carry += int(digits[j]) << 8
			digits[j] = byte(carry % 58)
			carry /= 58
		}
		for carry > 0 {
			digits[n] = byte(carry % 58)
			n++
			carry /= 58
		}
	}
	for _, b := range k {
		if b != 0 {
			break
		}
		dst = append(dst, '1')
	}
	for j := n - 1; j >= 0; j-- {
		dst = append(dst, b58Alphabet[digits[j]])
	}
	return dst
}

// ParseKey decodes a base58 address of 32 bytes.
func ParseKey(s string) (Key, error) {
	var out Key
	b, err := base58.Decode(s)
	if err != nil {
		return out, fmt.Errorf("invalid base58 address %q: %w", s, err)
	}
	if len(b) != 32 {
		return out, fmt.Errorf("address %q decodes to %d bytes, want 32", s, len(b))
	}
	copy(out[:], b)
	return out, nil
}

func mustKey(s string) Key {
	p, err := ParseKey(s)
	if err != nil {
		panic(err)
	}
	return p
}

var (
	tokenProgramKey     = mustKey(TokenProgramID)
	token2022ProgramKey = mustKey(Token2022ProgramID)
	metadataProgramKey  = mustKey(MetadataProgramID)
	systemProgramKey    = Key{}
)

// parseOptKey parses an optional address: "" is None (nil).
func parseOptKey(field, s string) (*Key, error) {
	if s == "" {
		return nil, nil
	}
	p, err := ParseKey(s)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", field, err)
	}
	return &p, nil
}

// RentExempt is the minimum balance of an account of n bytes.
func RentExempt(n int) uint64 {
	return uint64(accountStorageOverhead+n) * lamportsPerByteYear * exemptionThresholdYear
}

// MintState is the on-chain state of a mint. The Ledger hands out copies;
// what its pointers and slice point at is never written once set (a
// change sets a new authority, it does not write the old one), so a copy
// is read without the Ledger's lock. A nil authority is None.
type MintState struct {
	Mint            Key
	Program         Program
	Decimals        uint8
	Supply          uint64
	MintAuthority   *Key
	FreezeAuthority *Key
	Metadata        MetadataLocation
	Name            string
	Symbol          string
	URI             string
	UpdateAuthority *Key
	Additional      [][2]string
}

// MintData returns the mint account's bytes in the real SPL layout.
func (m *MintState) MintData() []byte {
	b := make([]byte, mintLen, 256)
	putCOption(b[0:36], m.MintAuthority)
	binary.LittleEndian.PutUint64(b[36:44], m.Supply)
	b[44] = m.Decimals
	b[45] = 1 // is_initialized
	putCOption(b[46:82], m.FreezeAuthority)
	if m.Program != ProgramToken2022 || m.Metadata != MetadataToken2022 {
		return b
	}
	// Token-2022 with extensions: pad to the account length, account type
	// byte, then TLV entries.
	b = append(b, make([]byte, TokenAccountLen-mintLen)...)
	b = append(b, accountTypeMint)
	// MetadataPointer: authority (OptionalNonZeroPubkey), metadata address.
	b = appendTLVHeader(b, extMetadataPointer, 64)
	b = appendOptNonZero(b, m.UpdateAuthority)
	b = append(b, m.Mint[:]...)
	// TokenMetadata: update authority, mint, name, symbol, uri, additional.
	var v []byte
	v = appendOptNonZero(v, m.UpdateAuthority)
	v = append(v, m.Mint[:]...)
	v = appendBorshString(v, m.Name)
	v = appendBorshString(v, m.Symbol)
	v = appendBorshString(v, m.URI)
	v = binary.LittleEndian.AppendUint32(v, uint32(len(m.Additional)))
	for _, kv := range m.Additional {
		v = appendBorshString(v, kv[0])
		v = appendBorshString(v, kv[1])
	}
	b = appendTLVHeader(b, extTokenMetadata, len(v))
	return append(b, v...)
}

// MetaplexData returns the Metaplex Token Metadata account bytes
// (MetadataV1 Borsh layout, zero-padded to its fixed size).
func (m *MintState) MetaplexData() []byte {
	b := make([]byte, 0, metaplexMetadataLen)
	b = append(b, 4) // Key::MetadataV1
	ua := systemProgramKey
	if m.UpdateAuthority != nil {
		ua = *m.UpdateAuthority
	}
	b = append(b, ua[:]...)
	b = append(b, m.Mint[:]...)
	b = appendPadded(b, m.Name, 32)
	b = appendPadded(b, m.Symbol, 10)
	b = appendPadded(b, m.URI, 200)
	b = binary.LittleEndian.AppendUint16(b, 0) // seller_fee_basis_points
	b = append(b, 0)                           // creators: None
	b = append(b, 0)                           // primary_sale_happened
	b = append(b, 1)                           // is_mutable
	b = append(b, 1, 255)                      // edition_nonce: Some(255)
	b = append(b, 1, 2)                        // token_standard: Some(Fungible)
	b = append(b, 0)                           // collection: None
	b = append(b, 0)                           // uses: None
	b = append(b, 0)                           // collection_details: None
	b = append(b, 0)                           // programmable_config: None
	if len(b) < metaplexMetadataLen {
		b = append(b, make([]byte, metaplexMetadataLen-len(b))...)
	}
	return b
}

func putCOption(dst []byte, k *Key) {
	if k == nil {
		return // tag 0 and zero key
	}
	binary.LittleEndian.PutUint32(dst[0:4], 1)
	copy(dst[4:36], k[:])
}

func appendTLVHeader(b []byte, typ uint16, n int) []byte {
	b = binary.LittleEndian.AppendUint16(b, typ)
	return binary.LittleEndian.AppendUint16(b, uint16(n))
}

func appendOptNonZero(b []byte, k *Key) []byte {
	if k == nil {
		return append(b, make([]byte, 32)...)
	}
	return append(b, k[:]...)
}

func appendBorshString(b []byte, s string) []byte {
	b = binary.LittleEndian.AppendUint32(b, uint32(len(s)))
	return append(b, s...)
}

// appendPadded writes a Borsh string NUL-padded to n bytes, as Metaplex
// stores name, symbol and uri (longer strings are truncated).
func appendPadded(b []byte, s string, n int) []byte {
	if len(s) > n {
		s = s[:n]
	}
	b = binary.LittleEndian.AppendUint32(b, uint32(n))
	b = append(b, s...)
	return append(b, make([]byte, n-len(s))...)
}

// p25519 is the field prime of Curve25519, d the Edwards curve constant.
var (
	p25519 = new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 255), big.NewInt(19))
	d25519 = func() *big.Int {
		// d = -121665/121666 mod p
		num := big.NewInt(-121665)
		den := new(big.Int).ModInverse(big.NewInt(121666), p25519)
		d := num.Mul(num, den)
		return d.Mod(d, p25519)
	}()
	pMinus1Half = new(big.Int).Rsh(new(big.Int).Sub(p25519, big.NewInt(1)), 1)
)

// onCurve reports whether b decompresses to a point of ed25519, as
// curve25519-dalek's CompressedEdwardsY::decompress decides it.
func onCurve(b [32]byte) bool {
	le := b
	le[31] &= 0x7f
	// big-endian for math/big
	var be [32]byte
	for i := range 32 {
		be[i] = le[31-i]
	}
	y := new(big.Int).SetBytes(be[:])
	y.Mod(y, p25519)
	y2 := new(big.Int).Mul(y, y)
	y2.Mod(y2, p25519)
	u := new(big.Int).Sub(y2, big.NewInt(1))
	u.Mod(u, p25519)
	v := new(big.Int).Mul(d25519, y2)
	v.Add(v, big.NewInt(1))
	v.Mod(v, p25519)
	if u.Sign() == 0 {
		return true
	}
	if v.Sign() == 0 {
		return false
	}
	// x^2 = u/v has a root iff (u*v^-1)^((p-1)/2) == 1.
	x2 := new(big.Int).ModInverse(v, p25519)
	x2.Mul(x2, u)
	x2.Mod(x2, p25519)
	return new(big.Int).Exp(x2, pMinus1Half, p25519).Cmp(big.NewInt(1)) == 0
}

// findProgramAddress derives a program address the way the Solana runtime
// does: the first bump from 255 down whose hash is off the curve.
func findProgramAddress(seeds [][]byte, program Key) (Key, uint8, error) {
	for bump := 255; bump >= 0; bump-- {
		h := sha256.New()
		for _, s := range seeds {
			h.Write(s)
		}
		h.Write([]byte{byte(bump)})
		h.Write(program[:])
		h.Write([]byte("ProgramDerivedAddress"))
		var out Key
		copy(out[:], h.Sum(nil))
		if !onCurve(out) {
			return out, uint8(bump), nil
		}
	}
	return Key{}, 0, errors.New("no viable bump seed")
}

// MetadataAddress returns the Metaplex Token Metadata account address (PDA)
// of mint.
func MetadataAddress(mint string) (string, error) {
	m, err := ParseKey(mint)
	if err != nil {
		return "", err
	}
	pda, _, err := findProgramAddress([][]byte{[]byte("metadata"), metadataProgramKey[:], m[:]}, metadataProgramKey)
	if err != nil {
		return "", err
	}
	return pda.String(), nil
}
