package view

import (
	"fmt"
	"sort"
	"time"

	"github.com/tokendata/tokendata/services/edge/answer"
	"github.com/tokendata/tokendata/services/edge/snapshot"
	"github.com/tokendata/tokendata/services/edge/view/crosscheck"
	"github.com/tokendata/tokendata/shared/amount"
	"github.com/tokendata/tokendata/shared/contract"
)

// Overall and per-check status values of /api/status.
const (
	StatusOK       = "ok"
	StatusDegraded = "degraded"
	StatusDown     = "down"
	StatusStale    = "stale"
	statusMissing  = "missing"
	statusFailing  = "failing"
	statusUnknown  = "unknown"
)

type StatusBody struct {
	Status     string `json:"status"`
	APIVersion string `json:"api_version"`
	// Version is the deprecated name of APIVersion (removed in 3.0).
	Version       string       `json:"version"`
	PortalVersion int          `json:"portal_version"`
	Mode          string       `json:"mode"`
	Mint          string       `json:"mint"`
	CheckedAt     string       `json:"checked_at"`
	Problems      []string     `json:"problems"`
	Checks        statusChecks `json:"checks"`
}

type statusChecks struct {
	// Store is the store, whatever its backend (redis or memory).
	Store      storeCheck                `json:"store"`
	Domains    map[string]domainCheck    `json:"domains"`
	Collectors map[string]collectorCheck `json:"collectors"`
	LedgerRPC  upstreamCheck             `json:"ledger_rpc"`
	// LedgerNodes is the supply collector's last cross-check of the
	// ledger nodes (null when its status record holds none).
	LedgerNodes *crosscheck.LedgerNodesCheck `json:"ledger_nodes"`
	// LedgerSubscriptions are the supply collector's PubSub
	// subscriptions to the mint, per node (null when its status record
	// holds none). Informational: a subscription down never makes the
	// service degraded, since polling goes on.
	LedgerSubscriptions *subscriptionsCheck `json:"ledger_subscriptions"`
	// HoldersSubscription is the holders collector's programSubscribe
	// subscription of a live count (HOLDERS_LIVE), as node 1; null
	// without one. Informational too: without it the count is
	// enumerated, and /api/holders says so.
	HoldersSubscription *subscriptionsCheck `json:"holders_subscription"`
	// Signing says whether answers are signed, and with which key.
	Signing          signingCheck          `json:"signing"`
	MarketAggregator marketAggregatorCheck `json:"market_aggregator"`
	// Redis is the deprecated name of Store (removed in 3.0): the same
	// object, also when the backend is memory.
	Redis storeCheck `json:"redis"`
}

type storeCheck struct {
	Status    string  `json:"status"`
	Backend   string  `json:"backend"`
	CheckedAt *string `json:"checked_at"`
	LastOKAt  *string `json:"last_ok_at"`
	Error     *string `json:"error"`
}

type domainCheck struct {
	Status            string  `json:"status"`
	UpdatedAt         *string `json:"updated_at"`
	AgeSeconds        *int64  `json:"age_seconds"`
	StaleAfterSeconds int64   `json:"stale_after_seconds"`
	Stale             bool    `json:"stale"`
	ExpiresAt         *string `json:"expires_at"`
	Rejected          *string `json:"rejected"`
	// Warnings are the document's warnings that make the service
	// degraded (total_above_max); absent when there are none.
	Warnings []contract.Warning `json:"warnings,omitempty"`
}

type collectorCheck struct {
	Status    string              `json:"status"`
	Simulated bool                `json:"simulated"`
	Runs      map[string]runCheck `json:"runs"`
}

type runCheck struct {
	OK                  bool    `json:"ok"`
	StartedAt           string  `json:"started_at"`
	FinishedAt          string  `json:"finished_at"`
	Upstream            string  `json:"upstream"`
	ErrorKind           *string `json:"error_kind"`
	Error               *string `json:"error"`
	Remedy              *string `json:"remedy"`
	ConsecutiveFailures int     `json:"consecutive_failures"`
	LastSuccessAt       *string `json:"last_success_at"`
	Note                *string `json:"note"`
}

type upstreamCheck struct {
	Status        string  `json:"status"`
	Upstream      *string `json:"upstream"`
	Simulated     bool    `json:"simulated"`
	LastRunAt     *string `json:"last_run_at"`
	LastSuccessAt *string `json:"last_success_at"`
	ErrorKind     *string `json:"error_kind"`
	Error         *string `json:"error"`
	MarketStatus  *string `json:"market_status,omitempty"`
}

