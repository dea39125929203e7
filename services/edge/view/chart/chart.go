package chart

// The portal's history charts: one SVG per series, rendered on the
// server from the stored points (contract.Point) and the gaps found on
// them (contract.Gaps). The page needs no script and no third party to show
// them, and the strict Content-Security-Policy holds: the SVG carries no
// style attribute and no script, only classes of the portal's stylesheet
// and presentation attributes.

import (
	"fmt"
	"html/template"
	"strconv"
	"strings"
	"time"

	"github.com/shopspring/decimal"

	"github.com/tokendata/tokendata/shared/contract"
)

// ChartSeries is one measure's history as a chart draws it.
type ChartSeries struct {
	// ID names the chart's elements (title, desc); letters, digits and
	// dashes.
	ID string
	// Title is the chart's accessible name, e.g. "Price (USD), 7 days".
	Title string
	// Points are oldest first. Values are exact decimal strings: they are
	// parsed only for the coordinates, and labels show them as stored.
	Points []contract.Point
	// Gaps are the spans without samples (contract.Gaps): drawn as breaks,
	// never bridged by a line.
	Gaps []contract.Gap
	// Shift scales the labels: values are shown multiplied by 10^Shift
	// (-decimals for a supply in base units); 0 for every other measure.
	Shift int32
	// Prefix goes before every label value ("$" for USD measures).
	Prefix string
}

// Chart geometry, in viewBox units; the stylesheet makes the SVG fluid.
const (
	chartW, chartH           = 640, 220
	chartLeft, chartRight    = 8, 632
	chartTop, chartBottom    = 28, 196
	chartMinValueSpanRatio   = 0.05
	chartCoordinatePrecision = 1
)

