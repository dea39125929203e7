package chartcheck

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

// alertFor is the `for:` every alert of the node's PrometheusRule gets
// (monitoring.prometheusRule.for): long enough that an alert is seen
// pending before it fires, short enough that the node test waits seconds,
// not the production minutes. The table adds the rules file's own `for:`
// to the measured time the condition took to hold.
const alertFor = "5s"

// The node test's timings (the release's timings.*, and the holders'
// resync in alertHoldersValues), set at install so that no pod rolls for
// the alerts: a collector polls every few seconds, so that three failed
// polls, a document past its stale-after and one past its Redis TTL come
// within a minute, and the live holder count is re-anchored often.
const (
	alertTimingValues = `timings:
  market: {refresh: 5s, staleAfter: 15s, ttl: 30s}
  supply: {refresh: 5s, staleAfter: 15s}
  holders: {refresh: 10s}
`
	alertHoldersValues = `extraEnv: [{name: HOLDERS_RESYNC, value: 15s}]`
)

// alertWant is an alert a cause must fire: its name and the labels that
// tell it from the same alert about something else.
type alertWant struct {
	Name   string
	Labels map[string]string
	// Cause is this alert's part of the phase's cause (empty: the whole).
	Cause string
}

func (w alertWant) String() string {
	if len(w.Labels) == 0 {
		return w.Name
	}
	var kv []string
	for k, v := range w.Labels {
		kv = append(kv, k+"="+v)
	}
	sort.Strings(kv)
	return w.Name + "{" + strings.Join(kv, ",") + "}"
}

// activeAlert is one alert of Prometheus's /api/v1/alerts.
type activeAlert struct {
	Labels   map[string]string `json:"labels"`
	State    string            `json:"state"`
	ActiveAt time.Time         `json:"activeAt"`
}

func (w alertWant) matches(a activeAlert) bool {
	if a.Labels["alertname"] != w.Name {
		return false
	}
	for k, v := range w.Labels {
		if a.Labels[k] != v {
			return false
		}
	}
	return true
}

// alertTimes is what the test measured of one alert.
type alertTimes struct {
	Want          alertWant
	Cause         string
	Held, Fired   time.Duration // from the cause: condition true (activeAt), seen firing
	Resolved      time.Duration // from the cause's end: no longer active
	RuleFor       string
	FiredOK, Gone bool
}