// marketAggregatorCheck is checks.market_aggregator: the market
// collector's latest run (which succeeds while either aggregator
// answers), the market status, and each aggregator as the price
// cross-check of the last poll that wrote the market document saw it, so
// that one aggregator down is shown though the run is ok.
type marketAggregatorCheck struct {
	upstreamCheck
	// Aggregators are the cross-check's sources, DexScreener first; null
	// without a market document or when it carries no cross-check.
	Aggregators []aggregatorCheck `json:"aggregators"`
}

type aggregatorCheck struct {
	Name      string  `json:"name"`
	State     string  `json:"state"`
	ErrorKind *string `json:"error_kind"`
}

// marketAggregator is checks.market_aggregator from the market collector's
// record and the market document m (nil when there is none).
func (in *RenderInputs) marketAggregator(rec contract.Status, m *contract.Market) marketAggregatorCheck {
	mc := marketAggregatorCheck{upstreamCheck: in.upstream(rec, contract.DomainMarket)}
	if m == nil {
		return mc
	}
	mc.MarketStatus = ptr(m.Status)
	if m.CrossCheck != nil {
		mc.Aggregators = make([]aggregatorCheck, 0, len(m.CrossCheck.Sources))
		for _, s := range m.CrossCheck.Sources {
			mc.Aggregators = append(mc.Aggregators, aggregatorCheck{Name: s.Name, State: s.State, ErrorKind: nonEmpty(s.ErrorKind)})
		}
	}
	return mc
}

func timeStr(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	return ptr(answer.FormatTime(t))
}

// statusReport is /api/status's body at now: from the state served, the
// last store check h, the collectors' status records of the last read,
// and the store's backend (redis or memory). Each check is a step of its
// own; each adds its problems through problem.
func (in *RenderInputs) StatusReport(st *snapshot.State, h *snapshot.StoreHealth, statuses map[string]contract.Status, backend string, now time.Time) StatusBody {
	b := StatusBody{APIVersion: APIVersion, Version: APIVersion, PortalVersion: PortalVersion, Mode: "live", Mint: in.Token.Mint,
		CheckedAt: answer.FormatTime(now), Problems: []string{}}
	if in.Demo {
		b.Mode = "demo"
	}
	problem := func(p string) { b.Problems = append(b.Problems, p) }

	rc := storeStatus(h, backend, problem)
	b.Checks.Store, b.Checks.Redis = rc, rc
	b.Checks.Domains = in.domainChecks(st, now, problem)
	b.Checks.Collectors = in.collectorChecks(statuses, problem)
	in.upstreamChecks(&b.Checks, st, statuses, problem)

	sort.Strings(b.Problems)
	switch {
	case len(st.Docs) == 0:
		b.Status = StatusDown
	case len(b.Problems) > 0:
		b.Status = StatusDegraded
	default:
		b.Status = StatusOK
	}
	return b
}

// storeStatus is the store's check, from the last store check h.
func storeStatus(h *snapshot.StoreHealth, backend string, problem func(string)) storeCheck {
	rc := storeCheck{Status: StatusOK, Backend: backend, CheckedAt: timeStr(h.CheckedAt), LastOKAt: timeStr(h.LastOK)}
	if !h.OK {
		rc.Status, rc.Error = StatusDown, ptr(h.Err)
		if h.CheckedAt.IsZero() {
			rc.Status = statusUnknown
		}
		problem("store: " + h.Err + "; serving the last snapshot")
	}
	return rc
}

// domainChecks are the domains' checks at now: each document's age
// against its stale-after, its refusal, and the supply's degrading
// warnings.
func (in *RenderInputs) domainChecks(st *snapshot.State, now time.Time, problem func(string)) map[string]domainCheck {
	out := map[string]domainCheck{}
	for _, d := range contract.Domains {
		t := in.Timings[d]
		dc := domainCheck{Status: statusMissing, StaleAfterSeconds: int64(t.StaleAfter / time.Second)}
		if doc := st.Docs[d]; doc != nil {
			age := now.Sub(doc.Env.UpdatedAt)
			dc.UpdatedAt, dc.AgeSeconds = ptr(answer.FormatTime(doc.Env.UpdatedAt)), ptr(int64(age/time.Second))
			dc.ExpiresAt = timeStr(doc.Expires)
			dc.Status = StatusOK
			if age > t.StaleAfter {
				dc.Status, dc.Stale = StatusStale, true
				problem(string(d) + ": stale (older than its stale-after)")
			}
		} else {
			problem(string(d) + ": no data")
		}
		if why, ok := st.Rejected[d]; ok {
			dc.Rejected = ptr(in.Redact(why))
			problem(string(d) + ": the stored document was refused")
		}
		if d == contract.DomainSupply {
			dc.Warnings = in.degradingSupplyWarnings(st.Supply())
			for _, w := range dc.Warnings {
				problem(string(d) + ": " + w.Code + ": " + w.Message)
			}
		}
		out[string(d)] = dc
	}
	return out
}

