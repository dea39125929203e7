package supply

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/mr-tron/base58"
)

// Layouts of the SPL token programs and of Metaplex Token Metadata.
const (
	mintLen        = 82  // spl_token::state::Mint::LEN
	tokenAccLen    = 165 // spl_token::state::Account::LEN: extensions start after it
	accountTypeMnt = 1   // Token-2022 AccountType::Mint, at byte 165
	metaplexKeyV1  = 4   // mpl_token_metadata Key::MetadataV1
	maxStringBytes = 4096
)

// Token-2022 extension types (spl_token_2022::extension::ExtensionType).
const (
	extUninitialized   uint16 = 0
	extTransferFee     uint16 = 1
	extInterestBearing uint16 = 10
	extPermanentDeleg  uint16 = 12
	extMetadataPointer uint16 = 18
	extTokenMetadata   uint16 = 19
	extScaledUIAmount  uint16 = 25
)

// mintState is the decoded base state of a mint account.
type mintState struct {
	MintAuthority   *string
	Supply          uint64
	Decimals        uint8
	FreezeAuthority *string
	// Extensions are the Token-2022 TLV entries (nil for a classic mint).
	Extensions []tlv
}

// tlv is one Token-2022 extension entry.
type tlv struct {
	Type  uint16
	Value []byte
}

// extension returns the value of the first extension of type typ.
func (m mintState) extension(typ uint16) ([]byte, bool) {
	for _, e := range m.Extensions {
		if e.Type == typ {
			return e.Value, true
		}
	}
	return nil, false
}

// decodeMint decodes a mint account's data. token2022 allows the
// extension area of the Token-2022 program; the classic program's mints
// are exactly 82 bytes.
func decodeMint(data []byte, token2022 bool) (mintState, error) {
	var m mintState
	if len(data) < mintLen {
		return m, fmt.Errorf("mint account holds %d bytes, want at least %d", len(data), mintLen)
	}
	if len(data) > mintLen && !token2022 {
		return m, fmt.Errorf("mint account of the Token program holds %d bytes, want %d", len(data), mintLen)
	}
	var err error
	if m.MintAuthority, err = decodeCOptionKey(data[0:36]); err != nil {
		return m, fmt.Errorf("mint authority: %w", err)
	}
	m.Supply = binary.LittleEndian.Uint64(data[36:44])
	m.Decimals = data[44]
	switch data[45] {
	case 1:
	case 0:
		return m, errors.New("mint account is not initialized")
	default:
		return m, fmt.Errorf("mint is_initialized byte is %d, want 0 or 1", data[45])
	}
	if m.FreezeAuthority, err = decodeCOptionKey(data[46:82]); err != nil {
		return m, fmt.Errorf("freeze authority: %w", err)
	}
	if len(data) == mintLen {
		return m, nil
	}
	m.Extensions, err = walkExtensions(data)
	return m, err
}

// walkExtensions reads the TLV entries of a Token-2022 mint with
// extensions: the base state padded to 165 bytes, the account type byte,
// then entries of type u16, length u16 (little endian) and value. An
// entry of type 0 ends the list (the rest is padding).
func walkExtensions(data []byte) ([]tlv, error) {
	if len(data) <= tokenAccLen {
		return nil, fmt.Errorf("mint account of %d bytes: extensions need more than %d", len(data), tokenAccLen)
	}
	for _, b := range data[mintLen:tokenAccLen] {
		if b != 0 {
			return nil, errors.New("mint account padding before the account type is not zero")
		}
	}
	if data[tokenAccLen] != accountTypeMnt {
		return nil, fmt.Errorf("account type byte is %d, want %d (mint)", data[tokenAccLen], accountTypeMnt)
	}
	var out []tlv
	rest := data[tokenAccLen+1:]
	for len(rest) >= 4 {
		typ := binary.LittleEndian.Uint16(rest[0:2])
		n := int(binary.LittleEndian.Uint16(rest[2:4]))
		if typ == extUninitialized {
			break
		}
		if n > len(rest)-4 {
			return nil, fmt.Errorf("extension %d claims %d bytes, %d left", typ, n, len(rest)-4)
		}
		out = append(out, tlv{Type: typ, Value: rest[4 : 4+n]})
		rest = rest[4+n:]
	}
	return out, nil
}

