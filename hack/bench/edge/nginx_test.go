package main

import (
	"os"
	"strings"
	"testing"
	"time"
)

func TestNginxValue(t *testing.T) {
	for v, ok := range map[string]bool{
		`"Xu_lSngba8sMH8HngRgxGQ"`:        true,
		"public, max-age=15, s-maxage=30": true,
		"application/json; charset=utf-8": true,
		"$request_id":                     false, // a variable, not a constant
		`it's`:                            false,
		`a\b`:                             false,
	} {
		q, err := nginxValue(v)
		if (err == nil) != ok {
			t.Errorf("nginxValue(%q): error %v, want ok=%v", v, err, ok)
		}
		if ok && q != "'"+v+"'" {
			t.Errorf("nginxValue(%q) = %s", v, q)
		}
	}
}

// TestAccessLogRE: the static server takes the tier's log format and
// access_log directive over whole, whether the log is on or off.
func TestAccessLogRE(t *testing.T) {
	const format = "\n    log_format tokendata escape=json '{\"time\":\"$time_iso8601\",'\n        '\"cache\":\"$upstream_cache_status\"}';"
	for _, directive := range []string{"access_log /dev/stdout tokendata;", "access_log off;"} {
		conf := "http {\n    server_tokens off;" + format + "\n    " + directive + "\n\n    proxy_cache_path /c levels=1:2 keys_zone=tokendata:10m;\n}"
		got := accessLogRE.FindString(conf)
		if !strings.HasPrefix(got, "\n    log_format tokendata") || !strings.HasSuffix(got, directive) {
			t.Errorf("with %q: found %q", directive, got)
		}
	}
}

func TestAllocsParsed(t *testing.T) {
	out := `goos: linux
BenchmarkServe/identity/api/total-supply-2         	   20000	      4012 ns/op	    1160 B/op	       6 allocs/op
BenchmarkServe/identity/api/price-2                	   20000	      5120 ns/op	    1160 B/op	       6 allocs/op
BenchmarkServe/identity/api/market-data            	   20000	      5400 ns/op	       0 B/op	       0 allocs/op
PASS`
	got := map[string]string{}
	for _, m := range reAllocs.FindAllStringSubmatch(out, -1) {
		got[m[1]] = m[2]
	}
	want := map[string]string{"/api/total-supply": "6", "/api/price": "6", "/api/market-data": "0"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %q, want %q (all: %v)", k, got[k], v, got)
		}
	}
}

func TestWithoutGOWORK(t *testing.T) {
	got := withoutGOWORK([]string{"PATH=/bin", "GOWORK=off", "HOME=/root"})
	if strings.Join(got, " ") != "PATH=/bin HOME=/root" {
		t.Errorf("withoutGOWORK: %v", got)
	}
}

func TestThousands(t *testing.T) {
	for v, want := range map[float64]string{0: "0", 999.4: "999", 1000: "1,000", 33085.6: "33,086", 1234567: "1,234,567"} {
		if got := thousands(v); got != want {
			t.Errorf("thousands(%v) = %q, want %q", v, got, want)
		}
	}
}

// TestCPUTicks: the CPU time of this process grows as it works.
func TestCPUTicks(t *testing.T) {
	before := cpuTicks(os.Getpid())
	deadline := time.Now().Add(300 * time.Millisecond)
	x := 0
	for time.Now().Before(deadline) {
		x++
	}
	if after := cpuTicks(os.Getpid()); after <= before {
		t.Errorf("cpuTicks %d then %d after 300 ms of work (%d loops)", before, after, x)
	}
}

func TestWorkersRE(t *testing.T) {
	conf := "daemon off;\nworker_processes 3;\npid /tmp/x/nginx.pid;\n"
	if m := workersRE.FindStringSubmatch(conf); m == nil || m[1] != "3" {
		t.Fatalf("workersRE on %q: %q", conf, m)
	}
	if m := workersRE.FindStringSubmatch("events {}\n"); m != nil {
		t.Fatalf("workersRE found %q where there is none", m)
	}
}

// TestParseMax: the boundary row reads wrk's maximum latency in ms.
func TestParseMax(t *testing.T) {
	for out, want := range map[string]float64{
		"  Thread Stats   Avg      Stdev     Max   +/- Stdev\n    Latency     1.52ms    2.10ms  65.80ms   95.12%\n": 65.8,
		"    Latency   812.00us  301.00us   1.20s    88.00%\n":                                                      1200,
		"    Latency   812.00us  301.00us  18.00us   88.00%\n":                                                      0.018,
	} {
		got, err := parseMax([]byte(out))
		if err != nil || got != want {
			t.Errorf("parseMax(%q) = %v, %v; want %v", out, got, err, want)
		}
	}
	if _, err := parseMax([]byte("Requests/sec: 1\n")); err == nil {
		t.Error("no Latency line: want an error")
	}
}

func TestSignedRow(t *testing.T) {
	e := result{rps: 10000, p99: 1, cpu: 100}
	cases := []struct {
		s    result
		want bool
	}{
		{result{rps: 9600, p99: 1.3, cpu: 104}, true}, // within 5 %; p99 not judged
		{result{rps: 9400, p99: 1, cpu: 100}, false},  // 6 % fewer requests
		{result{rps: 10000, p99: 1, cpu: 106}, false}, // 6 % more CPU per request
		{result{rps: 10500, p99: 0.9, cpu: 95}, true}, // faster
	}
	for _, c := range cases {
		row, md, ok := signedRow("/api/price", e, c.s)
		if ok != c.want {
			t.Errorf("%+v: within 5 %% = %v, want %v", c.s, ok, c.want)
		}
		if !strings.HasPrefix(row, "/api/price") || !strings.HasPrefix(md, "| /api/price | 10,000 / 1.0 ms / 100 µs |") {
			t.Errorf("row %q, md %q", row, md)
		}
	}
}