// nodeAlerts makes each alert of the chart's PrometheusRule fire on the
// node by its own cause, and resolve once the cause is gone, while a
// client loops over the API's paths through the cache tier: the
// aggregators down, the ledger node failing the supply, the holder
// enumeration refused, the two aggregators' prices apart, a lost
// notification of the live holder count, the PubSub subscriptions
// refused, Redis gone, a collector whose new pod exits at start. It
// measures, for each, how long the condition took to hold, to fire (with
// alertFor) and to resolve, and writes the table (NODE_ALERTS_REPORT, for
// make alert-times to put in docs/operations.md).
func nodeAlerts(t *testing.T, n *Node, rep *nodeReport, cl *nodeClient, sim string) {
	ctx := context.Background()
	rules := rules(t)
	ruleFor := map[string]string{}
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			ruleFor[r.Alert] = r.For
		}
	}
	p := &prometheus{base: startPortForwardNS(t, n, monitoringNamespace, "svc/prometheus-operated", 9090)}
	active := func() []activeAlert {
		var out struct {
			Alerts []activeAlert `json:"alerts"`
		}
		if err := p.api("/api/v1/alerts", url.Values{}, &out); err != nil {
			t.Logf("alerts: %v", err)
			return nil
		}
		return out.Alerts
	}
	faults := func(method string, specs ...string) {
		t.Helper()
		req, _ := http.NewRequest(method, sim+"/_simulator/faults?"+url.Values{"set": specs}.Encode(), nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s faults %v: %d", method, specs, resp.StatusCode)
		}
	}

	// A healthy release fires nothing (after what the earlier subtests did
	// has resolved).
	var left []activeAlert
	if !waitFor(3*time.Minute, 2*time.Second, func() bool { left = active(); return len(left) == 0 }) {
		t.Fatalf("alerts active on a healthy release: %v", left)
	}

	// The public's traffic, through the cache tier (the only way in): ten
	// paths, one of them the market's, which answers 503 once the
	// market's document is gone (errors are not cached, so each reaches
	// the edge).
	cache := fmt.Sprintf("http://%s-tokendata-cache.%s.svc:8080", nodeRelease, nodeNamespace)
	var paths []string
	for _, p := range []string{"price", "total-supply", "circulating-supply", "max-supply", "supply", "holders", "status", "health", "token", "total-supply?format=json"} {
		paths = append(paths, cache+"/api/"+p)
	}

	var phases [][]alertTimes // each phase's, filled in as it goes
	// phase applies a cause, waits for each alert of want to fire, ends
	// the cause and waits for each to resolve (late: resolved later, by
	// the returned func).
	phase := func(cause string, want []alertWant, late []string, apply, end func()) func() {
		t.Helper()
		start := time.Now()
		apply()
		times := make([]alertTimes, len(want))
		phases = append(phases, times)
		for i, w := range want {
			times[i] = alertTimes{Want: w, Cause: cause, RuleFor: ruleFor[w.Name]}
			if w.Cause != "" {
				times[i].Cause = w.Cause
			}
		}
		also := map[string]bool{}
		waitFor(3*time.Minute, time.Second, func() bool {
			all := true
			now := active()
			for i, w := range want {
				for _, a := range now {
					if !w.matches(a) {
						continue
					}
					if times[i].Held == 0 {
						times[i].Held = max(a.ActiveAt.Sub(start), time.Millisecond)
					}
					if a.State == "firing" && !times[i].FiredOK {
						times[i].Fired, times[i].FiredOK = time.Since(start), true
					}
				}
				all = all && times[i].FiredOK
			}
			for _, a := range now {
				mine := false
				for _, w := range want {
					mine = mine || w.matches(a)
				}
				if !mine {
					also[alertWant{Name: a.Labels["alertname"], Labels: pick(a.Labels, "domain", "collector", "verdict")}.String()] = true
				}
			}
			return all
		})
		for _, tm := range times {
			if !tm.FiredOK {
				t.Errorf("%s: %s did not fire within 3 min (active: %v)", cause, tm.Want, active())
			}
		}
		if len(also) > 0 {
			var a []string
			for k := range also {
				a = append(a, k)
			}
			sort.Strings(a)
			t.Logf("%s: also active meanwhile: %s", cause, strings.Join(a, ", "))
		}
		ended := time.Now()
		end()
		resolve := func(names []string) {
			waitFor(6*time.Minute, time.Second, func() bool {
				now := active()
				done := true
				for i := range times {
					if !slices.Contains(names, times[i].Want.Name) || times[i].Gone {
						continue
					}
					still := false
					for _, a := range now {
						still = still || times[i].Want.matches(a)
					}
					if !still {
						times[i].Resolved, times[i].Gone = time.Since(ended), true
					}
					done = done && times[i].Gone
				}
				return done
			})
			for _, tm := range times {
				if slices.Contains(names, tm.Want.Name) && !tm.Gone {
					t.Errorf("%s: %s still active %s after the cause ended", cause, tm.Want, time.Since(ended).Round(time.Second))
				}
			}
		}
		var now []string
		for _, w := range want {
			if !slices.Contains(late, w.Name) {
				now = append(now, w.Name)
			}
		}
		resolve(now)
		return func() { resolve(late) }
	}

	cl.loopDuring("alerts", paths, func() {
		// Upstreams failing: both aggregators down, the ledger node
		// answering getTokenSupply 503, the holder enumeration refused.
		down := "both aggregators down (`dexscreener=down`, `geckoterminal=down`)"
		lateErrors := phase("upstreams failing",
			[]alertWant{
				{Name: "TokendataCollectorFailing", Labels: map[string]string{"collector": "market"}, Cause: down},
				{Name: "TokendataDataStale", Labels: map[string]string{"domain": "market"}, Cause: down + ": the market's document past its stale-after (15 s)"},
				{Name: "TokendataDataMissing", Labels: map[string]string{"domain": "market"}, Cause: down + ": the market's document past its Redis TTL (30 s)"},
				{Name: "TokendataEdgeErrors", Cause: down + ": /api/price answered 503 with no market document"},
				{Name: "TokendataCollectorFailing", Labels: map[string]string{"collector": "supply", "domain": "supply"}, Cause: "the ledger node answering getTokenSupply HTTP 503 (`getTokenSupply=http_503`)"},
				{Name: "TokendataLedgerNodeDisagrees", Labels: map[string]string{"verdict": "down"}, Cause: "the ledger node answering getTokenSupply HTTP 503 (`getTokenSupply=http_503`)"},
				{Name: "TokendataHoldersUnavailable", Cause: "the holder enumeration refused at a resync (`getProgramAccounts=rpc_excluded_index`, JSON-RPC -32010)"},
			},
			[]string{"TokendataEdgeErrors"},
			func() {
				faults(http.MethodPost, "dexscreener=down", "geckoterminal=down", "getTokenSupply=http_503", "getProgramAccounts=rpc_excluded_index")
			},
			func() { faults(http.MethodDelete) })

		// The aggregators' prices 40 % apart.
		phase("GeckoTerminal's prices 40 % above DexScreener's (`geckoterminal=skew:40%`)",
			[]alertWant{{Name: "TokendataMarketPriceSourcesDisagree"}}, nil,
			func() { faults(http.MethodPost, "geckoterminal=skew:40%") },
			func() { faults(http.MethodDelete) })()

		// A notification of the live holder count lost: a new holder the
		// count misses until the next resync re-anchors it.
		phase("a new holder whose programNotification is lost (`programNotification=lost*1`): the live count misses it until a resync",
			[]alertWant{{Name: "TokendataHoldersLiveCountDiffered"}}, nil,
			func() {
				faults(http.MethodPost, "programNotification=lost*1")
				postHolderChange(t, sim, "new?amount=1000000")
			},
			func() { faults(http.MethodDelete) })()

		// The PubSub subscriptions refused (each socket dropped as it
		// subscribes), the two collectors that subscribe restarted so that
		// their open sockets go.
		phase("the supply's and the holders' subscriptions refused (`accountSubscribe=reset`, `programSubscribe=reset`: each socket dropped as it subscribes) and the two collectors restarted",
			[]alertWant{{Name: "TokendataLedgerSubscriptionDown"}, {Name: "TokendataHoldersSubscriptionDown"}}, nil,
			func() {
				faults(http.MethodPost, "accountSubscribe=reset", "programSubscribe=reset")
				restart := []string{"-n", nodeNamespace, "rollout", "restart"}
				for _, c := range []string{"supply", "holders"} {
					restart = append(restart, "deployment/"+nodeRelease+"-tokendata-"+c)
				}
				if out, err := n.Kubectl(ctx, restart...); err != nil {
					t.Fatalf("%v\n%s", err, out)
				}
			},
			func() { faults(http.MethodDelete) })()

		// Redis gone (the edge serves its snapshot meanwhile: no 5xx).
		redis := nodeRelease + "-tokendata-redis"
		phase("Redis gone (its StatefulSet scaled to 0)",
			[]alertWant{{Name: "TokendataRedisUnreachable"}}, nil,
			func() {
				if _, err := n.Kubectl(ctx, "-n", nodeNamespace, "scale", "statefulset", redis, "--replicas=0"); err != nil {
					t.Fatal(err)
				}
			},
			func() {
				if _, err := n.Kubectl(ctx, "-n", nodeNamespace, "scale", "statefulset", redis, "--replicas=1"); err != nil {
					t.Fatal(err)
				}
			})()
		if out, err := n.Kubectl(ctx, "-n", nodeNamespace, "rollout", "status", "statefulset/"+redis, "--timeout=120s"); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}

		// A collector's process down: a rollout whose new pod exits at
		// start (a configuration it refuses), its ops port unanswered while
		// the old pod goes on; undone, the pod and its target go.
		market := "deployment/" + nodeRelease + "-tokendata-market"
		phase("a rollout of the market collector whose new pod exits at start (`MARKET_REFRESH=soon`, refused), its ops port unanswered; the rollout undone",
			[]alertWant{{Name: "TokendataTargetDown", Labels: map[string]string{"job": "tokendata-market"}}}, nil,
			func() {
				if out, err := n.Kubectl(ctx, "-n", nodeNamespace, "set", "env", market, "MARKET_REFRESH=soon"); err != nil {
					t.Fatalf("%v\n%s", err, out)
				}
			},
			func() {
				if out, err := n.Kubectl(ctx, "-n", nodeNamespace, "rollout", "undo", market); err != nil {
					t.Fatalf("%v\n%s", err, out)
				}
			})()
		if out, err := n.Kubectl(ctx, "-n", nodeNamespace, "rollout", "status", market, "--timeout=120s"); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}

		// The 5xx ratio's alert resolves as the errors leave its 5-minute
		// window.
		lateErrors()
	})

	// Nothing left active: the release is healthy again for the subtests
	// that follow.
	if !waitFor(3*time.Minute, 2*time.Second, func() bool { left = active(); return len(left) == 0 }) {
		t.Errorf("alerts still active after every cause ended: %v", left)
	}

	var table []alertTimes
	for _, p := range phases {
		table = append(table, p...)
	}
	report := alertTable(table)
	t.Logf("alerts fired by their causes:\n%s", report)
	if path := os.Getenv("NODE_ALERTS_REPORT"); path != "" {
		if err := os.WriteFile(path, []byte(report), 0o644); err != nil {
			t.Error(err)
		}
	}
	fired := 0
	for _, tm := range table {
		if tm.FiredOK && tm.Gone {
			fired++
		}
	}
	rep.add("alerts: %d of %d fired by their causes and resolved (for: %s on the node)", fired, len(table), alertFor)
}