// collectorChecks are the collectors' checks, from their status records.
func (in *RenderInputs) collectorChecks(statuses map[string]contract.Status, problem func(string)) map[string]collectorCheck {
	out := map[string]collectorCheck{}
	for _, name := range contract.Collectors {
		rec, ok := statuses[name]
		cc := collectorCheck{Status: statusUnknown, Runs: map[string]runCheck{}}
		if ok {
			cc.Status, cc.Simulated = StatusOK, rec.Simulated
			for d, run := range rec.Runs {
				cc.Runs[string(d)] = in.runCheck(run)
				if !run.OK {
					cc.Status = statusFailing
				}
			}
			if cc.Status == statusFailing {
				problem("collector " + name + ": last run failed")
			}
		} else {
			problem("collector " + name + ": no status record")
		}
		out[name] = cc
	}
	return out
}

// upstreamChecks fill c's checks of the upstreams, as the collectors last
// saw them, the signing key's, and the problems of the documents'
// cross-checks.
func (in *RenderInputs) upstreamChecks(c *statusChecks, st *snapshot.State, statuses map[string]contract.Status, problem func(string)) {
	c.LedgerRPC = in.upstream(statuses[contract.CollectorSupply], contract.DomainSupply, contract.DomainMetadata)
	ledger, ledgerProblems := crosscheck.LedgerNodes(statuses[contract.CollectorSupply], in.Redact)
	c.LedgerNodes = ledger
	c.LedgerSubscriptions = in.subscriptionsCheck(statuses[contract.CollectorSupply])
	c.HoldersSubscription = in.subscriptionsCheck(statuses[contract.CollectorHolders])
	c.Signing = in.signingCheck()
	for _, p := range ledgerProblems {
		problem(p)
	}
	// One aggregator down (single_source) is shown in the check's
	// aggregators and adds no problem: the primary's figure is published
	// as always, and GeckoTerminal's public API answers 429 often
	// (docs/decisions.md, Market cross-check); disagree, held and
	// unconfirmed do.
	c.MarketAggregator = in.marketAggregator(statuses[contract.CollectorMarket], st.Market())
	if p := crosscheck.PriceCheckProblem(st.Market()); p != "" {
		problem(p)
	}
	if p := crosscheck.HoldersCheckProblem(st.Holders()); p != "" {
		problem(p)
	}
	if p := holdersLiveProblem(st.Holders()); p != "" {
		problem(p)
	}
}

// degradingSupplyWarnings are the warnings of the supply document that
// make the service degraded: an on-chain total above the configured
// maximum supply means one of the two published figures is wrong. The
// edge also compares the figures it publishes itself (its token file's
// maximum, the collected total), so that a collector reading another
// version of the token file cannot hide it.
func (in *RenderInputs) degradingSupplyWarnings(sp *contract.Supply) []contract.Warning {
	if sp == nil {
		return nil
	}
	for _, w := range sp.Warnings {
		if w.Code == contract.WarnTotalAboveMax {
			return []contract.Warning{{Code: w.Code, Message: in.Redact(w.Message)}}
		}
	}
	maxRaw, err := in.Token.MaxSupplyRaw(sp.Decimals)
	if err != nil || amount.Compare(sp.TotalRaw, maxRaw) <= 0 {
		return nil
	}
	total, err := amount.Format(sp.TotalRaw, sp.Decimals)
	if err != nil {
		return nil
	}
	return []contract.Warning{{Code: contract.WarnTotalAboveMax, Message: fmt.Sprintf(
		"The on-chain total supply %s is above the disclosed maximum supply %s.", total, in.Token.MaxSupply)}}
}

func (in *RenderInputs) runCheck(run contract.Run) runCheck {
	rc := runCheck{OK: run.OK, StartedAt: answer.FormatTime(run.StartedAt), FinishedAt: answer.FormatTime(run.FinishedAt),
		Upstream: run.Upstream, ConsecutiveFailures: run.ConsecutiveFailures}
	if run.ErrorKind != "" {
		rc.ErrorKind = ptr(run.ErrorKind)
	}
	if run.Error != "" {
		rc.Error = ptr(in.Redact(run.Error))
	}
	if run.Remedy != "" {
		rc.Remedy = ptr(in.Redact(run.Remedy))
	}
	if run.Note != "" {
		rc.Note = ptr(in.Redact(run.Note))
	}
	if run.LastSuccessAt != nil {
		rc.LastSuccessAt = timeStr(*run.LastSuccessAt)
	}
	return rc
}

