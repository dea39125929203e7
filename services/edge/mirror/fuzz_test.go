package mirror

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tokendata/tokendata/services/edge/answer"
	"github.com/tokendata/tokendata/services/edge/edgetest"
	"github.com/tokendata/tokendata/services/edge/snapshot"
	"github.com/tokendata/tokendata/services/edge/view"
	"github.com/tokendata/tokendata/shared/config"
	"github.com/tokendata/tokendata/shared/contract"
	"github.com/tokendata/tokendata/shared/store"
)

// FuzzStoredValue feeds arbitrary bytes as the whole value of a domain
// key and of a status record key, read the way the refresher reads them
// (store.Reader, then snapshot.Merge's checks): nothing panics, a value the
// edge takes renders no 500, and /api/status stays valid JSON.
//
// In the mirror's room rather than package edge: a fuzz build instruments
// every package its test binary links, and package edge's tests link the
// whole server for nothing this target reaches.
func FuzzStoredValue(f *testing.F) {
	t0 := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	token := edgetest.Token()
	for _, d := range contract.Domains {
		env, err := contract.NewEnvelope(token.Mint, d, t0.Add(-30*time.Second), edgetest.Source(d, false), edgetest.Doc(d))
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
	mem := store.NewMemory()
	f.Cleanup(func() { _ = mem.Close() })
	st := store.New(mem, token.Mint)
	var common config.Common
	redactor := view.NewRedactor(common, token)
	// the edge's render inputs without the portal page, uncompressed
	// (compression is package edge's TestCompressOnlyWhereItPays)
	in := &view.RenderInputs{Token: token, RetryAfter: 30 * time.Second, Timings: contract.DefaultTimings,
		Redactor: redactor, OpenAPI: []byte(`{"openapi":"3.1.0"}`), Uncompressed: true, Log: slog.New(slog.DiscardHandler),
		ErrInternal:   answer.NewError(http.StatusInternalServerError, answer.CodeInternal, "Internal error.", time.Second),
		CacheControls: map[answer.Group]string{answer.GroupNone: answer.NoStore}}
	m := New(Options{Store: st, MaxDocumentBytes: 4 << 10, Log: slog.New(slog.DiscardHandler), Now: func() time.Time { return t0 },
		Timings: contract.DefaultTimings, Redactor: redactor, Inputs: in, Registry: prometheus.NewRegistry()})
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, domain string, value, status []byte) {
		d := contract.Domain(domain)
		if !d.Valid() {
			return
		}
		if err := mem.Set(ctx, contract.DocumentKey(token.Mint, d), value, time.Hour); err != nil {
			t.Fatal(err)
		}
		if err := mem.Set(ctx, contract.StatusKey(token.Mint, contract.CollectorHolders), status, time.Hour); err != nil {
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
		if next.Docs[d] != nil { // rendering is view's FuzzDocument's; this checks what reaches it
			for i, resp := range in.Render(next, m.View(), t0).Routes {
				if resp != nil && resp.Status == http.StatusInternalServerError {
					t.Fatalf("%s: 500 for a stored %s value %q", view.RenderedRoutes[i].Path, d, value)
				}
			}
		}
		// what /api/status reads, of this state and these records
		body, err := answer.EncodeJSON(m.StatusReportOf(next, snap.Statuses))
		if err != nil || !json.Valid(body) {
			t.Fatalf("/api/status: %v %q", err, body)
		}
		_ = mem.Set(ctx, contract.DocumentKey(token.Mint, d), nil, time.Nanosecond) // gone for the next input
	})
}
