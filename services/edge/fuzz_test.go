package edge

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tokendata/tokendata/services/edge/answer"
	"github.com/tokendata/tokendata/services/edge/edgetest"
	"github.com/tokendata/tokendata/services/edge/snapshot"
	"github.com/tokendata/tokendata/services/edge/view"
	"github.com/tokendata/tokendata/shared/contract"
	"github.com/tokendata/tokendata/shared/store"
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
	h.srv.bodies.Uncompressed = true // compression is TestCompressOnlyWhereItPays's
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
		vw := h.srv.render(st, t0)
		for i, resp := range vw.Routes {
			if resp.Status == http.StatusInternalServerError {
				t.Fatalf("%s: 500 for accepted %s document %q", view.RenderedRoutes[i].Path, d, data)
			}
			if resp.Status == http.StatusOK && strings.HasPrefix(resp.Headers[0].Values[0], "application/json") && !json.Valid(resp.Body) {
				t.Fatalf("%s: invalid JSON", view.RenderedRoutes[i].Path)
			}
		}
	})
}

// FuzzStoredValue feeds arbitrary bytes as the whole value of a domain
// key and of a status record key, read the way the refresher reads them
// (store.Reader, then merge's checks): nothing panics, a value the edge
// takes renders no 500, and /api/status stays valid JSON.
func FuzzStoredValue(f *testing.F) {
	for _, d := range contract.Domains {
		env, err := contract.NewEnvelope(edgetest.Token().Mint, d, t0.Add(-30*time.Second), edgetest.Source(d, false), edgetest.Doc(d))
		if err != nil {
			f.Fatal(err)
		}
		b, _ := json.Marshal(env)
		f.Add(string(d), b, []byte(`{"collector":"holders","runs":{}}`))
	}
	st0, _ := json.Marshal(edgetest.Unsupported(t0))
	f.Add("holders", []byte(`{"schema_version":1,"domain":"holders","mint":"x","updated_at":"2099-01-01T00:00:00Z","data":{}}`), st0)
	f.Add("market", []byte(`{"schema_version":1,"domain":"market\u0000","data":null}`), []byte(`{"runs":{"holders":{"ok":false,"error":"\u202e"}}}`))
	f.Add("supply", []byte(`not json`), []byte(`[]`))
	mint := edgetest.Token().Mint
	mem := store.NewMemory()
	f.Cleanup(func() { _ = mem.Close() })
	st := store.New(mem, mint)
	h := newHarness(f, st)
	h.srv.bodies.Uncompressed = true
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, domain string, value, status []byte) {
		d := contract.Domain(domain)
		if !d.Valid() {
			return
		}
		if err := mem.Set(ctx, contract.DocumentKey(mint, d), value, time.Hour); err != nil {
			t.Fatal(err)
		}
		if err := mem.Set(ctx, contract.StatusKey(mint, contract.CollectorHolders), status, time.Hour); err != nil {
			t.Fatal(err)
		}
		// A fresh reader and an empty previous state: the outcome depends
		// on the input alone.
		snap, err := st.NewReader(4 << 10).Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		read := map[contract.Domain]snapshot.ReadDoc{}
		for dd, doc := range snap.Docs {
			read[dd] = snapshot.ReadDoc{Env: doc.Envelope, Expires: t0.Add(doc.TTL)}
		}
		next, _ := snapshot.Merge(nil, read, snap.Errs, snap.Statuses, t0)
		if next.Docs[d] != nil { // rendering is FuzzDocument's; this checks what reaches it
			for i, resp := range h.srv.render(next, t0).Routes {
				if resp.Status == http.StatusInternalServerError {
					t.Fatalf("%s: 500 for a stored %s value %q", view.RenderedRoutes[i].Path, d, value)
				}
			}
		}
		// what /api/status reads, of this state and these records
		body, err := answer.EncodeJSON(h.srv.mirror.StatusReportOf(next, snap.Statuses))
		if err != nil || !json.Valid(body) {
			t.Fatalf("/api/status: %v %q", err, body)
		}
		_ = mem.Set(ctx, contract.DocumentKey(mint, d), nil, time.Nanosecond) // gone for the next input
	})
}
