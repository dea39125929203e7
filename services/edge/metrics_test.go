package edge

import (
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/tokendata/tokendata/services/edge/view"
)

// TestMethodNotAllowedKeepsItsRoute: a 405 is counted under the route it
// hit; a 405-like request on an unknown path stays "unmatched".
func TestMethodNotAllowedKeepsItsRoute(t *testing.T) {
	h := newHarness(t, nil)
	h.do(http.MethodPost, view.PathPrice)
	h.do(http.MethodPost, "/api/nope")
	want := strings.NewReader(`
# HELP tokendata_edge_http_requests_total ` + helpOf(t, h, "tokendata_edge_http_requests_total") + `
# TYPE tokendata_edge_http_requests_total counter
tokendata_edge_http_requests_total{code="404",method="OTHER",route="unmatched"} 1
tokendata_edge_http_requests_total{code="405",method="OTHER",route="/api/price"} 1
`)
	if err := testutil.GatherAndCompare(h.reg, want, "tokendata_edge_http_requests_total"); err != nil {
		t.Error(err)
	}
}

func helpOf(t *testing.T, h *harness, name string) string {
	t.Helper()
	mfs, err := h.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetHelp()
		}
	}
	t.Fatalf("no metric %s", name)
	return ""
}
