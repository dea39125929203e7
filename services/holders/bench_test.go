package holders_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"io"
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
