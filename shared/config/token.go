package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"regexp"
	"strings"

	"github.com/mr-tron/base58"
	"gopkg.in/yaml.v3"

	"github.com/tokendata/tokendata/shared/amount"
	"github.com/tokendata/tokendata/shared/contract"
)

// MaxSupplyNone is the max_supply of a token whose issuer discloses no
// maximum supply (written in any case in the file or TOKEN_MAX_SUPPLY).
// Then no maximum supply and no fully diluted valuation are published.
const MaxSupplyNone = "none"

// ErrMaxSupplyNotDisclosed is MaxSupplyRaw's error for such a token.
var ErrMaxSupplyNotDisclosed = errors.New("the token's issuer discloses no maximum supply")

// Token is the token file: the official identity of the token, what only
// its team can state, from which the static endpoints are rendered.
type Token struct {
	// Mint is the official mint address (base58, 32 bytes).
	Mint string `yaml:"mint" json:"mint"`
	// Name and Symbol are the official identity.
	Name   string `yaml:"name" json:"name"`
	Symbol string `yaml:"symbol" json:"symbol"`
	// Decimals, when set, is what the ledger must report; a difference is
	// disclosed as a warning. Nil: take the ledger's.
	Decimals *uint8 `yaml:"decimals" json:"decimals"`
	// MaxSupply is the disclosed maximum supply in whole tokens, or
	// MaxSupplyNone. Required: it is never guessed.
	MaxSupply string `yaml:"max_supply" json:"max_supply"`
	// Description is one paragraph about the token.
	Description string `yaml:"description" json:"description"`
	// Logo is an https URL of the logo image.
	Logo string `yaml:"logo" json:"logo"`
	// PublicBaseURL is where this API is published (https://…, no /api).
	PublicBaseURL string `yaml:"public_base_url" json:"public_base_url"`
	// Links are the project's official links, in the order given.
	Links []Link `yaml:"links" json:"links"`
	// OfficialPairs are the pairs the team declares official.
	OfficialPairs []OfficialPair `yaml:"official_pairs" json:"official_pairs"`
	// Exchanges are the disclosed markets.
	Exchanges []Exchange `yaml:"exchanges" json:"exchanges"`
	// PriceMoveWarning is the share (0.2 = 20 %) of a price move between
	// two polls that the market collector flags. Empty: 0.5.
	PriceMoveWarning string `yaml:"price_move_warning" json:"price_move_warning"`
	// PriceTolerance, PriceHoldBound, PriceMoveBound and PriceMaxHeldPolls
	// rule the cross-check of the price between the two aggregators
	// (pricecheck.go, PriceBounds). Empty or nil: the defaults there.
	PriceTolerance    string `yaml:"price_tolerance" json:"price_tolerance"`
	PriceHoldBound    string `yaml:"price_hold_bound" json:"price_hold_bound"`
	PriceMoveBound    string `yaml:"price_move_bound" json:"price_move_bound"`
	PriceMaxHeldPolls *int   `yaml:"price_max_held_polls" json:"price_max_held_polls"`
	// SigningKeyThumbprint is the RFC 7638 thumbprint of the key that
	// signs the service's answers (its key id in /api/keys): stated in
	// the token's identity, it vouches for the key. Optional; when set,
	// an edge whose SIGNING_KEY_FILE holds another key refuses to start.
	SigningKeyThumbprint string `yaml:"signing_key_thumbprint" json:"signing_key_thumbprint"`
}

// Link is one official project link.
type Link struct {
	// Kind: website, twitter, telegram, discord, github, docs, whitepaper…
	Kind string `yaml:"kind" json:"kind"`
	URL  string `yaml:"url" json:"url"`
}

// OfficialPair is a pair the team declares official.
type OfficialPair struct {
	Address string `yaml:"address" json:"address"`
	Dex     string `yaml:"dex" json:"dex"`
	Base    string `yaml:"base" json:"base"`
	Quote   string `yaml:"quote" json:"quote"`
}

// Exchange is one disclosed market.
type Exchange struct {
	Name string `yaml:"name" json:"name"`
	// Type is dex or cex.
	Type     string `yaml:"type" json:"type"`
	Pair     string `yaml:"pair" json:"pair"`
	Base     string `yaml:"base" json:"base"`
	Quote    string `yaml:"quote" json:"quote"`
	TradeURL string `yaml:"trade_url" json:"trade_url"`
	InfoURL  string `yaml:"info_url" json:"info_url"`
	Official bool   `yaml:"official" json:"official"`
}

// LoadToken reads the token file at path, applies the TOKEN_MINT and
// TOKEN_MAX_SUPPLY overrides (mintOverride, maxOverride: empty for none)
// and validates the result.
func LoadToken(path, mintOverride, maxOverride string) (Token, error) {
	f, err := os.Open(path)
	if err != nil {
		return Token{}, fmt.Errorf("TOKEN_CONFIG: %w", err)
	}
	defer func() { _ = f.Close() }()
	t, err := decodeToken(f)
	if err != nil {
		return Token{}, fmt.Errorf("TOKEN_CONFIG %s: %w", path, err)
	}
	if t, err = applyOverrides(t, mintOverride, maxOverride); err != nil {
		return Token{}, err
	}
	if err := t.Validate(); err != nil {
		return Token{}, fmt.Errorf("TOKEN_CONFIG %s: %w", path, err)
	}
	return t, nil
}