// renderChart draws s as an accessible SVG: role img, a title and a
// description that state what a sighted reader sees (span, lowest,
// highest, last value, gaps). A series without a point draws nothing
// (the caller says the history is not available). Lines join consecutive
// points only when no gap lies between them; a point alone between two
// gaps is a dot; each gap is a hatched band with its own title; the
// price's high-low range, when the points carry one, is a band under its
// line.
func RenderChart(s ChartSeries) template.HTML {
	pts := make([]chartPoint, 0, len(s.Points))
	for _, p := range s.Points {
		cp, ok := parseChartPoint(p)
		if ok {
			pts = append(pts, cp)
		}
	}
	if len(pts) == 0 {
		return ""
	}
	x0, x1 := pts[0].p.First(), pts[len(pts)-1].p.Last()
	for _, g := range s.Gaps {
		x1 = max(x1, g.To.UnixMilli())
	}
	if x1 <= x0 {
		x0, x1 = x0-1000, x1+1000
	}
	lo, hi := pts[0], pts[0]
	for _, p := range pts {
		if p.low.LessThan(lo.low) {
			lo = p
		}
		if p.high.GreaterThan(hi.high) {
			hi = p
		}
	}
	ylo, yhi := lo.low.InexactFloat64(), hi.high.InexactFloat64()
	if pad := (yhi - ylo) * chartMinValueSpanRatio; pad > 0 {
		ylo, yhi = ylo-pad, yhi+pad
	} else {
		pad = max(abs(yhi)*chartMinValueSpanRatio, 1e-12)
		ylo, yhi = ylo-pad, yhi+pad
	}
	sx := func(ms int64) string {
		return coord(chartLeft + float64(ms-x0)/float64(x1-x0)*(chartRight-chartLeft))
	}
	sy := func(v float64) string {
		return coord(chartBottom - (v-ylo)/(yhi-ylo)*(chartBottom-chartTop))
	}

	id := template.HTMLEscapeString(s.ID)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart" viewBox="0 0 %d %d" role="img" aria-labelledby="%s-title %s-desc">`,
		chartW, chartH, id, id)
	fmt.Fprintf(&b, `<title id="%s-title">%s</title>`, id, template.HTMLEscapeString(s.Title))
	fmt.Fprintf(&b, `<desc id="%s-desc">%s</desc>`, id, template.HTMLEscapeString(chartSummary(s, pts, lo, hi)))
	fmt.Fprintf(&b, `<rect class="plot" x="%d" y="%d" width="%d" height="%d"/>`,
		chartLeft, chartTop, chartRight-chartLeft, chartBottom-chartTop)
	for _, g := range s.Gaps {
		gx0, gx1 := max(g.From.UnixMilli(), x0), min(g.To.UnixMilli(), x1)
		if gx1 <= gx0 {
			continue
		}
		fmt.Fprintf(&b, `<rect class="gap" x="%s" y="%d" width="%s" height="%d"><title>%s</title></rect>`,
			sx(gx0), chartTop, coord(float64(gx1-gx0)/float64(x1-x0)*(chartRight-chartLeft)), chartBottom-chartTop,
			template.HTMLEscapeString(gapText(g)))
	}
	for _, run := range chartRuns(pts, s.Gaps) {
		if run[0].ranged {
			var band strings.Builder
			for i, p := range run {
				fmt.Fprintf(&band, "%s%s,%s", sep(i), sx(p.p.T), sy(p.high.InexactFloat64()))
			}
			for i := len(run) - 1; i >= 0; i-- {
				fmt.Fprintf(&band, " %s,%s", sx(run[i].p.T), sy(run[i].low.InexactFloat64()))
			}
			fmt.Fprintf(&b, `<polygon class="range" points="%s"/>`, band.String())
		}
		if len(run) == 1 {
			fmt.Fprintf(&b, `<circle class="dot" cx="%s" cy="%s" r="2.5"/>`, sx(run[0].p.T), sy(run[0].close))
			continue
		}
		var d strings.Builder
		for i, p := range run {
			cmd := "L"
			if i == 0 {
				cmd = "M"
			}
			fmt.Fprintf(&d, "%s%s%s %s", sep(i), cmd, sx(p.p.T), sy(p.close))
		}
		fmt.Fprintf(&b, `<path class="line" d="%s"/>`, d.String())
	}
	last := pts[len(pts)-1]
	fmt.Fprintf(&b, `<text class="label" x="%d" y="16">%s</text>`, chartLeft, template.HTMLEscapeString(
		"high "+s.label(hi.p.H, hi.p.V)+" · low "+s.label(lo.p.L, lo.p.V)))
	fmt.Fprintf(&b, `<text class="label" x="%d" y="16" text-anchor="end">%s</text>`, chartRight,
		template.HTMLEscapeString("last "+s.label("", last.p.V)))
	fmt.Fprintf(&b, `<text class="label" x="%d" y="%d">%s</text>`, chartLeft, chartH-6, chartDate(x0))
	fmt.Fprintf(&b, `<text class="label" x="%d" y="%d" text-anchor="end">%s</text>`, chartRight, chartH-6, chartDate(x1))
	b.WriteString(`</svg>`)
	return template.HTML(b.String()) //nolint:gosec // built here; every text in it is escaped
}

// chartPoint is a stored point with its plotted values.
type chartPoint struct {
	p         contract.Point
	close     float64
	low, high decimal.Decimal
	// ranged is true for a price bucket with its high and low.
	ranged bool
}

// parseChartPoint parses a point's values; false for one that is not a
// decimal (a reader never plots a value it cannot read).
func parseChartPoint(p contract.Point) (chartPoint, bool) {
	v, err := decimal.NewFromString(p.V)
	if err != nil {
		return chartPoint{}, false
	}
	cp := chartPoint{p: p, close: v.InexactFloat64(), low: v, high: v}
	if p.H != "" && p.L != "" {
		h, errH := decimal.NewFromString(p.H)
		l, errL := decimal.NewFromString(p.L)
		if errH == nil && errL == nil && !h.LessThan(l) {
			cp.low, cp.high, cp.ranged = decimal.Min(l, v), decimal.Max(h, v), true
		}
	}
	return cp, true
}

