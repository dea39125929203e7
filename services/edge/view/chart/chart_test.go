package chart

import (
	"encoding/xml"
	"errors"
	"io"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tokendata/tokendata/shared/contract"
	"github.com/tokendata/tokendata/shared/store"
)

func ms(m int) int64 { return t0.Add(time.Duration(m) * time.Minute).UnixMilli() }

// wellFormed parses svg as XML: an unescaped text would break it.
func wellFormed(t *testing.T, svg string) {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader(svg))
	for {
		_, err := d.Token()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			t.Fatalf("not well-formed: %v\n%s", err, svg)
		}
	}
}

func TestChartEmpty(t *testing.T) {
	if got := RenderChart(ChartSeries{ID: "x", Title: "Price"}); got != "" {
		t.Errorf("a series without points drew %q", got)
	}
	if got := RenderHistory(nil); got != "" {
		t.Errorf("no series: %q", got)
	}
	bad := []contract.Point{{T: ms(0), V: "not a number"}}
	if got := RenderChart(ChartSeries{ID: "x", Points: bad}); got != "" {
		t.Errorf("a series of unreadable values drew %q", got)
	}
}

// TestChartGapsAreBreaks: a gap splits the line in two paths and is a
// band with its own title; the line never crosses it.
func TestChartGapsAreBreaks(t *testing.T) {
	pts := []contract.Point{{T: ms(0), V: "1"}, {T: ms(1), V: "2"}, {T: ms(2), V: "3"},
		{T: ms(30), V: "2"}, {T: ms(31), V: "1.5"}, {T: ms(60), V: "4"}}
	gaps := store.Gaps(pts, time.Minute, time.Time{})
	if len(gaps) != 2 {
		t.Fatalf("%d gaps, want 2: %+v", len(gaps), gaps)
	}
	svg := string(RenderChart(ChartSeries{ID: "supply-7d", Title: "Holders, 7 days", Points: pts, Gaps: gaps}))
	wellFormed(t, svg)
	if n := strings.Count(svg, `class="line"`); n != 2 {
		t.Errorf("%d lines, want 2 (3 points, then 2; the last point alone)", n)
	}
	if n := strings.Count(svg, `class="dot"`); n != 1 {
		t.Errorf("%d dots, want 1", n)
	}
	if n := strings.Count(svg, `class="gap"`); n != 2 {
		t.Errorf("%d gap bands, want 2", n)
	}
	if !strings.Contains(svg, "no data from 2025-06-01 12:02 UTC to 2025-06-01 12:30 UTC") {
		t.Error("the first gap has no title stating it")
	}
	for _, m := range regexp.MustCompile(`\sd="([^"]*)"`).FindAllStringSubmatch(svg, -1) {
		if n := strings.Count(m[1], "M"); n != 1 {
			t.Errorf("path %q moves %d times", m[1], n)
		}
	}
	for _, want := range []string{`role="img"`, `aria-labelledby="supply-7d-title supply-7d-desc"`,
		`<title id="supply-7d-title">Holders, 7 days</title>`, "6 points from", "lowest 1, highest 4", "2 gaps"} {
		if !strings.Contains(svg, want) {
			t.Errorf("svg lacks %q", want)
		}
	}
	if strings.Contains(svg, "style=") || strings.Contains(svg, "<script") {
		t.Error("inline style or script in the chart")
	}
}

// TestChartOHLCAndOpenGap: a price series draws its high-low band under
// the close line and labels with the exact stored strings; an open gap
// (no sample since) reaches the end of the chart.
func TestChartOHLCAndOpenGap(t *testing.T) {
	pts := []contract.Point{
		{T: ms(0), V: "0.0057471", O: "0.0057", H: "0.0058123456789", L: "0.0056", N: 12, F: ms(0), Z: ms(4)},
		{T: ms(5), V: "0.0059", O: "0.0057471", H: "0.006", L: "0.0057", N: 12, F: ms(5), Z: ms(9)},
	}
	now := t0.Add(time.Hour)
	gaps := store.Gaps(pts, time.Minute, now)
	if len(gaps) != 1 || !gaps[0].Open {
		t.Fatalf("gaps %+v", gaps)
	}
	svg := string(RenderChart(ChartSeries{ID: "price", Title: "Price <USD>", Points: pts, Gaps: gaps, Prefix: "$"}))
	wellFormed(t, svg)
	for _, want := range []string{`class="range"`, `class="line"`, "highest $0.006", "lowest $0.0056", "last $0.0059",
		"Price &lt;USD&gt;", "no data since 2025-06-01 12:09 UTC"} {
		if !strings.Contains(svg, want) {
			t.Errorf("svg lacks %q", want)
		}
	}
}

// TestChartLabelsScaleSupply: a supply in base units is labelled in whole
// tokens, exactly.
func TestChartLabelsScaleSupply(t *testing.T) {
	pts := []contract.Point{{T: ms(0), V: "987654321123456"}, {T: ms(1), V: "987654321123457"}}
	svg := string(RenderChart(ChartSeries{ID: "s", Title: "Supply", Points: pts, Shift: -6}))
	wellFormed(t, svg)
	if !strings.Contains(svg, "last 987,654,321.123457") {
		t.Errorf("labels not scaled: %s", svg)
	}
	// one point only: a dot, and a span around it
	one := string(RenderChart(ChartSeries{ID: "o", Title: "One", Points: pts[:1]}))
	wellFormed(t, one)
	if !strings.Contains(one, `class="dot"`) || strings.Contains(one, "NaN") || strings.Contains(one, "Inf") {
		t.Errorf("one point: %s", one)
	}
	// the history section wraps each chart in a captioned figure
	sec := string(RenderHistory([]ChartSeries{{ID: "a", Title: "A & B", Points: pts}, {ID: "b", Title: "empty"}}))
	if strings.Count(sec, "<figure") != 1 || !strings.Contains(sec, "<figcaption>A &amp; B</figcaption>") {
		t.Errorf("history section: %s", sec)
	}
}

// t0 is the fixed "now" of these tests.
var t0 = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
