package supply

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/tokendata/tokendata/shared/collector"
	"github.com/tokendata/tokendata/shared/config"
	"github.com/tokendata/tokendata/shared/contract"
	"github.com/tokendata/tokendata/shared/simulator/fault"
	"github.com/tokendata/tokendata/shared/testkit/simtest"
)

// TestKeyEchoNeverLeaks: the RPC node refuses the key and quotes it bare,
// URL-encoded and inside URLs. Whether the key is in the query or is a
// path token, it is in no form in the status record, the logs (debug
// included) or the error, and the record still says what the node said.
func TestKeyEchoNeverLeaks(t *testing.T) {
	const (
		queryKey = "supp1y/k3y+with=odd&chars"
		pathKey  = "Pth0k3nSupp1yXyz987"
	)
	sim, base := simtest.StartTB(t, classic9())
	for _, tc := range []struct{ name, url, key string }{
		{"query", base + "/?api-key=" + url.QueryEscape(queryKey), queryKey},
		{"path", base + "/v2/" + pathKey, pathKey},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixtureOn(t, sim, tc.url, classic9().Mint, fixtureOpts{})
			sim.Faults().Inject("*", fault.Fault{Kind: fault.RPCKeyEcho})
			defer sim.Faults().ClearAll()
			for _, d := range []contract.Domain{contract.DomainSupply, contract.DomainMetadata} {
				runErr := f.c.RunOnce(context.Background(), d)
				var ce *collector.Error
				if !errors.As(runErr, &ce) || ce.Kind != contract.ErrKindRPC {
					t.Fatalf("RunOnce(%s) = %v, want kind %s", d, runErr, contract.ErrKindRPC)
				}
				sts, err := f.store.ReadStatuses(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				run := sts[contract.CollectorSupply].Runs[d]
				if !strings.Contains(run.Error, "-32052") || !strings.Contains(run.Error, config.Mask) {
					t.Errorf("%s: the record does not show the redacted refusal: %q", d, run.Error)
				}
				rec, _ := json.Marshal(sts)
				for what, text := range map[string]string{"status record": string(rec), "logs": f.logs.String(), "error": runErr.Error()} {
					for _, form := range []string{tc.key, url.QueryEscape(tc.key), url.PathEscape(tc.key), strings.ToLower(url.QueryEscape(tc.key))} {
						if strings.Contains(text, form) {
							t.Errorf("%s: %s quotes the key as %q:\n%s", d, what, form, text)
						}
					}
				}
			}
			if !strings.Contains(f.logs.String(), "JSON-RPC error -32052") {
				t.Error("the debug log lacks the node's error: the check above proves nothing about it")
			}
		})
	}
}