// alertTable writes the measured times as docs/operations.md's table.
func alertTable(times []alertTimes) string {
	var b strings.Builder
	b.WriteString("| alert | cause on the node | condition held after | fired after (`for: " + alertFor + "`) | rule's `for:` | fires in production after about | resolved after the cause ended |\n")
	b.WriteString("|---|---|---|---|---|---|---|\n")
	sec := func(d time.Duration) string { return d.Round(time.Second).String() }
	for _, tm := range times {
		prod := "—"
		if d, err := time.ParseDuration(tm.RuleFor); err == nil && tm.FiredOK {
			prod = sec(tm.Held + d)
		}
		fired, resolved := "did not fire", "—"
		if tm.FiredOK {
			fired = sec(tm.Fired)
		}
		if tm.Gone {
			resolved = sec(tm.Resolved)
		}
		fmt.Fprintf(&b, "| [`%s`](#%s) | %s | %s | %s | %s | %s | %s |\n", tm.Want, strings.ToLower(tm.Want.Name), tm.Cause,
			sec(tm.Held), fired, tm.RuleFor, prod, resolved)
	}
	return b.String()
}

func pick(m map[string]string, keys ...string) map[string]string {
	out := map[string]string{}
	for _, k := range keys {
		if v, ok := m[k]; ok {
			out[k] = v
		}
	}
	return out
}
