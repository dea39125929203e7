package wire_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/tokendata/tokendata/services/holders/holderstest"
	"github.com/tokendata/tokendata/services/holders/tally"
	"github.com/tokendata/tokendata/services/holders/wire"
	"github.com/tokendata/tokendata/shared/simulator/solanasim"
	"github.com/tokendata/tokendata/shared/testkit/simtest"
)

// recordGPA returns the simulator's getProgramAccounts answer for mint
// (withContext, dataSlice 32/40, the classic Token query).
func recordGPA(tb testing.TB, url, program, mint string, filters string) []byte {
	tb.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"getProgramAccounts","params":["` + program +
		`",{"encoding":"base64","withContext":true,"dataSlice":{"offset":32,"length":40},"filters":[` + filters + `]}]}`
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Accept-Encoding", "identity")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func classicFilters(mint string) string {
	return `{"dataSize":165},{"memcmp":{"offset":0,"bytes":"` + mint + `"}}`
}

// BenchmarkDecodeProgramAccounts decodes a recorded 100,000-account
// response from memory: the decoder and the owner set alone.
func BenchmarkDecodeProgramAccounts(b *testing.B) {
	_, url := simtest.StartTB(b, holderstest.ClassicToken(100_000))
	resp := recordGPA(b, url, solanasim.TokenProgramID, holderstest.ClassicMint, classicFilters(holderstest.ClassicMint))
	b.SetBytes(int64(len(resp)))
	b.ReportAllocs()
	var c *tally.Count
	for b.Loop() {
		c = tally.NewCount()
		if _, err := wire.DecodeProgramAccounts(bytes.NewReader(resp), c, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(c.TokenAccounts)*float64(b.N)/b.Elapsed().Seconds(), "accounts/s")
}

// BenchmarkDecodeProgramAccountsLive is BenchmarkDecodeProgramAccounts
// seeding a live tally: each account's address decoded (base58) and kept.
func BenchmarkDecodeProgramAccountsLive(b *testing.B) {
	_, url := simtest.StartTB(b, holderstest.ClassicToken(100_000))
	resp := recordGPA(b, url, solanasim.TokenProgramID, holderstest.ClassicMint, classicFilters(holderstest.ClassicMint))
	b.SetBytes(int64(len(resp)))
	b.ReportAllocs()
	var l *tally.Live
	for b.Loop() {
		l = tally.NewLive(1)
		if _, err := wire.DecodeProgramAccountsLive(bytes.NewReader(resp), l, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(l.TokenAccounts())*float64(b.N)/b.Elapsed().Seconds(), "accounts/s")
}

// BenchmarkDecodeProgramNotification: one notification of a classic token
// account, as the subscription asks for it (the owner and the amount) and
// whole (a node that ignores dataSlice).
func BenchmarkDecodeProgramNotification(b *testing.B) {
	var mint tally.Owner
	_, _ = rand.Read(mint[:])
	owner := make([]byte, 40)
	_, _ = rand.Read(owner[:32])
	whole := append(append(append([]byte(nil), mint[:]...), owner...), make([]byte, 165-72)...)
	program := solanasim.ProgramToken.ID()
	for _, tc := range []struct {
		name string
		data []byte
	}{{"sliced", owner}, {"whole", whole}} {
		msg := []byte(`{"jsonrpc":"2.0","method":"programNotification","params":{"result":{"context":{"slot":300026152},"value":{"pubkey":"` +
			program + `","account":{"lamports":2039280,"data":["` + base64.StdEncoding.EncodeToString(tc.data) + `","base64"],"owner":"` + program +
			`","executable":false,"rentEpoch":18446744073709551615,"space":165}}},"subscription":24040}}`)
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(int64(len(msg)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := wire.DecodeProgramNotification(msg, &mint, program); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
