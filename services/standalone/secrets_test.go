package standalone_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/tokendata/tokendata/services/edge"
	"github.com/tokendata/tokendata/services/holders"
	"github.com/tokendata/tokendata/services/supply"
	"github.com/tokendata/tokendata/shared/collector"
	"github.com/tokendata/tokendata/shared/config"
	"github.com/tokendata/tokendata/shared/contract"
	"github.com/tokendata/tokendata/shared/logging"
	"github.com/tokendata/tokendata/shared/ops"
	"github.com/tokendata/tokendata/shared/simulator/fault"
	"github.com/tokendata/tokendata/shared/simulator/solanasim"
	"github.com/tokendata/tokendata/shared/store"
	"github.com/tokendata/tokendata/shared/testkit/redistest"
	"github.com/tokendata/tokendata/shared/testkit/simtest"
)

// TestKeyEchoNeverServed runs the real supply and holders collectors
// against an RPC node that refuses their API key and quotes it (bare,
// URL-encoded, inside URLs), over Redis, and the edge on the same store,
// as in a cluster: the edge knows no RPC URL. The key, in the query or as
// a path token, is in no form in the Redis status records, in any log
// line, or in /api/status.
func TestKeyEchoNeverServed(t *testing.T) {
	const (
		queryKey = "e2e/k3y+with=odd&chars"
		pathKey  = "Pth0k3nE2eXyz98765"
	)
	rs := redistest.Start(t)
	sim, base := simtest.StartTB(t, solanasim.Token{Mint: config.DemoMint, Program: solanasim.ProgramToken,
		Decimals: 6, Supply: 1_000_000_000, Holders: solanasim.Holders{Accounts: 50, Seed: 3}})
	token := config.DemoToken()
	for _, tc := range []struct{ name, url, key string }{
		{"query", base + "/?api-key=" + url.QueryEscape(queryKey), queryKey},
		{"path", base + "/v2/" + pathKey, pathKey},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			common := config.Common{SolanaRPCURL: config.Secret(tc.url), HoldersMethod: contract.HoldersMethodGPA,
				RedisURL: config.Secret(rs.URL())}
			st := openRedis(t, rs.URL())
			logs := &logging.Buffer{}
			log := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
			tr := &http.Transport{}
			t.Cleanup(tr.CloseIdleConnections)
			deps := func() collector.Deps {
				reg := ops.NewRegistry("standalone")
				return collector.Deps{Store: st, Metrics: collector.NewMetrics(reg), Registry: reg, Log: log,
					HTTPClient: &http.Client{Transport: tr}}
			}
			sup, err := supply.New(common, token, supply.DefaultConfig(), deps())
			if err != nil {
				t.Fatal(err)
			}
			defer sup.Close()
			hld, err := holders.New(common, token, holders.DefaultConfig(), deps())
			if err != nil {
				t.Fatal(err)
			}
			api, err := edge.New(config.Common{RedisURL: common.RedisURL}, token, edge.DefaultConfig(),
				edge.Deps{Store: st, Log: log})
			if err != nil {
				t.Fatal(err)
			}

			sim.Faults().Inject("*", fault.Fault{Kind: fault.RPCKeyEcho})
			defer sim.Faults().ClearAll()
			var errs []string
			for _, d := range []contract.Domain{contract.DomainSupply, contract.DomainMetadata} {
				if err := sup.RunOnce(ctx, d); err != nil {
					errs = append(errs, err.Error())
				}
			}
			if err := hld.RunOnce(ctx); err != nil {
				errs = append(errs, err.Error())
			}
			if len(errs) != 3 {
				t.Fatalf("want three failed runs, got %q", errs)
			}
			api.Refresh(ctx)
			rec := httptest.NewRecorder()
			api.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/status", nil))
			if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "-32052") {
				t.Fatalf("/api/status: %d %s", rec.Code, rec.Body)
			}
			statuses, err := st.ReadStatuses(ctx)
			if err != nil {
				t.Fatal(err)
			}
			records, _ := json.Marshal(statuses)
			if !strings.Contains(string(records), "api key [redacted] is not allowed") {
				t.Errorf("the records do not show the redacted refusal: %s", records)
			}
			for what, text := range map[string]string{"status records": string(records), "logs": logs.String(),
				"/api/status": rec.Body.String(), "errors": strings.Join(errs, "\n")} {
				for _, form := range []string{tc.key, url.QueryEscape(tc.key), url.PathEscape(tc.key)} {
					if strings.Contains(strings.ToLower(text), strings.ToLower(form)) {
						t.Errorf("%s quote the key as %q:\n%s", what, form, text)
					}
				}
			}
		})
	}
}

// openRedis is a store of the demo mint on the Redis at rawURL.
func openRedis(t *testing.T, rawURL string) *store.Store {
	t.Helper()
	opts, err := store.ParseRedisURL(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	st := store.New(store.NewRedis(opts), config.DemoMint)
	t.Cleanup(func() { _ = st.Close() })
	return st
}
