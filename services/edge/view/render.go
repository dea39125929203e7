package view

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/shopspring/decimal"

	"github.com/tokendata/tokendata/services/edge/answer"
	"github.com/tokendata/tokendata/services/edge/snapshot"
	"github.com/tokendata/tokendata/shared/config"
	"github.com/tokendata/tokendata/shared/contract"
)

// renderInputs is what rendering takes from the process, fixed by New:
// the token, the edge's configuration, the domains' timings, the secrets
// to redact from echoed text, and the logger for render failures. It
// holds nothing of the server, so the bodies depend only on these, the
// state and the clock.
type RenderInputs struct {
	Token config.Token
	// retryAfter is the Retry-After of every 503 (EDGE_RETRY_AFTER).
	RetryAfter time.Duration
	Timings    map[contract.Domain]contract.Timing
	Redactor
	Log *slog.Logger
	// openapi is the OpenAPI document as JSON, converted once.
	OpenAPI       []byte
	CacheControls map[answer.Group]string
	ErrInternal   *answer.Answer
	// uncompressed leaves out the compressed variants (Vary stays): for
	// the fuzz targets, which render thousands of states and check what
	// goes into the bodies, not what gzip and brotli make of them.
	Uncompressed bool
	// demo is true in standalone demo mode (the portal says so).
	Demo bool
	// portal is false with EDGE_PORTAL=off: the page is not rendered.
	Portal bool
	// assets are the portal's embedded files; csp its
	// Content-Security-Policy.
	Assets *PortalAssets
	CSP    string
	// Signer signs every 200 answer of the API's paths (/api/keys
	// aside) once per change; nil: answers are not signed.
	Signer answer.Signer
	// Keys is /api/keys' body, the JWKS of the signing keys ({"keys":[]}
	// when nil).
	Keys []byte
	// Signing is what /api/status says of the signing key.
	Signing SigningInfo
}

func (in *RenderInputs) cacheControl(g answer.Group) string { return in.CacheControls[g] }

// renderer renders one view: the inputs, the state and the instant it
// renders for.
type renderer struct {
	*RenderInputs
	st    *snapshot.State
	now   time.Time
	route renderedRoute
	next  time.Time
	// histIdx is the history answer being rendered (historyMeasures and
	// contract.HistoryWindows indexes).
	histIdx [2]int
}

// render renders every route of st at now. prev is the view it replaces
// (nil for the first): Last-Modified never goes back from prev's.
func (in *RenderInputs) Render(st *snapshot.State, prev *View, now time.Time) *View {
	v := &View{State: st, renderedAt: now}
	r := &renderer{RenderInputs: in, st: st, now: now}
	for i, rt := range RenderedRoutes {
		if i == RoutePortal && !in.Portal {
			continue
		}
		r.route = rt
		var before *answer.Answer
		if prev != nil {
			before = prev.Routes[i]
		}
		v.Routes[i] = r.finish(before)
	}
	for i, hm := range snapshot.HistoryMeasures {
		for j, w := range contract.HistoryWindows {
			hs := st.History(hm.Measure, w)
			stale := r.historyStale(hs)
			var before histAnswer
			if prev != nil {
				before = prev.Hist[i][j]
			}
			if hs != nil && before.series == hs && before.stale == stale && before.Resp.Status == answer.StatusOK {
				v.Hist[i][j] = before
				continue
			}
			r.route = historyRoute(hm.Measure)
			r.histIdx = [2]int{i, j}
			v.Hist[i][j] = histAnswer{Resp: r.finish(before.Resp), series: hs, stale: stale}
		}
	}
	v.NextChange = r.next
	v.Token = r.tokenFigures()
	return v
}

// finish renders the current route after before (nil: none), with its
// Vary and compressed variants, and a Last-Modified that never goes back.
func (r *renderer) finish(before *answer.Answer) *answer.Answer {
	resp, err := safeRender(r)
	if err != nil {
		r.Log.Error("render failed", "route", r.route.Path, "error", err.Error())
		resp = r.ErrInternal
	}
	if r.route.compress {
		resp = resp.WithVary()
		if !r.Uncompressed {
			resp.Compress(before)
		}
	}
	resp.KeepLastModifiedMonotonic(before, r.now)
	if r.Signer != nil && resp.Status == answer.StatusOK && signed(r.route.Path) {
		if err := resp.Sign(r.Signer, before, r.now); err != nil {
			r.Log.Error("sign failed", "route", r.route.Path, "error", err.Error())
			return r.ErrInternal
		}
	}
	return resp
}

// signed reports whether the answers of path are signed: every path of
// the API but the keys themselves (the portal page is not a data path).
func signed(path string) bool { return strings.HasPrefix(path, "/api/") && path != PathKeys }

