package standalone_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tokendata/tokendata/shared/config"
	"github.com/tokendata/tokendata/shared/simulator"
	"github.com/tokendata/tokendata/shared/simulator/solanasim"
)

// The rows of the fault matrix for the ledger subscriptions:
// standalone, in process, over three simulated ledger nodes whose slot
// moves on, with SUPPLY_REFRESH at a minute, so that only the supply
// collector's PubSub subscriptions can explain a burn published within
// seconds. A burn goes through the cross-check all the same (agreed, 3 of
// 3): the subscriptions only make the collector poll at once.

// subsRefresh is the supply poll of these rows: far longer than any bound.
const subsRefresh = time.Minute

// pushBound is how soon after a burn these rows require it published:
// generous for -race on a loaded machine, still far below subsRefresh
// (the collector publishes in tens of milliseconds; under -race the edge's
// render of the new snapshot takes most of the second or two measured).
const pushBound = 10 * time.Second

// subscriptions is /api/status's checks.ledger_subscriptions.
type subscriptions struct {
	Status    string `json:"status"`
	Connected int    `json:"connected"`
	PerNode   []struct {
		Node               int     `json:"node"`
		State              string  `json:"state"`
		LastNotificationAt *string `json:"last_notification_at"`
		Reconnects         int     `json:"reconnects"`
		Error              *string `json:"error"`
	} `json:"per_node"`
}

// node is node n's entry.
func (s subscriptions) node(n int) (state string, reconnects int, notified time.Time, errText string) {
	for _, p := range s.PerNode {
		if p.Node == n {
			if p.LastNotificationAt != nil {
				notified, _ = time.Parse(time.RFC3339Nano, *p.LastNotificationAt)
			}
			if p.Error != nil {
				errText = *p.Error
			}
			return p.State, p.Reconnects, notified, errText
		}
	}
	return "", 0, time.Time{}, ""
}

func (n *nodeRows) subscriptions(t *testing.T) (subscriptions, string) {
	t.Helper()
	resp, body := get(t, n.api+"/api/status")
	var s struct {
		Status string `json:"status"`
		Checks struct {
			LedgerSubscriptions *subscriptions `json:"ledger_subscriptions"`
		} `json:"checks"`
	}
	if err := json.Unmarshal(body, &s); resp.StatusCode != http.StatusOK || err != nil || s.Checks.LedgerSubscriptions == nil {
		t.Fatalf("/api/status: %d %v: %s", resp.StatusCode, err, body)
	}
	return *s.Checks.LedgerSubscriptions, s.Status
}

