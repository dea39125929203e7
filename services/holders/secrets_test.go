package holders_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/tokendata/tokendata/services/holders/holderstest"
	"github.com/tokendata/tokendata/shared/collector"
	"github.com/tokendata/tokendata/shared/config"
	"github.com/tokendata/tokendata/shared/contract"
	"github.com/tokendata/tokendata/shared/simulator/fault"
	"github.com/tokendata/tokendata/shared/store"
	"github.com/tokendata/tokendata/shared/testkit/redistest"
	"github.com/tokendata/tokendata/shared/testkit/simtest"
)

// Keys of the key-echo tests: one that URL encoding changes, carried in
// the query, and one carried as a path token.
const (
	queryKey = "h0lders/k3y+with=odd&chars"
	pathKey  = "Pth0k3nH0ld3rsXyz987"
)

// keyForms are the ways a message may quote key.
func keyForms(key string) []string {
	return []string{key, url.QueryEscape(key), url.PathEscape(key), strings.ToLower(url.QueryEscape(key))}
}

// TestKeyEchoNeverLeaks: the RPC node refuses the key and quotes it bare,
// URL-encoded and inside URLs, on each call of an enumeration. The key is
// in no form in the status record (in Redis), the logs or the error, and
// the record still says what the node answered.
func TestKeyEchoNeverLeaks(t *testing.T) {
	rs := redistest.Start(t)
	opts, err := store.ParseRedisURL(rs.URL())
	if err != nil {
		t.Fatal(err)
	}
	backend := store.NewRedis(opts)
	t.Cleanup(func() { _ = backend.Close() })
	s, base := simtest.StartTB(t, holderstest.ClassicToken(200))
	for _, tc := range []struct {
		name, url, key, method, route string
	}{
		{"query/getAccountInfo", base + "/?api-key=" + url.QueryEscape(queryKey), queryKey, contract.HoldersMethodGPA, "getAccountInfo"},
		{"query/getProgramAccounts", base + "/?api-key=" + url.QueryEscape(queryKey), queryKey, contract.HoldersMethodGPA, "getProgramAccounts"},
		{"path/getProgramAccounts", base + "/v2/" + pathKey, pathKey, contract.HoldersMethodGPA, "getProgramAccounts"},
		{"path/getTokenAccounts", base + "/" + pathKey + "/", pathKey, contract.HoldersMethodDAS, "getTokenAccounts"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newCollector(t, setup{url: tc.url, mint: holderstest.ClassicMint, method: tc.method, backend: backend})
			s.Faults().Inject(tc.route, fault.Fault{Kind: fault.RPCKeyEcho})
			defer s.Faults().ClearAll()
			runErr := f.c.RunOnce(context.Background())
			var ce *collector.Error
			if !errors.As(runErr, &ce) || ce.Kind != contract.ErrKindRPC {
				t.Fatalf("RunOnce = %v, want kind %s", runErr, contract.ErrKindRPC)
			}
			sts, err := f.store.ReadStatuses(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			run := sts[contract.CollectorHolders].Runs[contract.DomainHolders]
			if !strings.Contains(run.Error, "-32052") || !strings.Contains(run.Error, config.Mask) {
				t.Errorf("the record does not show the redacted refusal: %q", run.Error)
			}
			rec, _ := json.Marshal(sts)
			for what, text := range map[string]string{"status record": string(rec), "logs": f.logs.String(), "error": runErr.Error()} {
				for _, form := range keyForms(tc.key) {
					if strings.Contains(text, form) {
						t.Errorf("%s quotes the key as %q:\n%s", what, form, text)
					}
				}
			}
		})
	}
}