// chartRuns splits the points where a gap lies between two consecutive
// ones: each run is drawn as one line.
func chartRuns(pts []chartPoint, gaps []contract.Gap) [][]chartPoint {
	var runs [][]chartPoint
	start := 0
	for i := 1; i <= len(pts); i++ {
		if i == len(pts) || gapBetween(pts[i-1].p.Last(), pts[i].p.First(), gaps) || pts[i].ranged != pts[start].ranged {
			runs = append(runs, pts[start:i])
			start = i
		}
	}
	return runs
}

// gapBetween reports whether a gap overlaps the time between a and b
// (Unix ms).
func gapBetween(a, b int64, gaps []contract.Gap) bool {
	for _, g := range gaps {
		if g.From.UnixMilli() < b && g.To.UnixMilli() > a {
			return true
		}
	}
	return false
}

// label is a value as a chart states it: the exact stored decimal,
// scaled by Shift, with the series' prefix. preferred wins when set (a
// bucket's high or low).
func (s ChartSeries) label(preferred, v string) string {
	if preferred != "" {
		v = preferred
	}
	if s.Shift != 0 {
		if d, err := decimal.NewFromString(v); err == nil {
			v = d.Shift(s.Shift).String()
		}
	}
	return s.Prefix + GroupDigits(v)
}

// chartSummary is the chart's description for screen readers.
func chartSummary(s ChartSeries, pts []chartPoint, lo, hi chartPoint) string {
	first, last := pts[0], pts[len(pts)-1]
	msg := fmt.Sprintf("%d points from %s to %s. First %s, last %s, lowest %s, highest %s.",
		len(pts), chartTime(first.p.T), chartTime(last.p.T), s.label("", first.p.V), s.label("", last.p.V),
		s.label(lo.p.L, lo.p.V), s.label(hi.p.H, hi.p.V))
	switch n := len(s.Gaps); n {
	case 0:
		msg += " No gap."
	case 1:
		msg += " 1 gap without data: " + gapText(s.Gaps[0]) + "."
	default:
		msg += " " + strconv.Itoa(n) + " gaps without data, drawn as hatched bands."
	}
	return msg
}

func gapText(g contract.Gap) string {
	if g.Open {
		return "no data since " + chartTime(g.From.UnixMilli())
	}
	return "no data from " + chartTime(g.From.UnixMilli()) + " to " + chartTime(g.To.UnixMilli())
}

func chartTime(ms int64) string { return time.UnixMilli(ms).UTC().Format("2006-01-02 15:04 UTC") }

func chartDate(ms int64) string { return time.UnixMilli(ms).UTC().Format("2006-01-02 15:04") }

func coord(v float64) string { return strconv.FormatFloat(v, 'f', chartCoordinatePrecision, 64) }

func sep(i int) string {
	if i == 0 {
		return ""
	}
	return " "
}

func abs(v float64) float64 {
	if v < 0 {
		return -v
	}
	return v
}

// renderHistory is the page's history section: one chart per series
// that has a point, nothing when none has.
func RenderHistory(series []ChartSeries) template.HTML {
	var b strings.Builder
	for _, s := range series {
		svg := RenderChart(s)
		if svg == "" {
			continue
		}
		b.WriteString(`<figure class="chart-box"><figcaption>` + template.HTMLEscapeString(s.Title) +
			`</figcaption>` + string(svg) + `</figure>`)
	}
	return template.HTML(b.String()) //nolint:gosec // the charts escape their text; the titles are escaped here
}

// groupDigits puts a comma between each group of three digits of a
// decimal's integer part.
func GroupDigits(v string) string {
	sign := ""
	if strings.HasPrefix(v, "-") {
		sign, v = "-", v[1:]
	}
	intPart, frac, hasFrac := strings.Cut(v, ".")
	var b strings.Builder
	for i, c := range intPart {
		if i > 0 && (len(intPart)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if hasFrac {
		b.WriteString("." + frac)
	}
	return sign + b.String()
}
