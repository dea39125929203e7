package chartcheck

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/promql/parser"
	"sigs.k8s.io/yaml"
)

// The monitoring the chart ships: Grafana dashboards
// (files/dashboards/*.json) and a plain Prometheus rules file
// (files/alerts/tokendata-rules.yaml). This file reads them, lints them,
// extracts the PromQL of every panel and alert, and renders the metrics
// reference (METRICS.md) from a live /metrics.

// Dashboard is the part of a Grafana dashboard JSON these checks read.
type Dashboard struct {
	UID        string  `json:"uid"`
	Title      string  `json:"title"`
	Panels     []Panel `json:"panels"`
	Templating struct {
		List []Variable `json:"list"`
	} `json:"templating"`
}

// Panel is a dashboard panel (rows hold nested panels when collapsed).
type Panel struct {
	ID         int             `json:"id"`
	Type       string          `json:"type"`
	Title      string          `json:"title"`
	Datasource *Datasource     `json:"datasource"`
	Targets    []Target        `json:"targets"`
	Panels     []Panel         `json:"panels"`
	GridPos    json.RawMessage `json:"gridPos"`
}

// Datasource names a panel's or target's data source.
type Datasource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

// Target is one query of a panel.
type Target struct {
	RefID      string      `json:"refId"`
	Expr       string      `json:"expr"`
	Datasource *Datasource `json:"datasource"`
}

// Variable is a dashboard template variable.
type Variable struct {
	Name string `json:"name"`
	Type string `json:"type"`
	// Query is a string (datasource, custom) or an object with a query
	// field (query variables).
	Query json.RawMessage `json:"query"`
}

// QueryText returns the variable's query as a string.
func (v Variable) QueryText() string {
	var s string
	if json.Unmarshal(v.Query, &s) == nil {
		return s
	}
	var o struct {
		Query string `json:"query"`
	}
	_ = json.Unmarshal(v.Query, &o)
	return o.Query
}

// LoadDashboard decodes a dashboard.
func LoadDashboard(b []byte) (Dashboard, error) {
	var d Dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		return Dashboard{}, fmt.Errorf("dashboard JSON: %w", err)
	}
	return d, nil
}

// Query is one PromQL expression of a dashboard panel or an alert rule.
type Query struct {
	// Where names it: "dashboard uid / panel title / refId", or "alert X".
	Where string
	Expr  string
}