// waitSubs waits up to d for ok on /api/status's subscriptions.
func (n *nodeRows) waitSubs(t *testing.T, what string, d time.Duration, ok func(subscriptions) bool) time.Duration {
	t.Helper()
	since := openWindow(t) // d stretches by the time kept from the cores
	defer since.close()
	for {
		s, _ := n.subscriptions(t)
		if ok(s) {
			return time.Since(since.from)
		}
		if past, off := since.past(t, d); past {
			t.Fatalf("%s + %s (kept from the cores) on, %s: /api/status's ledger subscriptions %+v", d, off, what, s)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// burn burns 1.5 tokens on the ledger and returns how long the edge took
// to answer the new supply, failing past pushBound or on any other figure.
func (n *nodeRows) burn(t *testing.T) time.Duration {
	t.Helper()
	before := n.supply(t)
	after, err := n.sim.RPC.AdjustSupply(config.DemoMint, -1_500_000)
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprint(after)
	burnt := openWindow(t) // pushBound stretches by the time kept from the cores
	defer burnt.close()
	for {
		s := n.supply(t)
		if s.total == want {
			if s.check.State != "agreed" || s.check.Agreed != 3 {
				t.Fatalf("the burn was published without the cross-check of all three nodes: %+v", s.check)
			}
			return time.Since(burnt.from)
		}
		if s.total != before.total {
			t.Fatalf("published %s, neither the supply before the burn (%s) nor after it (%s)", s.total, before.total, want)
		}
		if past, off := burnt.past(t, pushBound); past {
			t.Fatalf("%s after the burn (%s kept from the cores) the supply is still %s (SUPPLY_REFRESH %s: the subscriptions pushed nothing)",
				time.Since(burnt.from), off, s.total, subsRefresh)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitOK waits up to 15 s for /api/status to be ok (every domain
// collected once the services have started).
func (n *nodeRows) waitOK(t *testing.T) {
	t.Helper()
	since := openWindow(t) // 15 s, stretched by the time kept from the cores
	defer since.close()
	for {
		s := n.status(t)
		if s.Status == "ok" {
			return
		}
		if past, off := since.past(t, 15*time.Second); past {
			t.Fatalf("/api/status still %s 15 s + %s (kept from the cores) on: %q", s.Status, off, s.Problems)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func allConnected(s subscriptions) bool { return s.Status == "ok" && s.Connected == 3 }

// TestBurnPushedBySubscriptions is a row of the fault matrix: with the
// supply polled once a minute, each of ten burns reaches the API within
// seconds, pushed by the ledger subscriptions through the cross-check.
func TestBurnPushedBySubscriptions(t *testing.T) {
	t.Parallel()
	n := startNodesWith(t, 60, subsRefresh, nil)
	n.waitSubs(t, "all three subscribed", 10*time.Second, allConnected)
	n.waitOK(t)
	var took []time.Duration
	for range 10 {
		took = append(took, n.burn(t))
	}
	slices.Sort(took)
	s, status := n.subscriptions(t)
	if status != "ok" || !allConnected(s) {
		t.Errorf("after the burns: %s, %+v", status, s)
	}
	t.Logf("burn to published, 10 burns: %v", took)
	recordRow(t, matrixRow{Order: 16, Fault: "ten burns on the ledger with `SUPPLY_REFRESH` at 60 s (pushed by the ledger subscriptions of three nodes)",
		During:   fmt.Sprintf("each burn published %s after it at the median, %s at most, through the cross-check (`agreed`, 3 of 3), never another figure", roundDuration(took[len(took)/2]), roundDuration(took[len(took)-1])),
		Status:   "ok; `ledger_subscriptions` ok, 3 connected",
		Recovery: took[len(took)-1], Bound: pushBound})
}

// TestSubscriptionSurvivesSocketFaults is three rows of the fault
// matrix: node 1's socket dropped, stalled, garbled in turn. After each,
// node 1 subscribes again (its reconnects counted in /api/status) and a
// new burn is again published within seconds, node 1 notifying it. The
// socket bounds are short here (SUPPLY_WS_SILENCE 2 s) so that a stall
// is seen within the row: the defaults are 10 s pings and 30 s of silence.
func TestSubscriptionSurvivesSocketFaults(t *testing.T) {
	t.Setenv("SUPPLY_WS_PING", "250ms")
	t.Setenv("SUPPLY_WS_SILENCE", "2s")
	t.Setenv("SUPPLY_WS_BACKOFF", "250ms")
	t.Setenv("SUPPLY_WS_BACKOFF_MAX", "4s")
	n := startNodesWith(t, 61, subsRefresh, nil)
	n.waitSubs(t, "all three subscribed", 10*time.Second, allConnected)
	n.waitOK(t)
	for i, tc := range []struct {
		fault solanasim.SocketFault
		name  string
	}{
		{solanasim.SocketDrop, "ledger node 1's PubSub socket dropped, and every new one right after its upgrade (`ws-drop`), for 3 s"},
		{solanasim.SocketStall, "ledger node 1's PubSub socket stalled: open, silent, no pong (`ws-stall`; `SUPPLY_WS_SILENCE` 2 s), for 3 s"},
		{solanasim.SocketGarble, "ledger node 1's PubSub socket sending garbled frames (`ws-garble`), for 3 s"},
	} {
		t.Run(string(tc.fault), func(t *testing.T) {
			s, _ := n.subscriptions(t)
			_, before, _, _ := s.node(1)
			n.sim.Nodes[0].SetSocketFault(tc.fault)
			n.waitSubs(t, "node 1 reconnecting", 10*time.Second, func(s subscriptions) bool {
				state, r, _, _ := s.node(1)
				return r > before || state != "connected"
			})
			// The others still push while node 1 is out.
			during := n.burn(t)
			seen, status := n.subscriptions(t)
			if status != "ok" {
				t.Errorf("/api/status %s while node 1's subscription is down: a subscription must not degrade it (%q)", status, n.status(t).Problems)
			}
			time.Sleep(3 * time.Second)
			n.sim.Nodes[0].SetSocketFault(solanasim.SocketOK)
			back := n.waitSubs(t, "node 1 subscribed again", 15*time.Second, allConnected)
			burnt := time.Now()
			took := n.burn(t)
			n.waitSubs(t, "node 1's notification of the burn", 10*time.Second, func(s subscriptions) bool {
				_, _, at, _ := s.node(1)
				return !at.Before(burnt.Add(-time.Second)) // the edge's clock, ms precision
			})
			s, _ = n.subscriptions(t)
			state, after, _, _ := s.node(1)
			if after <= before || state != "connected" {
				t.Fatalf("node 1 after %s: %s, %d reconnects (was %d)", tc.fault, state, after, before)
			}
			_, _, _, why := seen.node(1)
			t.Logf("%s: node 1 back %s after the fault cleared; a burn during it published in %s, after it in %s; reconnects %d → %d; error during it %q",
				tc.fault, back, during, took, before, after, why)
			recordRow(t, matrixRow{Order: 17 + i, Fault: tc.name,
				During: fmt.Sprintf("a burn during it published %s after it (nodes 2 and 3 push); node 1 `%s` then, reconnects %d → %d; `error` %q",
					roundDuration(during), stateOf(seen, 1), before, after, why),
				Status:   fmt.Sprintf("%s (a subscription down is not degraded); `ledger_subscriptions` %s, then ok", status, seen.Status),
				Recovery: back + took, Bound: 15*time.Second + pushBound})
		})
	}
}

func stateOf(s subscriptions, node int) string {
	state, _, _, _ := s.node(node)
	return state
}

// TestNodeWithoutPubSub is a row of the fault matrix: node 3 refuses the
// WebSocket upgrade (HTTP 405, a provider without PubSub). Its
// subscription is unsupported, it is polled as before, and a burn is
// still pushed by nodes 1 and 2 and confirmed by all three.
func TestNodeWithoutPubSub(t *testing.T) {
	t.Parallel()
	n := startNodesWith(t, 62, subsRefresh, func(sim *simulator.Sim) { sim.Nodes[2].SetSocketFault(solanasim.SocketOff) })
	n.waitSubs(t, "nodes 1 and 2 subscribed, node 3 unsupported", 10*time.Second, func(s subscriptions) bool {
		state, _, _, _ := s.node(3)
		return s.Connected == 2 && state == "unsupported"
	})
	n.waitOK(t)
	s, status := n.subscriptions(t)
	_, _, _, why := s.node(3)
	if s.Status != "degraded" || status != "ok" || !strings.Contains(why, "HTTP 405") {
		t.Fatalf("/api/status with node 3 unsupported: %s; subscriptions %+v", status, s)
	}
	var took []time.Duration
	for range 3 {
		took = append(took, n.burn(t))
	}
	slices.Sort(took)
	recordRow(t, matrixRow{Order: 20, Fault: "ledger node 3 without PubSub (the upgrade refused with HTTP 405: `ws-off`)",
		During: fmt.Sprintf("node 3 `unsupported` (%q), polled as before; three burns published %s at most after each, pushed by nodes 1 and 2, confirmed by all three",
			why, roundDuration(took[len(took)-1])),
		Status:   "ok; `ledger_subscriptions` degraded, 2 connected",
		Recovery: took[len(took)-1], Bound: pushBound})
}
