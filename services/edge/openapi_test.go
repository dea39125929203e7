//go:build !allocs

// The allocation run of hack/test.sh (-tags allocs, without -race) leaves
// this file out: the validator it links is most of the module's cold
// compile (about 300 s of CPU a build), and no allocation test needs it.

package edge

import (
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"

	"github.com/tokendata/tokendata/services/edge/view"
)

// TestOpenAPIResponses checks every real response of every endpoint, in
// every scenario, against the OpenAPI 3.1 document the edge serves, with
// pb33f/libopenapi-validator: status code declared, declared headers
// present and valid, JSON body valid against the schema.
func TestOpenAPIResponses(t *testing.T) {
	h := newHarness(t, nil)
	rec := h.do(http.MethodGet, view.PathOpenAPI)
	if rec.Code != http.StatusOK {
		t.Fatalf("openapi: %d", rec.Code)
	}
	doc, err := libopenapi.NewDocument(rec.Body.Bytes())
	if err != nil {
		t.Fatalf("parse the served document: %v", err)
	}
	if v := doc.GetVersion(); !strings.HasPrefix(v, "3.1") {
		t.Fatalf("OpenAPI version %q, want 3.1", v)
	}
	v, errs := validator.NewValidator(doc)
	if len(errs) > 0 {
		t.Fatalf("validator: %v", errs)
	}
	if ok, verrs := v.ValidateDocument(); !ok {
		for _, e := range verrs {
			t.Errorf("document: %s: %s %v", e.Message, e.Reason, e.SchemaValidationErrors)
		}
	}
	model, err := doc.BuildV3Model()
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	for p := range model.Model.Paths.PathItems.KeysFromOldest() {
		documented[p] = true
	}
	for _, p := range allPaths {
		if !documented[p] {
			t.Errorf("%s is not in the OpenAPI document", p)
		}
	}
	if !documented["/api/history/{measure}/{window}"] || !documented[view.PathEvents] {
		t.Errorf("the history paths or the events are not in the OpenAPI document")
	}
	if len(documented) != len(allPaths)+2 {
		t.Errorf("the document has %d paths, the edge serves %d, the history and the events", len(documented), len(allPaths))
	}

	// The validator must be able to fail: a body with an amount as a string
	// and a missing header are rejected.
	{
		h := newHarness(t, nil)
		h.writeAll()
		h.refresh()
		rec := h.do(http.MethodGet, view.PathSupply)
		resp := rec.Result()
		resp.Body = io.NopCloser(strings.NewReader(strings.Replace(rec.Body.String(),
			`"total_supply":999999999.123456`, `"total_supply":"999999999.123456"`, 1)))
		resp.Header.Del("X-Data-Stale")
		req, _ := http.NewRequest(http.MethodGet, view.PathSupply, nil)
		if ok, verrs := v.ValidateHttpResponse(req, resp); ok || len(verrs) < 2 {
			t.Fatalf("a tampered response validated (%d errors)", len(verrs))
		}
		// a history value as a float is refused too
		h.srv.bodies.Uncompressed = true
		fillHistory(h)
		h.refresh()
		p := view.HistoryPath("holders", "24h")
		rec = h.do(http.MethodGet, p)
		resp = rec.Result()
		tampered := regexp.MustCompile(`"value":"([0-9]+)"`).ReplaceAllString(rec.Body.String(), `"value":$1`)
		if tampered == rec.Body.String() {
			t.Fatal("nothing to tamper with")
		}
		resp.Body = io.NopCloser(strings.NewReader(tampered))
		req, _ = http.NewRequest(http.MethodGet, p, nil)
		if ok, _ := v.ValidateHttpResponse(req, resp); ok {
			t.Fatal("a history value as a number validated")
		}
	}

	fills := map[string]func(*harness){"history": fillHistory}
	for name, fill := range scenarios {
		fills[name] = fill
	}
	for name, fill := range fills {
		t.Run(name, func(t *testing.T) {
			h := newScenarioHarness(t, name)
			h.srv.bodies.Uncompressed = name == "history" // its 35 large bodies: identity is what is validated
			fill(h)
			h.refresh()
			for _, p := range append(allPaths, historyPaths()...) {
				req, _ := http.NewRequest(http.MethodGet, p, nil)
				rec := h.do(http.MethodGet, p)
				resp := rec.Result()
				if ok, verrs := v.ValidateHttpResponse(req, resp); !ok {
					for _, e := range verrs {
						t.Errorf("%s %d: %s: %s %v", p, rec.Code, e.Message, e.Reason, e.SchemaValidationErrors)
					}
				}
				_ = resp.Body.Close()
			}
		})
	}
}