// contentJWKS is the media type of /api/keys (RFC 7517 §8.5).
const contentJWKS = "application/jwk-set+json"

// keys renders /api/keys: the JWKS of the signing keys, empty without
// one.
func (r *renderer) keys() *answer.Answer {
	body := r.Keys
	if body == nil {
		body = []byte(`{"keys":[]}`)
	}
	return answer.NewOK(contentJWKS, r.cacheControl(r.route.group), body, answer.DataInfo{})
}

// safeRender turns a renderer's panic (a bug) into an error, so that one
// bad route never takes down the others.
func safeRender(r *renderer) (resp *answer.Answer, err error) {
	defer func() {
		if p := recover(); p != nil {
			resp, err = nil, fmt.Errorf("panic: %v", p)
		}
	}()
	return r.route.render(r), nil
}

// okJSON renders a 200 JSON answer of the current route.
func (r *renderer) okJSON(v any, info answer.DataInfo) *answer.Answer {
	body, err := answer.EncodeJSON(v)
	if err != nil {
		r.Log.Error("encode failed", "route", r.route.Path, "error", err.Error())
		return r.ErrInternal
	}
	return answer.NewOK(answer.ContentJSON, r.cacheControl(r.route.group), body, info)
}

// okText renders a 200 plain-text answer of the current route.
func (r *renderer) okText(s string, info answer.DataInfo) *answer.Answer {
	return answer.NewOK(answer.ContentText, r.cacheControl(r.route.group), []byte(s), info)
}

// unavailable is the 503 of a domain without a document. When its
// collector's last run failed in a way that waiting does not cure (a
// configuration error, a refused key, a node that cannot enumerate), it
// says so and gives the remedy instead of "retry later".
func (r *renderer) unavailable(d contract.Domain) *answer.Answer {
	run, ok := r.st.Statuses[contract.CollectorOf(d)].Runs[d]
	if ok && !run.OK && contract.PermanentKind(run.ErrorKind) {
		msg := fmt.Sprintf("No %s data is available: the %s collector's last run failed (%s), and it will fail again until its configuration changes.",
			d, contract.CollectorOf(d), run.ErrorKind)
		if run.Remedy != "" {
			msg += " " + r.redactN(sentence(firstUpper(run.Remedy)), maxRemedy)
		}
		if run.Error != "" {
			msg += " The collector said: " + r.Redact(sentence(run.Error))
		}
		return answer.NewError(answer.StatusServiceUnavailable, answer.CodeDataUnavailable, msg, r.RetryAfter)
	}
	return answer.NewError(answer.StatusServiceUnavailable, answer.CodeDataUnavailable,
		fmt.Sprintf("No %s data is available yet (never collected, or expired); retry later.", d), r.RetryAfter)
}

// fresh returns a domain's updated_at and stale flag, and notes when the
// flag will flip or the document expire.
func (r *renderer) fresh(d contract.Domain) (time.Time, bool) {
	doc := r.st.Docs[d]
	at := doc.Env.UpdatedAt
	flip := at.Add(r.Timings[d].StaleAfter)
	stale := r.now.After(flip)
	if !stale {
		r.noteChange(flip.Add(time.Millisecond))
	}
	if !doc.Expires.IsZero() {
		r.noteChange(doc.Expires)
	}
	return at, stale
}

func (r *renderer) noteChange(t time.Time) {
	if t.After(r.now) && (r.next.IsZero() || t.Before(r.next)) {
		r.next = t
	}
}

// info combines the freshness of the domains present among ds.
func (r *renderer) info(ds ...contract.Domain) answer.DataInfo {
	var in answer.DataInfo
	for _, d := range ds {
		if r.st.Docs[d] == nil {
			continue
		}
		at, stale := r.fresh(d)
		if !in.Present || at.Before(in.UpdatedAt) {
			in.UpdatedAt = at
		}
		if !in.Present || at.After(in.Newest) {
			in.Newest = at
		}
		in.Present = true
		in.Stale = in.Stale || stale
	}
	return in
}

// missing names the domains among ds that are absent.
func (r *renderer) missing(ds ...contract.Domain) []string {
	out := []string{}
	for _, d := range ds {
		if r.st.Docs[d] == nil {
			out = append(out, string(d))
		}
	}
	return out
}

func timePtr(in answer.DataInfo) *string {
	if !in.Present {
		return nil
	}
	s := answer.FormatTime(in.UpdatedAt)
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

func (r *renderer) internal(err error) *answer.Answer {
	r.Log.Error("render failed", "route", r.route.Path, "error", err.Error())
	return r.ErrInternal
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
	name, symbol = r.Token.Name, r.Token.Symbol
	if md := r.st.Metadata(); md != nil && md.OnChain != nil {
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
