// Package dashboards is the source of the chart's Grafana dashboards
// (charts/tokendata/files/dashboards/*.json): each is built in Go with
// Grafana's foundation SDK (typed panels, queries and variables), and the
// committed JSON is this package's output (make dashboards writes it;
// hack/chartcheck fails when it is stale).
//
// Every dashboard has the same frame: the data source as a variable (so an
// operator picks their Prometheus), the release's namespace as a variable
// (every query selects on it), the tokendata tag and a link to the others.
package dashboards

import (
	"encoding/json"
	"fmt"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/cog/variants"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/grafana/grafana-foundation-sdk/go/stat"
	"github.com/grafana/grafana-foundation-sdk/go/table"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"
)

// File is one dashboard as the chart ships it.
type File struct {
	Name string // under charts/tokendata/files/dashboards/
	JSON []byte // indented, ending in a newline
}

// All builds every dashboard, in file-name order.
func All() ([]File, error) {
	var out []File
	for _, b := range []*dashboard.DashboardBuilder{api(), collectors(), token()} {
		d, err := b.Build()
		if err != nil {
			return nil, err
		}
		// The links to the other dashboards above the panels, where
		// Grafana puts a link of no placement (the SDK's builder would
		// move them into the controls menu).
		for i := range d.Links {
			d.Links[i].Placement = nil
		}
		// Every panel and row its id, in order: stable links to a panel
		// (and the lint wants them unique).
		for i, p := range d.Panels {
			id := uint32(i + 1)
			switch {
			case p.Panel != nil:
				p.Panel.Id = &id
			case p.RowPanel != nil:
				p.RowPanel.Id = id
			}
		}
		j, err := json.MarshalIndent(d, "", "  ")
		if err != nil {
			return nil, err
		}
		out = append(out, File{Name: *d.Uid + ".json", JSON: append(j, '\n')})
	}
	return out, nil
}

// datasource is what every panel and query reads: the dashboard's
// ${datasource} variable, a Prometheus.
var datasource = common.DataSourceRef{Type: cog.ToPtr("prometheus"), Uid: cog.ToPtr("${datasource}")}

// newDashboard is the frame every dashboard shares.
func newDashboard(uid, title, description, refresh, from string) *dashboard.DashboardBuilder {
	return dashboard.NewDashboardBuilder(title).
		Uid(uid).
		Description(description).
		Tags([]string{"tokendata"}).
		Timezone("utc").
		Version(1).
		Refresh(refresh).
		Editable().
		Tooltip(dashboard.DashboardCursorSyncCrosshair).
		Time(from, "now").
		WithVariable(dashboard.NewDatasourceVariableBuilder("datasource").
			Label("Data source").
			Type("prometheus")).
		WithVariable(dashboard.NewQueryVariableBuilder("namespace").
			Label("Namespace").
			Datasource(datasource).
			Query(dashboard.StringOrMap{Map: map[string]any{
				"query": "label_values(tokendata_build_info, namespace)",
				"refId": "namespace",
			}}).
			Definition("label_values(tokendata_build_info, namespace)").
			Refresh(dashboard.VariableRefreshOnTimeRangeChanged).
			Sort(dashboard.VariableSortAlphabeticalAsc)).
		Link(dashboard.NewDashboardLinkBuilder("tokendata dashboards").
			Type(dashboard.DashboardLinkTypeDashboards).
			Tags([]string{"tokendata"}).
			AsDropdown(false))
}

// row starts a row of the grid: the panels after it, until the next row.
func row(title string) *dashboard.RowBuilder {
	return dashboard.NewRowBuilder(title).Collapsed(false)
}

// queries are a panel's queries, A, B, … in order.
func queries(qs ...*prometheus.DataqueryBuilder) []cog.Builder[variants.Dataquery] {
	out := make([]cog.Builder[variants.Dataquery], len(qs))
	for i, q := range qs {
		out[i] = q.RefId(fmt.Sprintf("%c", 'A'+i))
	}
	return out
}

// q is one PromQL query and its legend.
func q(expr, legend string) *prometheus.DataqueryBuilder {
	return prometheus.NewDataqueryBuilder().Datasource(datasource).Expr(expr).LegendFormat(legend)
}

// size is a panel's width (of the grid's 24 columns) and height.
type size struct{ w, h uint32 }

