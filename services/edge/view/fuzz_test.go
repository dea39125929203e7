package view

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tokendata/tokendata/services/edge/edgetest"
	"github.com/tokendata/tokendata/services/edge/snapshot"
	"github.com/tokendata/tokendata/shared/contract"
)

// FuzzDocument feeds arbitrary bytes as a stored document's data (the one
// place where the edge reads bytes another process wrote): decoding never
// panics, and a document it accepts renders every endpoint, the portal
// page included, as valid JSON or an exact decimal, never a 500.
//
// It lives in the view room, not in package edge, because rendering is
// all it exercises: a fuzz build instruments every package its test
// binary links, and package edge's tests link the whole server (Gin, the
// OpenAPI validator) for nothing here.
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
	in := fuzzInputs(f)
	// what a new server has published before its first read
	prev := in.Render(&snapshot.State{Docs: map[contract.Domain]*snapshot.Doc{}, Rejected: map[contract.Domain]string{}}, nil, t0)
	f.Fuzz(func(t *testing.T, domain string, data []byte) {
		d := contract.Domain(domain)
		if !d.Valid() {
			return
		}
		env := contract.Envelope{SchemaVersion: 1, Domain: d, Mint: edgetest.Token().Mint, UpdatedAt: t0, Data: data,
			Source: contract.Source{Name: "fuzz"}}
		v, err := snapshot.Decode(env)
		if err != nil {
			return
		}
		st := &snapshot.State{Docs: map[contract.Domain]*snapshot.Doc{d: {Env: env, Value: v, Expires: t0.Add(time.Hour)}},
			Rejected: map[contract.Domain]string{}}
		for i, resp := range in.Render(st, prev, t0).Routes {
			if resp.Status == http.StatusInternalServerError {
				t.Fatalf("%s: 500 for accepted %s document %q", RenderedRoutes[i].Path, d, data)
			}
			if resp.Status == http.StatusOK && strings.HasPrefix(resp.Headers[0].Values[0], "application/json") && !json.Valid(resp.Body) {
				t.Fatalf("%s: invalid JSON", RenderedRoutes[i].Path)
			}
		}
	})
}

// fuzzInputs are inputs with the portal page on, as the edge runs by
// default, and without compression (TestCompressOnlyWhereItPays's).
func fuzzInputs(t testing.TB) *RenderInputs {
	t.Helper()
	in := inputs(t)
	assets, err := LoadPortalAssets()
	if err != nil {
		t.Fatal(err)
	}
	in.Portal, in.Assets, in.CSP = true, assets, PortalCSP(edgetest.Token().Logo)
	in.Uncompressed = true
	in.Log = slog.New(slog.DiscardHandler) // a render that fails is a 500, which the target fails on
	return in
}
