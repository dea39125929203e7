package ops

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestHandler(t *testing.T) {
	var ready Readiness
	srv := httptest.NewServer(Handler(NewRegistry("test"), ready.Ready, false))
	defer srv.Close()
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = resp.Body.Close() }()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, _ := get("/healthz"); code != 200 {
		t.Errorf("healthz = %d", code)
	}
	if code, _ := get("/readyz"); code != 503 {
		t.Errorf("readyz before ready = %d", code)
	}
	ready.Set(true)
	if code, _ := get("/readyz"); code != 200 {
		t.Errorf("readyz when ready = %d", code)
	}
	code, body := get("/metrics")
	for _, want := range []string{`tokendata_build_info{`, `service="test"`, "go_goroutines", "process_"} {
		if code != 200 || !strings.Contains(body, want) {
			t.Errorf("metrics lacks %s", want)
		}
	}
	for _, p := range []string{"/debug/pprof/", "/debug/pprof/profile?seconds=1", "/debug/pprof/trace?seconds=1", "/debug/pprof/cmdline"} {
		if code, _ := get(p); code != 404 {
			t.Errorf("%s without OPS_PPROF = %d, want 404", p, code)
		}
	}
	if code, _ := get("/api/health"); code != 404 {
		t.Errorf("public path on the ops mux = %d", code)
	}
}

func TestHandlerPprofSwitchedOn(t *testing.T) {
	srv := httptest.NewServer(Handler(NewRegistry("test"), nil, true))
	defer srv.Close()
	for _, p := range []string{"/debug/pprof/", "/debug/pprof/cmdline"} {
		resp, err := http.Get(srv.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("%s with OPS_PPROF = %d", p, resp.StatusCode)
		}
	}
}
