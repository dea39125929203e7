package edge

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/shopspring/decimal"

	"github.com/tokendata/tokendata/shared/config"
	"github.com/tokendata/tokendata/shared/contract"
)

// renderInputs is what rendering takes from the process, fixed by New:
// the token, the edge's configuration, the domains' timings, the secrets
// to redact from echoed text, and the logger for render failures. It
// holds nothing of the server, so the bodies depend only on these, the
// state and the clock.
type renderInputs struct {
	token   config.Token
	cfg     Config
	timings map[contract.Domain]contract.Timing
	redactor
	log *slog.Logger
	// openapi is the OpenAPI document as JSON, converted once.
	openapi       []byte
	cacheControls map[group]string
	errInternal   *response
	// uncompressed leaves out the compressed variants (Vary stays): for
	// the fuzz targets, which render thousands of states and check what
	// goes into the bodies, not what gzip and brotli make of them.
	uncompressed bool
	// demo is true in standalone demo mode (the portal says so).
	demo bool
	// portal is false with EDGE_PORTAL=off: the page is not rendered.
	portal bool
	// assets are the portal's embedded files; csp its
	// Content-Security-Policy.
	assets *portalAssets
	csp    string
}

func (in *renderInputs) cacheControl(g group) string { return in.cacheControls[g] }

// renderer renders one view: the inputs, the state and the instant it
// renders for.
type renderer struct {
	*renderInputs
	st    *state
	now   time.Time
	route renderedRoute
	next  time.Time
	// histIdx is the history answer being rendered (historyMeasures and
	// contract.HistoryWindows indexes).
	histIdx [2]int
}

// render renders every route of st at now. prev is the view it replaces
// (nil for the first): Last-Modified never goes back from prev's.
func (in *renderInputs) render(st *state, prev *view, now time.Time) *view {
	v := &view{st: st, renderedAt: now}
	r := &renderer{renderInputs: in, st: st, now: now}
	for i, rt := range renderedRoutes {
		if i == rPortal && !in.portal {
			continue
		}
		r.route = rt
		var before *response
		if prev != nil {
			before = prev.routes[i]
		}
		v.routes[i] = r.finish(before)
	}
	for i, hm := range historyMeasures {
		for j, w := range contract.HistoryWindows {
			hs := st.history(hm.measure, w)
			stale := r.historyStale(hs)
			var before histAnswer
			if prev != nil {
				before = prev.hist[i][j]
			}
			if hs != nil && before.series == hs && before.stale == stale && before.resp.status == http.StatusOK {
				v.hist[i][j] = before
				continue
			}
			r.route = historyRoute(hm.measure)
			r.histIdx = [2]int{i, j}
			v.hist[i][j] = histAnswer{resp: r.finish(before.resp), series: hs, stale: stale}
		}
	}
	v.nextChange = r.next
	v.token = r.tokenFigures()
	return v
}

// finish renders the current route after before (nil: none), with its
// Vary and compressed variants, and a Last-Modified that never goes back.
func (r *renderer) finish(before *response) *response {
	resp, err := safeRender(r)
	if err != nil {
		r.log.Error("render failed", "route", r.route.path, "error", err.Error())
		resp = r.errInternal
	}
	if r.route.compress {
		resp = resp.withVary()
		if !r.uncompressed {
			resp.compress(before)
		}
	}
	resp.keepLastModifiedMonotonic(before, r.now)
	return resp
}

// safeRender turns a renderer's panic (a bug) into an error, so that one
// bad route never takes down the others.
func safeRender(r *renderer) (resp *response, err error) {
	defer func() {
		if p := recover(); p != nil {
			resp, err = nil, fmt.Errorf("panic: %v", p)
		}
	}()
	return r.route.render(r), nil
}

// okJSON renders a 200 JSON answer of the current route.
func (r *renderer) okJSON(v any, info dataInfo) *response {
	body, err := encodeJSON(v)
	if err != nil {
		r.log.Error("encode failed", "route", r.route.path, "error", err.Error())
		return r.errInternal
	}
	return newOK(contentJSON, r.cacheControl(r.route.group), body, info)
}