// TokenFromMint builds a token with only a mint and a maximum supply
// (TOKEN_MINT and TOKEN_MAX_SUPPLY without a token file): identity fields
// come from the ledger's metadata. The maximum supply is required: only
// the issuer can state it.
func TokenFromMint(mint, maxSupply string) (Token, error) {
	if maxSupply == "" {
		return Token{}, errors.New("TOKEN_MAX_SUPPLY: required when the token is named by TOKEN_MINT alone: " +
			"set the maximum supply in whole tokens (TOKEN_MAX_SUPPLY=1000000000), or TOKEN_MAX_SUPPLY=none when the issuer " +
			"discloses none; or use a token file (TOKEN_CONFIG) with max_supply")
	}
	t, err := applyOverrides(Token{}, mint, maxSupply)
	if err != nil {
		return Token{}, err
	}
	return t, t.Validate()
}

// applyOverrides sets the mint and the maximum supply from the
// environment over the token file's, each checked and named by its
// variable.
func applyOverrides(t Token, mint, maxSupply string) (Token, error) {
	if mint != "" {
		if err := CheckAddress(mint); err != nil {
			return Token{}, fmt.Errorf("TOKEN_MINT: %w", err)
		}
		t.Mint = mint
	}
	if t.Mint == "" {
		return Token{}, errors.New("mint: missing (set it in the token file or TOKEN_MINT)")
	}
	if maxSupply != "" {
		if err := checkMaxSupply(maxSupply); err != nil {
			return Token{}, fmt.Errorf("TOKEN_MAX_SUPPLY: %w", err)
		}
		t.MaxSupply = normalizeMaxSupply(maxSupply)
	}
	return t, nil
}

// MaxTokenFileBytes bounds the token file: a larger one is refused, never
// read in part.
const MaxTokenFileBytes = 1 << 20

// ParseToken decodes a token file strictly: unknown keys are errors, so a
// typo cannot silently drop a field.
func ParseToken(r io.Reader) (Token, error) {
	t, err := decodeToken(r)
	if err != nil {
		return Token{}, err
	}
	return t, t.Validate()
}

