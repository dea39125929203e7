package chartcheck

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/cog/plugins"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"

	source "github.com/tokendata/tokendata/hack/chartcheck/dashboards"
)

// TestDashboardsAreGenerated: the dashboards the chart ships are what
// their Go source builds now (make dashboards), byte for byte, and no
// other file is among them.
func TestDashboardsAreGenerated(t *testing.T) {
	files, err := source.All()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(chart.Dir, "files", "dashboards")
	built := map[string]bool{}
	for _, f := range files {
		built[f.Name] = true
		committed, err := os.ReadFile(filepath.Join(dir, f.Name))
		if err != nil {
			t.Errorf("%s: %v (run make dashboards)", f.Name, err)
			continue
		}
		if !bytes.Equal(committed, f.JSON) {
			t.Errorf("files/dashboards/%s differs from what hack/chartcheck/dashboards builds: run make dashboards", f.Name)
		}
	}
	committed, err := filepath.Glob(filepath.Join(dir, "*"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range committed {
		if !built[filepath.Base(p)] {
			t.Errorf("files/dashboards/%s is built by no Go source (hack/chartcheck/dashboards)", filepath.Base(p))
		}
	}
	if len(files) != 3 {
		t.Errorf("%d dashboards built, want 3 (API, collectors, token)", len(files))
	}
}

// TestDashboardsDecodeStrictly: every dashboard the chart ships decodes
// with the foundation SDK's strict decoder (Grafana's own types: no
// unknown field, every field of its type, every panel and query of a
// known kind), and validates; and the decoder refuses a field Grafana does
// not know, so that this test can fail.
func TestDashboardsDecodeStrictly(t *testing.T) {
	plugins.RegisterDefaultPlugins()
	for name, d := range dashboards(t) {
		raw, err := os.ReadFile(filepath.Join(chart.Dir, "files", "dashboards", name))
		if err != nil {
			t.Fatal(err)
		}
		var sdk dashboard.Dashboard
		if err := strictDashboard(&sdk, raw); err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if err := sdk.Validate(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		if sdk.Uid == nil || *sdk.Uid != d.UID || len(sdk.Panels) != len(d.Panels) {
			t.Errorf("%s: the SDK reads uid %v and %d panels, the checks %q and %d", name, sdk.Uid, len(sdk.Panels), d.UID, len(d.Panels))
		}
		bad := bytes.Replace(raw, []byte(`"title"`), []byte(`"titel": "x", "title"`), 1)
		if err := strictDashboard(new(dashboard.Dashboard), bad); err == nil {
			t.Errorf("%s: an unknown field is accepted", name)
		}
	}
}

// strictDashboard decodes with the SDK's strict decoder, whose error on
// success is a nil cog.BuildErrors in a non-nil error.
func strictDashboard(d *dashboard.Dashboard, raw []byte) error {
	err := d.UnmarshalJSONStrict(raw)
	var errs cog.BuildErrors
	if errors.As(err, &errs) && len(errs) == 0 {
		return nil
	}
	return err
}