// okText renders a 200 plain-text answer of the current route.
func (r *renderer) okText(s string, info dataInfo) *response {
	return newOK(contentText, r.cacheControl(r.route.group), []byte(s), info)
}

// unavailable is the 503 of a domain without a document. When its
// collector's last run failed in a way that waiting does not cure (a
// configuration error, a refused key, a node that cannot enumerate), it
// says so and gives the remedy instead of "retry later".
func (r *renderer) unavailable(d contract.Domain) *response {
	run, ok := r.st.statuses[contract.CollectorOf(d)].Runs[d]
	if ok && !run.OK && contract.PermanentKind(run.ErrorKind) {
		msg := fmt.Sprintf("No %s data is available: the %s collector's last run failed (%s), and it will fail again until its configuration changes.",
			d, contract.CollectorOf(d), run.ErrorKind)
		if run.Remedy != "" {
			msg += " " + r.redactN(sentence(firstUpper(run.Remedy)), maxRemedy)
		}
		if run.Error != "" {
			msg += " The collector said: " + r.redact(sentence(run.Error))
		}
		return newError(http.StatusServiceUnavailable, codeDataUnavailable, msg, r.cfg.RetryAfter)
	}
	return newError(http.StatusServiceUnavailable, codeDataUnavailable,
		fmt.Sprintf("No %s data is available yet (never collected, or expired); retry later.", d), r.cfg.RetryAfter)
}

// fresh returns a domain's updated_at and stale flag, and notes when the
// flag will flip or the document expire.
func (r *renderer) fresh(d contract.Domain) (time.Time, bool) {
	doc := r.st.docs[d]
	at := doc.env.UpdatedAt
	flip := at.Add(r.timings[d].StaleAfter)
	stale := r.now.After(flip)
	if !stale {
		r.noteChange(flip.Add(time.Millisecond))
	}
	if !doc.expires.IsZero() {
		r.noteChange(doc.expires)
	}
	return at, stale
}

func (r *renderer) noteChange(t time.Time) {
	if t.After(r.now) && (r.next.IsZero() || t.Before(r.next)) {
		r.next = t
	}
}

// info combines the freshness of the domains present among ds.
func (r *renderer) info(ds ...contract.Domain) dataInfo {
	var in dataInfo
	for _, d := range ds {
		if r.st.docs[d] == nil {
			continue
		}
		at, stale := r.fresh(d)
		if !in.present || at.Before(in.updatedAt) {
			in.updatedAt = at
		}
		if !in.present || at.After(in.newest) {
			in.newest = at
		}
		in.present = true
		in.stale = in.stale || stale
	}
	return in
}

// missing names the domains among ds that are absent.
func (r *renderer) missing(ds ...contract.Domain) []string {
	out := []string{}
	for _, d := range ds {
		if r.st.docs[d] == nil {
			out = append(out, string(d))
		}
	}
	return out
}

func timePtr(in dataInfo) *string {
	if !in.present {
		return nil
	}
	s := formatTime(in.updatedAt)
	return &s
}

// num writes a decimal as a plain-notation JSON number.
func num(d decimal.Decimal) json.Number { return json.Number(d.String()) }

func numPtr(d *decimal.Decimal) *json.Number {
	if d == nil {
		return nil
	}
	n := num(*d)
	return &n
}

func (r *renderer) internal(err error) *response {
	r.log.Error("render failed", "route", r.route.path, "error", err.Error())
	return r.errInternal
}

func warnings(w []contract.Warning) []contract.Warning {
	if w == nil {
		return []contract.Warning{}
	}
	return w
}

func ptr[T any](v T) *T { return &v }

// identity is the token's name and symbol: the token file's, else the
// ledger's metadata.
func (r *renderer) identity() (name, symbol string) {
	name, symbol = r.token.Name, r.token.Symbol
	if md := r.st.metadata(); md != nil && md.OnChain != nil {
		if name == "" {
			name = md.OnChain.Name
		}
		if symbol == "" {
			symbol = md.OnChain.Symbol
		}
	}
	return name, symbol
}

func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