// upstream summarises the latest run among the given domains of one
// collector's record.
func (in *RenderInputs) upstream(rec contract.Status, ds ...contract.Domain) upstreamCheck {
	uc := upstreamCheck{Status: statusUnknown, Simulated: rec.Simulated}
	var latest *contract.Run
	for _, d := range ds {
		if run, ok := rec.Runs[d]; ok && (latest == nil || run.FinishedAt.After(latest.FinishedAt)) {
			latest = &run
		}
	}
	if latest == nil {
		return uc
	}
	uc.Status = StatusOK
	if !latest.OK {
		uc.Status = statusFailing
		uc.ErrorKind = ptr(latest.ErrorKind)
		uc.Error = ptr(in.Redact(latest.Error))
	}
	uc.Upstream = nonEmpty(latest.Upstream)
	uc.LastRunAt = timeStr(latest.FinishedAt)
	if latest.LastSuccessAt != nil {
		uc.LastSuccessAt = timeStr(*latest.LastSuccessAt)
	}
	return uc
}

// SigningInfo is the signing key as /api/status shows it: its id (the
// RFC 7638 thumbprint, empty when answers are not signed), whether this
// process generated it (demo mode), and the previous key's id during a
// rotation.
type SigningInfo struct {
	KeyID         string
	Generated     bool
	PreviousKeyID string
}

// signingCheck is /api/status's checks.signing.
type signingCheck struct {
	Status        string  `json:"status"`
	KeyID         *string `json:"key_id"`
	Generated     bool    `json:"generated"`
	PreviousKeyID *string `json:"previous_key_id"`
}

func (in *RenderInputs) signingCheck() signingCheck {
	s := in.Signing
	if s.KeyID == "" {
		return signingCheck{Status: "off"}
	}
	return signingCheck{Status: "on", KeyID: ptr(s.KeyID), Generated: s.Generated, PreviousKeyID: nonEmpty(s.PreviousKeyID)}
}

// subscriptionsCheck is /api/status's checks.ledger_subscriptions.
type subscriptionsCheck struct {
	// Status is ok (every node with a WebSocket subscribed), degraded
	// (some), down (none of them), or off (no node has one).
	Status    string              `json:"status"`
	Connected int                 `json:"connected"`
	Nodes     int                 `json:"nodes"`
	PerNode   []subscriptionCheck `json:"per_node"`
}

type subscriptionCheck struct {
	Node                 int     `json:"node"`
	State                string  `json:"state"`
	Since                string  `json:"since"`
	LastNotificationAt   *string `json:"last_notification_at"`
	LastNotificationSlot *uint64 `json:"last_notification_slot"`
	Reconnects           int     `json:"reconnects"`
	Error                *string `json:"error"`
}

// subscriptionsCheck renders the supply collector's subscriptions; nil
// when its record holds none. It adds no problem: polling is the safety
// net, and the LedgerSubscriptionDown alert says when pushes stop.
func (in *RenderInputs) subscriptionsCheck(rec contract.Status) *subscriptionsCheck {
	if len(rec.Subscriptions) == 0 {
		return nil
	}
	sc := &subscriptionsCheck{Nodes: len(rec.Subscriptions), PerNode: make([]subscriptionCheck, 0, len(rec.Subscriptions))}
	withSocket := 0
	for _, s := range rec.Subscriptions {
		c := subscriptionCheck{Node: s.Node, State: s.State, Since: answer.FormatTime(s.Since), Reconnects: s.Reconnects}
		if s.LastNotificationAt != nil {
			c.LastNotificationAt = timeStr(*s.LastNotificationAt)
			c.LastNotificationSlot = ptr(s.LastNotificationSlot)
		}
		if s.Error != "" {
			c.Error = ptr(in.Redact(s.Error))
		}
		if s.State != contract.SubscriptionOff {
			withSocket++
		}
		if s.State == contract.SubscriptionConnected {
			sc.Connected++
		}
		sc.PerNode = append(sc.PerNode, c)
	}
	switch {
	case withSocket == 0:
		sc.Status = "off"
	case sc.Connected == withSocket:
		sc.Status = StatusOK
	case sc.Connected > 0:
		sc.Status = StatusDegraded
	default:
		sc.Status = StatusDown
	}
	return sc
}