// decodeToken decodes a token file strictly, without validating it.
func decodeToken(r io.Reader) (Token, error) {
	b, err := io.ReadAll(io.LimitReader(r, MaxTokenFileBytes+1))
	if err != nil {
		return Token{}, err
	}
	if len(b) > MaxTokenFileBytes {
		return Token{}, fmt.Errorf("larger than the limit of %d bytes (1 MiB)", MaxTokenFileBytes)
	}
	// The keys first, against the token's fields: an unknown one is
	// named with its line and the valid key nearest to it.
	var doc yaml.Node
	if err := yaml.NewDecoder(bytes.NewReader(b)).Decode(&doc); err != nil {
		return Token{}, fmt.Errorf("invalid YAML: %w", err)
	}
	if err := unknownKeys(&doc, reflect.TypeFor[Token]()); err != nil {
		return Token{}, err
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	var t Token
	if err := dec.Decode(&t); err != nil {
		return Token{}, fmt.Errorf("invalid YAML: %w", err)
	}
	t.MaxSupply = normalizeMaxSupply(t.MaxSupply)
	return t, nil
}

// normalizeMaxSupply spells "none" in any case as MaxSupplyNone.
func normalizeMaxSupply(s string) string {
	if strings.EqualFold(s, MaxSupplyNone) {
		return MaxSupplyNone
	}
	return s
}

// checkMaxSupply accepts a positive whole number of tokens or "none".
func checkMaxSupply(s string) error {
	if strings.EqualFold(s, MaxSupplyNone) {
		return nil
	}
	raw, err := amount.ToRaw(s, 0)
	if err != nil {
		return fmt.Errorf("%q is not a whole number of tokens, nor none", s)
	}
	if raw == "0" {
		return errors.New("0 is not a maximum supply; write none when the issuer discloses none")
	}
	return nil
}

// Validate checks every field and names the ones at fault.
func (t Token) Validate() error {
	var errs []error
	bad := func(field, format string, a ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", field, fmt.Sprintf(format, a...)))
	}
	if t.Mint != "" {
		if err := CheckAddress(t.Mint); err != nil {
			bad("mint", "%v", err)
		}
	}
	if t.SigningKeyThumbprint != "" && !thumbprintRE.MatchString(t.SigningKeyThumbprint) {
		bad("signing_key_thumbprint", "%.60q is not an RFC 7638 thumbprint of an Ed25519 key (43 characters of base64url, as /api/keys gives it as kid)", t.SigningKeyThumbprint)
	}
	if t.MaxSupply == "" {
		bad("max_supply", `missing: state the maximum supply in whole tokens (max_supply: "1000000000"), `+
			"or max_supply: none when the issuer discloses none (TOKEN_MAX_SUPPLY sets it too); it is never guessed")
	} else if err := checkMaxSupply(t.MaxSupply); err != nil {
		bad("max_supply", "%v", err)
	}
	if len(t.Symbol) > 16 || strings.ContainsAny(t.Symbol, " \t\n") {
		bad("symbol", "%q must be at most 16 characters without spaces", t.Symbol)
	}
	if len(t.Name) > 64 {
		bad("name", "longer than 64 characters")
	}
	if t.Decimals != nil && *t.Decimals > contract.MaxDecimals {
		bad("decimals", "%d is more than %d", *t.Decimals, contract.MaxDecimals)
	}
	if t.PriceMoveWarning != "" {
		if _, err := amount.ToRaw(t.PriceMoveWarning, 18); err != nil || t.PriceMoveWarning == "0" {
			bad("price_move_warning", "%q is not a positive decimal share such as 0.5", t.PriceMoveWarning)
		}
	}
	if _, err := t.PriceBounds(); err != nil {
		errs = append(errs, err)
	}
	urlField := func(field, u string, required bool) {
		if u == "" && !required {
			return
		}
		if err := checkHTTPURL(u); err != nil {
			bad(field, "%v", err)
		}
	}
	urlField("logo", t.Logo, false)
	urlField("public_base_url", t.PublicBaseURL, false)
	for i, l := range t.Links {
		if l.Kind == "" {
			bad(fmt.Sprintf("links[%d].kind", i), "missing")
		}
		urlField(fmt.Sprintf("links[%d].url", i), l.URL, true)
	}
	for i, p := range t.OfficialPairs {
		if err := CheckAddress(p.Address); err != nil {
			bad(fmt.Sprintf("official_pairs[%d].address", i), "%v", err)
		}
	}
	for i, e := range t.Exchanges {
		f := fmt.Sprintf("exchanges[%d]", i)
		if e.Name == "" {
			bad(f+".name", "missing")
		}
		if e.Type != "dex" && e.Type != "cex" {
			bad(f+".type", "%q is not dex or cex", e.Type)
		}
		urlField(f+".trade_url", e.TradeURL, false)
		urlField(f+".info_url", e.InfoURL, false)
		if e.Pair != "" && e.Type == "dex" {
			if err := CheckAddress(e.Pair); err != nil {
				bad(f+".pair", "%v", err)
			}
		}
	}
	return errors.Join(errs...)
}

// IsOfficialPair reports whether address is one of the official pairs.
func (t Token) IsOfficialPair(address string) bool {
	for _, p := range t.OfficialPairs {
		if p.Address == address {
			return true
		}
	}
	return false
}

// MaxSupplyDisclosed reports whether the token file states a maximum
// supply (rather than none).
func (t Token) MaxSupplyDisclosed() bool {
	return !strings.EqualFold(t.MaxSupply, MaxSupplyNone)
}

// MaxSupplyRaw is the maximum supply in base units at decimals;
// ErrMaxSupplyNotDisclosed when the token states none.
func (t Token) MaxSupplyRaw(decimals uint8) (string, error) {
	if !t.MaxSupplyDisclosed() {
		return "", ErrMaxSupplyNotDisclosed
	}
	return amount.ToRaw(t.MaxSupply, decimals)
}

// CheckAddress checks a base58 ledger address of 32 bytes.
func CheckAddress(s string) error {
	if s == "" {
		return errors.New("missing address")
	}
	b, err := base58.Decode(s)
	if err != nil || len(b) != 32 {
		return fmt.Errorf("%q is not a base58 address of 32 bytes", s)
	}
	return nil
}

// ResolveToken picks the token to serve: the token file (with TOKEN_MINT
// and TOKEN_MAX_SUPPLY as overrides), else TOKEN_MINT with
// TOKEN_MAX_SUPPLY, else the demo token when allowDemo (standalone only:
// the simulator lives there). demo reports the last case.
func ResolveToken(c Common, allowDemo bool) (t Token, demo bool, err error) {
	switch {
	case c.TokenConfig != "":
		t, err = LoadToken(c.TokenConfig, c.TokenMint, c.TokenMaxSupply)
		return t, false, err
	case c.TokenMint != "":
		t, err = TokenFromMint(c.TokenMint, c.TokenMaxSupply)
		return t, false, err
	case c.TokenMaxSupply != "":
		return Token{}, false, errors.New("TOKEN_MAX_SUPPLY: set without TOKEN_CONFIG or TOKEN_MINT; " +
			"it states the maximum supply of a configured token")
	case allowDemo:
		return DemoToken(), true, nil
	}
	return Token{}, false, errors.New("TOKEN_CONFIG or TOKEN_MINT: one is required (demo mode is for standalone only)")
}

// thumbprintRE is an RFC 7638 SHA-256 thumbprint in base64url without
// padding.
var thumbprintRE = regexp.MustCompile(`^[A-Za-z0-9_-]{43}$`)
