package edge

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tokendata/tokendata/services/edge/edgetest"
	"github.com/tokendata/tokendata/shared/contract"
)

// FuzzDocument feeds arbitrary bytes as a stored document's data (the one
// place where the edge reads bytes another process wrote): decoding never
// panics, and a document it accepts renders every endpoint as valid JSON
// or an exact decimal, never a 500.
func FuzzDocument(f *testing.F) {
	for _, d := range contract.Domains {
		b, _ := json.Marshal(edgetest.Doc(d))
		f.Add(string(d), b)
	}
	nm, _ := json.Marshal(edgetest.NotIndexed())
	f.Add("market", nm)
	f.Add("supply", []byte(`{"decimals":255,"total_raw":"99999999999999999999","circulating_raw":"1"}`))
	f.Add("market", []byte(`{"status":"ok","price_usd":"1e-30","selected":{}}`))
	f.Add("holders", []byte(`{"holders":-1}`))
	f.Add("metadata", []byte(`null`))
	h := newHarness(f, nil)
	f.Fuzz(func(t *testing.T, domain string, data []byte) {
		d := contract.Domain(domain)
		if !d.Valid() {
			return
		}
		env := contract.Envelope{SchemaVersion: 1, Domain: d, Mint: edgetest.Token().Mint, UpdatedAt: t0, Data: data,
			Source: contract.Source{Name: "fuzz"}}
		v, err := decode(env)
		if err != nil {
			return
		}
		st := &state{docs: map[contract.Domain]*doc{d: {env: env, value: v, expires: t0.Add(time.Hour)}},
			rejected: map[contract.Domain]string{}}
		view := h.srv.render(st, t0)
		for i, resp := range view.routes {
			if resp.status == http.StatusInternalServerError {
				t.Fatalf("%s: 500 for accepted %s document %q", renderedRoutes[i].path, d, data)
			}
			if resp.status == http.StatusOK && strings.HasPrefix(resp.hdr[0].val[0], "application/json") && !json.Valid(resp.body) {
				t.Fatalf("%s: invalid JSON", renderedRoutes[i].path)
			}
		}
	})
}

// FuzzIfNoneMatch: the If-None-Match parser (client bytes) never panics,
// and a list that contains the ETag verbatim always matches.
func FuzzIfNoneMatch(f *testing.F) {
	for _, s := range []string{`"abc"`, `W/"abc"`, `*`, `"x", "abc"`, `"unterminated`, `,,,`, `W/`, ``} {
		f.Add(s)
	}
	const etag = `"abc"`
	f.Fuzz(func(t *testing.T, list string) {
		_ = etagListMatches(list, etag)
		if !strings.Contains(list, `"`) && !strings.Contains(list, "*") && etagListMatches(list, etag) {
			t.Fatalf("%q matched without a quoted tag or *", list)
		}
		if !etagListMatches(etag+", "+list, etag) {
			t.Fatalf("a list starting with the ETag did not match")
		}
	})
}