// statPanel is a single figure, the last value of its query.
func statPanel(title, description string, s size, qs ...*prometheus.DataqueryBuilder) *stat.PanelBuilder {
	return stat.NewPanelBuilder().
		Title(title).
		Description(description).
		Datasource(datasource).
		Span(s.w).Height(s.h).
		Targets(queries(qs...)).
		ReduceOptions(common.NewReduceDataOptionsBuilder().Calcs([]string{"lastNotNull"}).Fields("").Values(false)).
		TextMode(common.BigValueTextModeAuto).
		Orientation(common.VizOrientationAuto).
		ColorMode(common.BigValueColorModeValue).
		GraphMode(common.BigValueGraphModeNone)
}

// series is a time series panel, its legend a list under it and its
// tooltip the series under the cursor (Grafana's defaults, which the SDK
// leaves unset: its legend would be hidden).
func series(title, description string, s size, qs ...*prometheus.DataqueryBuilder) *timeseries.PanelBuilder {
	return timeseries.NewPanelBuilder().
		Title(title).
		Description(description).
		Datasource(datasource).
		Span(s.w).Height(s.h).
		Targets(queries(qs...)).
		Legend(common.NewVizLegendOptionsBuilder().
			DisplayMode(common.LegendDisplayModeList).
			Placement(common.LegendPlacementBottom).
			ShowLegend(true)).
		Tooltip(common.NewVizTooltipOptionsBuilder().
			Mode(common.TooltipDisplayModeSingle).
			Sort(common.SortOrderNone))
}

// tablePanel is a table of an instant query's series, one row each.
func tablePanel(title, description string, s size, qs ...*prometheus.DataqueryBuilder) *table.PanelBuilder {
	return table.NewPanelBuilder().
		Title(title).
		Description(description).
		Datasource(datasource).
		Span(s.w).Height(s.h).
		Targets(queries(qs...)).
		// no footer (the SDK's default has a null reducer, which its own
		// strict decoder refuses)
		Footer(common.NewTableFooterOptionsBuilder().Show(false).Reducer([]string{}))
}

// thresholds are a panel's colors: a base color, then a color from each
// value on.
func thresholds(base string, from ...step) *dashboard.ThresholdsConfigBuilder {
	out := []dashboard.Threshold{{Color: base}}
	for _, f := range from {
		out = append(out, dashboard.Threshold{Value: cog.ToPtr(f.at), Color: f.color})
	}
	return dashboard.NewThresholdsConfigBuilder().Mode(dashboard.ThresholdsModeAbsolute).Steps(out)
}

// step is one threshold: its color from the value at on.
type step struct {
	at    float64
	color string
}

// at is a threshold.
func at(v float64, color string) step { return step{v, color} }

// state is what a stat shows for one value of a gauge that is a state
// (0 or 1, -1 for missing), instead of the number.
type state struct {
	value       string
	text, color string
}

// states maps each value to its text and color, in order.
func states(ss ...state) []dashboard.ValueMapping {
	opts := map[string]dashboard.ValueMappingResult{}
	for i, s := range ss {
		opts[s.value] = dashboard.ValueMappingResult{Text: cog.ToPtr(s.text), Color: cog.ToPtr(s.color), Index: cog.ToPtr(int32(i))}
	}
	return []dashboard.ValueMapping{{ValueMap: &dashboard.ValueMap{Type: dashboard.MappingTypeValueToText, Options: opts}}}
}

// lines is the drawing of the series panels that plot a level over time
// (a thin line, a light fill, gaps left as gaps), their tooltip every
// series at the cursor.
func lines(b *timeseries.PanelBuilder) *timeseries.PanelBuilder {
	return b.DrawStyle(common.GraphDrawStyleLine).
		LineWidth(1).
		FillOpacity(10).
		SpanNulls(common.BoolOrFloat64{Bool: cog.ToPtr(false)}).
		Tooltip(common.NewVizTooltipOptionsBuilder().
			Mode(common.TooltipDisplayModeMulti).
			Sort(common.SortOrderNone))
}

// withoutTime drops the Time column of an instant query's table.
var withoutTime = dashboard.DataTransformerConfig{
	Id:      "organize",
	Options: map[string]any{"excludeByName": map[string]any{"Time": true}},
}