// decodeCOptionKey reads a COption<Pubkey>: a u32 tag (0 or 1) and 32
// bytes.
func decodeCOptionKey(b []byte) (*string, error) {
	switch binary.LittleEndian.Uint32(b[0:4]) {
	case 0:
		return nil, nil
	case 1:
		s := base58.Encode(b[4:36])
		return &s, nil
	default:
		return nil, fmt.Errorf("option tag %d is not 0 or 1", binary.LittleEndian.Uint32(b[0:4]))
	}
}

// nonZeroKey reads an OptionalNonZeroPubkey (all zeros means none).
func nonZeroKey(b []byte) *string {
	for _, x := range b {
		if x != 0 {
			s := base58.Encode(b)
			return &s
		}
	}
	return nil
}

// onChainIdentity is name, symbol and uri as stored on the ledger.
type onChainIdentity struct {
	Name, Symbol, URI string
	UpdateAuthority   *string
	Mint              string
}

// borsh reads Borsh-encoded values with bounds checks.
type borsh struct {
	b   []byte
	off int
}

func (r *borsh) bytes(n int, what string) ([]byte, error) {
	if n < 0 || n > len(r.b)-r.off {
		return nil, fmt.Errorf("%s: needs %d bytes at offset %d, %d left", what, n, r.off, len(r.b)-r.off)
	}
	out := r.b[r.off : r.off+n]
	r.off += n
	return out, nil
}

// string reads a Borsh string (u32 length, bytes), trims the NUL padding
// Metaplex writes, and makes it valid UTF-8.
func (r *borsh) string(what string) (string, error) {
	lb, err := r.bytes(4, what+" length")
	if err != nil {
		return "", err
	}
	n := binary.LittleEndian.Uint32(lb)
	if n > maxStringBytes {
		return "", fmt.Errorf("%s: length %d is more than %d", what, n, maxStringBytes)
	}
	b, err := r.bytes(int(n), what)
	if err != nil {
		return "", err
	}
	return cleanString(b), nil
}

// cleanString trims NUL padding and replaces invalid UTF-8.
func cleanString(b []byte) string {
	s := strings.TrimRight(string(b), "\x00")
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	return s
}

// parseTokenMetadata decodes the value of a Token-2022 TokenMetadata
// extension: update authority (OptionalNonZeroPubkey), mint, name,
// symbol, uri (Borsh strings), then additional metadata (ignored).
func parseTokenMetadata(v []byte) (onChainIdentity, error) {
	return readIdentity(&borsh{b: v})
}

// readIdentity reads the head both metadata layouts share: update
// authority (32 bytes, zeros meaning none), mint, then name, symbol and
// uri as Borsh strings.
func readIdentity(r *borsh) (onChainIdentity, error) {
	var id onChainIdentity
	ua, err := r.bytes(32, "update authority")
	if err != nil {
		return id, err
	}
	id.UpdateAuthority = nonZeroKey(ua)
	mint, err := r.bytes(32, "mint")
	if err != nil {
		return id, err
	}
	id.Mint = base58.Encode(mint)
	if id.Name, err = r.string("name"); err != nil {
		return id, err
	}
	if id.Symbol, err = r.string("symbol"); err != nil {
		return id, err
	}
	if id.URI, err = r.string("uri"); err != nil {
		return id, err
	}
	return id, nil
}

// parseMetaplex decodes the head of a Metaplex Token Metadata account
// (MetadataV1): key, update authority, mint, then name, symbol and uri as
// NUL-padded Borsh strings. The fields after them are not needed.
func parseMetaplex(data []byte) (onChainIdentity, error) {
	r := &borsh{b: data}
	k, err := r.bytes(1, "key")
	if err != nil {
		return onChainIdentity{}, err
	}
	if k[0] != metaplexKeyV1 {
		return onChainIdentity{}, fmt.Errorf("metadata account key is %d, want %d (MetadataV1)", k[0], metaplexKeyV1)
	}
	return readIdentity(r) // a zero update authority is the system program: none
}
