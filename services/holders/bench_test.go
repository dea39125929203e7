package holders_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"io"
	mrand "math/rand/v2"
	"net/http"
	"strings"
	"testing"

	"github.com/tokendata/tokendata/services/holders"
	"github.com/tokendata/tokendata/shared/simulator/solanasim"
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
	_, url := sim(b, classicToken(100_000))
	resp := recordGPA(b, url, solanasim.TokenProgramID, classicMint, classicFilters(classicMint))
	b.SetBytes(int64(len(resp)))
	b.ReportAllocs()
	var c *holders.Count
	for b.Loop() {
		c = holders.NewCount()
		if _, err := holders.DecodeProgramAccounts(bytes.NewReader(resp), c, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(c.TokenAccounts)*float64(b.N)/b.Elapsed().Seconds(), "accounts/s")
}

// BenchmarkDecodeProgramAccountsLive is BenchmarkDecodeProgramAccounts
// seeding a live tally: each account's address decoded (base58) and kept.
func BenchmarkDecodeProgramAccountsLive(b *testing.B) {
	_, url := sim(b, classicToken(100_000))
	resp := recordGPA(b, url, solanasim.TokenProgramID, classicMint, classicFilters(classicMint))
	b.SetBytes(int64(len(resp)))
	b.ReportAllocs()
	var l *holders.Live
	for b.Loop() {
		l = holders.NewLive(1)
		if _, err := holders.DecodeProgramAccountsLive(bytes.NewReader(resp), l, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(l.TokenAccounts())*float64(b.N)/b.Elapsed().Seconds(), "accounts/s")
}

// BenchmarkCount inserts 1,000,000 random owners.
func BenchmarkCount(b *testing.B) {
	keys := make([]holders.Owner, 1_000_000)
	for i := range keys {
		_, _ = rand.Read(keys[i][:])
	}
	b.ReportAllocs()
	for b.Loop() {
		c := holders.NewCount()
		for i := range keys {
			_ = c.Add(&keys[i], 1)
		}
	}
}

// BenchmarkLive holds a live tally of 1,000,000 token accounts of 700,000
// owners (one in ten at zero) and applies notifications to it, each an
// account's new state (a new owner, a balance of 0 to 2): MiB is the
// memory the tally holds, ns/op one notification applied.
func BenchmarkLive(b *testing.B) {
	accounts := make([]holders.Owner, 1_000_000)
	owners := make([]holders.Owner, 700_000)
	for i := range accounts {
		_, _ = rand.Read(accounts[i][:])
	}
	for i := range owners {
		_, _ = rand.Read(owners[i][:])
	}
	l := holders.NewLive(1)
	for i := range accounts {
		if err := l.Seed(&accounts[i], &owners[i%len(owners)], uint64(i%10)); err != nil {
			b.Fatal(err)
		}
	}
	r := mrand.New(mrand.NewPCG(1, 2))
	slot := uint64(2)
	for b.Loop() {
		if _, err := l.Apply(slot, &accounts[r.IntN(len(accounts))], &owners[r.IntN(len(owners))], r.Uint64N(3)); err != nil {
			b.Fatal(err)
		}
		slot++
	}
	b.ReportMetric(float64(l.Bytes())/(1<<20), "MiB")
}

// BenchmarkDecodeProgramNotification: one notification of a classic token
// account, as the subscription asks for it (the owner and the amount) and
// whole (a node that ignores dataSlice).
func BenchmarkDecodeProgramNotification(b *testing.B) {
	var mint holders.Owner
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
				if _, err := holders.DecodeProgramNotification(msg, &mint, program); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