// Queries lists the expressions of every panel target, rows included.
func (d Dashboard) Queries() []Query {
	var out []Query
	var walk func(ps []Panel)
	walk = func(ps []Panel) {
		for _, p := range ps {
			for _, t := range p.Targets {
				out = append(out, Query{Where: fmt.Sprintf("%s / %s / %s", d.UID, p.Title, t.RefID), Expr: t.Expr})
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	return out
}

// DatasourceVar is the data source every panel and target names.
const DatasourceVar = "${datasource}"

// DashboardVariables are the template variables a dashboard may define,
// and the Grafana built-ins its queries may use.
var (
	DashboardVariables = []string{"datasource", "namespace"}
	GrafanaBuiltins    = []string{"__rate_interval"}
)

// Lint checks what Grafana and the sidecar need and what the live test
// relies on: a uid and title; unique panel ids; a grid position; every
// panel and target on ${datasource} (type prometheus); every target with a
// refId (unique in its panel) and an expression that uses only the known
// variables and parses once they are substituted.
func (d Dashboard) Lint() error {
	var errs []error
	if d.UID == "" || d.Title == "" {
		errs = append(errs, errors.New("uid and title are required"))
	}
	for _, v := range d.Templating.List {
		if !slices.Contains(DashboardVariables, v.Name) {
			errs = append(errs, fmt.Errorf("template variable %q: only %v are substituted by the live test", v.Name, DashboardVariables))
		}
	}
	ids := map[int]string{}
	var walk func(ps []Panel)
	walk = func(ps []Panel) {
		for _, p := range ps {
			where := fmt.Sprintf("panel %d %q", p.ID, p.Title)
			if p.ID == 0 {
				errs = append(errs, fmt.Errorf("%s: no id", where))
			} else if other, dup := ids[p.ID]; dup {
				errs = append(errs, fmt.Errorf("%s: id used by %q too", where, other))
			}
			ids[p.ID] = p.Title
			if p.Title == "" || len(p.GridPos) == 0 {
				errs = append(errs, fmt.Errorf("%s: title and gridPos are required", where))
			}
			if p.Type != "row" {
				if !isPromDatasource(p.Datasource) {
					errs = append(errs, fmt.Errorf("%s: datasource must be {type: prometheus, uid: %s}", where, DatasourceVar))
				}
				if len(p.Targets) == 0 {
					errs = append(errs, fmt.Errorf("%s: no query", where))
				}
			}
			refs := map[string]bool{}
			for _, t := range p.Targets {
				if t.RefID == "" || refs[t.RefID] {
					errs = append(errs, fmt.Errorf("%s: refId %q missing or repeated", where, t.RefID))
				}
				refs[t.RefID] = true
				if !isPromDatasource(t.Datasource) {
					errs = append(errs, fmt.Errorf("%s / %s: datasource must be {type: prometheus, uid: %s}", where, t.RefID, DatasourceVar))
				}
				expr, err := Substitute(t.Expr, ExampleVariables)
				if err == nil {
					_, err = Selectors(expr)
				}
				if err != nil {
					errs = append(errs, fmt.Errorf("%s / %s: %w", where, t.RefID, err))
				}
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	return errors.Join(errs...)
}

func isPromDatasource(d *Datasource) bool {
	return d != nil && d.Type == "prometheus" && d.UID == DatasourceVar
}

// ExampleVariables are values for every variable a dashboard may use.
var ExampleVariables = map[string]string{"datasource": "prometheus", "namespace": "tokendata", "__rate_interval": "1m"}

var variableRE = regexp.MustCompile(`\$(?:\{([A-Za-z_][A-Za-z0-9_]*)(?::[a-z]+)?\}|([A-Za-z_][A-Za-z0-9_]*))`)

// Substitute replaces the Grafana variables ($name, ${name}) of expr with
// vars; a variable vars lacks is an error, so a new variable cannot slip
// past the live test.
func Substitute(expr string, vars map[string]string) (string, error) {
	var missing []string
	out := variableRE.ReplaceAllStringFunc(expr, func(m string) string {
		sub := variableRE.FindStringSubmatch(m)
		name := sub[1] + sub[2]
		v, ok := vars[name]
		if !ok {
			missing = append(missing, name)
			return m
		}
		return v
	})
	if len(missing) > 0 {
		return "", fmt.Errorf("expression %q uses variables %v that are not among %v", expr, missing, slices.Sorted(maps.Keys(vars)))
	}
	return out, nil
}

var promql = parser.NewParser(parser.Options{})

// ParseExpr parses PromQL.
func ParseExpr(expr string) (parser.Expr, error) {
	e, err := promql.ParseExpr(expr)
	if err != nil {
		return nil, fmt.Errorf("PromQL %q: %w", expr, err)
	}
	return e, nil
}

// Selectors returns every vector selector of a PromQL expression as
// PromQL (metric name and label matchers), deduplicated, in order.
func Selectors(expr string) ([]string, error) {
	e, err := ParseExpr(expr)
	if err != nil {
		return nil, err
	}
	var out []string
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok {
			// Only the selector: no offset or @ modifier.
			s := (&parser.VectorSelector{Name: vs.Name, LabelMatchers: vs.LabelMatchers}).String()
			if !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
		return nil
	})
	if len(out) == 0 {
		return nil, fmt.Errorf("PromQL %q selects no metric", expr)
	}
	return out, nil
}

// RuleFile is a Prometheus rules file.
type RuleFile struct {
	Groups []RuleGroup `json:"groups"`
}

// RuleGroup is one group of a rules file.
type RuleGroup struct {
	Name     string `json:"name"`
	Interval string `json:"interval,omitempty"`
	Rules    []Rule `json:"rules"`
}

// Rule is an alerting (or recording) rule.
type Rule struct {
	Alert       string            `json:"alert,omitempty"`
	Record      string            `json:"record,omitempty"`
	Expr        string            `json:"expr"`
	For         string            `json:"for,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// LoadRules decodes a rules file strictly (unknown keys are errors).
func LoadRules(b []byte) (RuleFile, error) {
	var f RuleFile
	if err := yaml.UnmarshalStrict(b, &f); err != nil {
		return RuleFile{}, fmt.Errorf("rules file: %w", err)
	}
	return f, nil
}

// Alerts lists the alerting rules of every group.
func (f RuleFile) Alerts() []Rule {
	var out []Rule
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			if r.Alert != "" {
				out = append(out, r)
			}
		}
	}
	return out
}

// Severities are the severity label values the rules may use.
var Severities = []string{"warning", "critical"}

// RequiredAnnotations are the annotations every alert carries.
var RequiredAnnotations = []string{"summary", "description", "runbook_url"}

// RunbookBase is where every alert's runbook_url points: its section of
// docs/operations.md, the alert's name in lower case as the anchor (as
// GitHub makes it of a heading).
const RunbookBase = "https://github.com/tokendata/tokendata/blob/main/docs/operations.md#"

// RunbookAnchor is the anchor of an alert's runbook in docs/operations.md.
func RunbookAnchor(alert string) string { return strings.ToLower(alert) }

var alertNameRE = regexp.MustCompile(`^Tokendata[A-Z][A-Za-z]+$`)

// Lint checks the house rules of the alerts: a unique name Tokendata…, a
// for duration, a severity of Severities, the RequiredAnnotations, an
// expression that parses; and no recording rules (none are needed yet).
func (f RuleFile) Lint() error {
	var errs []error
	seen := map[string]bool{}
	for _, g := range f.Groups {
		if g.Name == "" || len(g.Rules) == 0 {
			errs = append(errs, fmt.Errorf("group %q: a name and rules are required", g.Name))
		}
		for _, r := range g.Rules {
			if r.Alert == "" {
				errs = append(errs, fmt.Errorf("group %s: rule %q is not an alert", g.Name, r.Record))
				continue
			}
			if !alertNameRE.MatchString(r.Alert) || seen[r.Alert] {
				errs = append(errs, fmt.Errorf("alert %q: names are unique and match %s", r.Alert, alertNameRE))
			}
			seen[r.Alert] = true
			if _, err := model.ParseDuration(r.For); err != nil || r.For == "0s" {
				errs = append(errs, fmt.Errorf("alert %s: for %q must be a positive duration", r.Alert, r.For))
			}
			if !slices.Contains(Severities, r.Labels["severity"]) {
				errs = append(errs, fmt.Errorf("alert %s: severity %q is not one of %v", r.Alert, r.Labels["severity"], Severities))
			}
			for _, a := range RequiredAnnotations {
				if strings.TrimSpace(r.Annotations[a]) == "" {
					errs = append(errs, fmt.Errorf("alert %s: annotation %s is required", r.Alert, a))
				}
			}
			if u := r.Annotations["runbook_url"]; u != "" && u != RunbookBase+RunbookAnchor(r.Alert) {
				errs = append(errs, fmt.Errorf("alert %s: runbook_url %q, want %s", r.Alert, u, RunbookBase+RunbookAnchor(r.Alert)))
			}
			if _, err := Selectors(r.Expr); err != nil {
				errs = append(errs, fmt.Errorf("alert %s: %w", r.Alert, err))
			}
		}
	}
	return errors.Join(errs...)
}

// MetricDoc describes one metric family for the reference.
type MetricDoc struct {
	Name   string
	Type   string
	Help   string
	Labels []string
}

// ParseMetrics reads a Prometheus text exposition and returns its
// families (labels: the union over the family's series, without le and
// quantile).
func ParseMetrics(text []byte) (map[string]MetricDoc, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(bytes.NewReader(text))
	if err != nil {
		return nil, fmt.Errorf("metrics exposition: %w", err)
	}
	out := make(map[string]MetricDoc, len(mfs))
	for name, mf := range mfs {
		d := MetricDoc{Name: name, Type: strings.ToLower(mf.GetType().String()), Help: mf.GetHelp()}
		if mf.GetType() == dto.MetricType_UNTYPED {
			d.Type = "untyped"
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if n := l.GetName(); n != "le" && n != "quantile" && !slices.Contains(d.Labels, n) {
					d.Labels = append(d.Labels, n)
				}
			}
		}
		slices.Sort(d.Labels)
		out[name] = d
	}
	return out, nil
}

// MergeMetrics unions families seen by several processes; a family that
// differs in type or help between them is an error.
func MergeMetrics(sets ...map[string]MetricDoc) (map[string]MetricDoc, error) {
	out := map[string]MetricDoc{}
	for _, set := range sets {
		for name, d := range set {
			prev, ok := out[name]
			if !ok {
				out[name] = d
				continue
			}
			if prev.Type != d.Type || prev.Help != d.Help {
				return nil, fmt.Errorf("metric %s: type or help differ between processes (%s %q, %s %q)", name, prev.Type, prev.Help, d.Type, d.Help)
			}
			for _, l := range d.Labels {
				if !slices.Contains(prev.Labels, l) {
					prev.Labels = append(prev.Labels, l)
				}
			}
			slices.Sort(prev.Labels)
			out[name] = prev
		}
	}
	return out, nil
}

// ExposedBy names the processes that export a tokendata metric, from its
// name (the packages that define them: services/edge, shared/collector,
// services/holders, services/market, shared/ops; the ledger's are
// observed by the collectors that read it). standalone exports all.
func ExposedBy(name string) string {
	switch {
	case strings.HasPrefix(name, "tokendata_edge_"), strings.HasPrefix(name, "tokendata_token_"):
		return "edge"
	case strings.HasPrefix(name, "tokendata_collector_"), strings.HasPrefix(name, "tokendata_upstream_"):
		return "supply, market, holders"
	case name == "tokendata_ledger_behind_answers_total":
		return "supply, holders"
	case strings.HasPrefix(name, "tokendata_ledger_"):
		return "supply"
	case strings.HasPrefix(name, "tokendata_holders_"):
		return "holders"
	case strings.HasPrefix(name, "tokendata_market_"):
		return "market"
	}
	return "every service"
}

// MetricsTable renders the tokendata_* families as a Markdown table.
func MetricsTable(docs map[string]MetricDoc) string {
	var b strings.Builder
	b.WriteString("| metric | type | labels | exposed by | meaning |\n|---|---|---|---|---|\n")
	for _, name := range slices.Sorted(maps.Keys(docs)) {
		if !strings.HasPrefix(name, "tokendata_") {
			continue
		}
		d := docs[name]
		labels := "—"
		if len(d.Labels) > 0 {
			labels = "`" + strings.Join(d.Labels, "`, `") + "`"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s |\n", name, d.Type, labels, ExposedBy(name), mdCell(d.Help))
	}
	return b.String()
}

// AlertsTable renders the alerts of a rules file as a Markdown table.
func AlertsTable(f RuleFile) string {
	var b strings.Builder
	b.WriteString("| alert | severity | for | expression | runbook |\n|---|---|---|---|---|\n")
	for _, r := range f.Alerts() {
		expr := strings.Join(strings.Fields(r.Expr), " ")
		fmt.Fprintf(&b, "| `%s` | %s | %s | `%s` | [operations.md](../../docs/operations.md#%s) |\n", r.Alert, r.Labels["severity"], r.For,
			strings.ReplaceAll(expr, "|", `\|`), RunbookAnchor(r.Alert))
	}
	return b.String()
}

func mdCell(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "|", `\|`), "\n", " ")
}

// ReplaceSection replaces the text between "<!-- BEGIN name -->" and
// "<!-- END name -->" lines of doc with content.
func ReplaceSection(doc, name, content string) (string, error) {
	begin, end := "<!-- BEGIN "+name+" -->\n", "<!-- END "+name+" -->"
	i := strings.Index(doc, begin)
	j := strings.Index(doc, end)
	if i < 0 || j < i {
		return "", fmt.Errorf("no %q … %q section", strings.TrimSpace(begin), end)
	}
	return doc[:i+len(begin)] + content + doc[j:], nil
}
