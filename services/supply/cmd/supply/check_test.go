package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"strings"
	"testing"

	"github.com/mr-tron/base58"

	"github.com/tokendata/tokendata/shared/simulator/solanasim"
	"github.com/tokendata/tokendata/shared/testkit/redistest"
	"github.com/tokendata/tokendata/shared/testkit/simtest"
)

// TestCheck: `supply check` judges the supply and metadata groups with
// the collector's own reads, and the same wrong mint fails both with the
// same remedy; the RPC key is never printed.
func TestCheck(t *testing.T) {
	h := sha256.Sum256([]byte("check-mint"))
	mint := base58.Encode(h[:])
	_, url := simtest.StartTB(t, solanasim.Token{Mint: mint, Decimals: 6, Supply: 123_456_789,
		Metadata: solanasim.MetadataMetaplex, Name: "Chk", Symbol: "CHK", UpdateAuthority: mint})
	rs := redistest.Start(t)
	t.Setenv("TOKEN_MINT", mint)
	t.Setenv("TOKEN_MAX_SUPPLY", "1000000000")
	t.Setenv("SOLANA_RPC_URL", url+"/?api-key=SECRET-0F-N0DE")
	t.Setenv("REDIS_URL", rs.URL())
	var out bytes.Buffer
	app.Stdout = &out
	defer func() { app.Stdout = nil }()
	code := app.Run(context.Background(), []string{"check"})
	for _, want := range []string{
		"ok    getTokenSupply: total supply 123.456789 (123456789 base units, 6 decimals)",
		"ok    mint account: owned by the spl-token program",
		`ok    on-chain metadata: the Metaplex metadata account`,
		"verdict: ready",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the report lacks %q:\n%s", want, out.String())
		}
	}
	if code != 0 {
		t.Errorf("exit %d", code)
	}
	h = sha256.Sum256([]byte("not-a-mint"))
	t.Setenv("TOKEN_MINT", base58.Encode(h[:]))
	out.Reset()
	code = app.Run(context.Background(), []string{"check"})
	if n := strings.Count(out.String(), "remedy: check the mint address (TOKEN_MINT, or mint in the token file)"); code != 1 || n != 2 {
		t.Errorf("wrong mint: exit %d, %d remedies:\n%s", code, n, out.String())
	}
	if strings.Contains(out.String(), "SECRET") {
		t.Errorf("the key leaked:\n%s", out.String())
	}
}
