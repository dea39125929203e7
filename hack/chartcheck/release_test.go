package chartcheck

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// chartMeta is what the release path reads of a Chart.yaml.
type chartMeta struct {
	Name       string `json:"name"`
	Version    string `json:"version"`
	AppVersion string `json:"appVersion"`
}

func readChartMeta(t *testing.T, b []byte) chartMeta {
	t.Helper()
	var m chartMeta
	if err := yaml.Unmarshal(b, &m); err != nil {
		t.Fatalf("Chart.yaml: %v", err)
	}
	return m
}

// fileVersion is the VERSION file's release: the one place of the version.
func fileVersion(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "VERSION"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

var semver = regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$`)

// TestVersionChart: the chart's appVersion (the default image tag of every
// component) is the VERSION file's.
func TestVersionChart(t *testing.T) {
	v := fileVersion(t, root)
	if !semver.MatchString(v) {
		t.Fatalf("VERSION %q is not MAJOR.MINOR.PATCH[-pre]", v)
	}
	b, err := os.ReadFile(filepath.Join(chart.Dir, "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	m := readChartMeta(t, b)
	if m.AppVersion != v {
		t.Errorf("charts/tokendata/Chart.yaml appVersion is %q, VERSION is %q: set appVersion to the VERSION file's", m.AppVersion, v)
	}
	if !semver.MatchString(m.Version) {
		t.Errorf("chart version %q is not SemVer", m.Version)
	}
}

// runImages runs hack/images.sh with DRY_RUN=1 (no Docker) and env.
func runImages(t *testing.T, env ...string) string {
	t.Helper()
	cmd := exec.Command("bash", filepath.Join(root, "hack", "images.sh"), "edge")
	cmd.Dir = root
	cmd.Env = append(withoutEnv(os.Environ(), "VERSION", "TAG", "PUSH", "PLATFORMS", "REGISTRY", "ATTEST", "DRY_RUN"), append([]string{"DRY_RUN=1"}, env...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("hack/images.sh %v: %v\n%s", env, err, out)
	}
	return string(out)
}

// TestVersionImageTag: the tag hack/images.sh gives a release build (the
// version v<VERSION> of its git tag, or VERSION itself) is the chart's
// appVersion, so the chart's defaults name the images a release pushes.
func TestVersionImageTag(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(chart.Dir, "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	app := readChartMeta(t, b).AppVersion
	v := fileVersion(t, root)
	for _, version := range []string{"v" + v, v} {
		out := runImages(t, "VERSION="+version)
		if want := "--tag ghcr.io/tokendata/edge:" + app + " "; !strings.Contains(out, want) {
			t.Errorf("VERSION=%s: hack/images.sh does not tag with the appVersion (%q):\n%s", version, want, out)
		}
	}
	// A build past the release is not the release.
	if out := runImages(t, "VERSION="+v+"+dev"); !strings.Contains(out, "edge:"+v+"-dev ") {
		t.Errorf("VERSION=%s+dev: want the tag %s-dev:\n%s", v, v, out)
	}
}

// TestReleaseImagesAttest: pushed images carry SBOM and provenance
// attestations; loaded ones (no PUSH) carry none, the local store keeps
// none.
func TestReleaseImagesAttest(t *testing.T) {
	pushed := runImages(t, "VERSION=v1.2.3", "PUSH=1", "PLATFORMS=linux/amd64,linux/arm64")
	for _, want := range []string{"--push", "--sbom=true", "--provenance=mode=max", "--platform linux/amd64,linux/arm64"} {
		if !strings.Contains(pushed, want) {
			t.Errorf("PUSH=1: no %s:\n%s", want, pushed)
		}
	}
	if off := runImages(t, "VERSION=v1.2.3", "PUSH=1", "ATTEST=0"); strings.Contains(off, "--sbom") || strings.Contains(off, "--provenance") {
		t.Errorf("ATTEST=0 still attests:\n%s", off)
	}
	loaded := runImages(t, "VERSION=v1.2.3")
	if !strings.Contains(loaded, "--load") || strings.Contains(loaded, "--sbom") || strings.Contains(loaded, "--provenance") {
		t.Errorf("without PUSH: want --load and no attestations:\n%s", loaded)
	}
}

// git runs git in dir, failing the test on error.
func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"GIT_AUTHOR_NAME=release test", "GIT_AUTHOR_EMAIL=release@test.invalid",
		"GIT_COMMITTER_NAME=release test", "GIT_COMMITTER_EMAIL=release@test.invalid")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// releaseClone clones the repository into a temporary directory, brings
// over what the work tree changes (modified and untracked files, deletions)
// so the test runs the work tree's release path, and commits it.
func releaseClone(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "repo")
	git(t, root, "clone", "--quiet", "--no-hardlinks", root, dir)
	changed := strings.Split(strings.TrimSpace(git(t, root, "ls-files", "--modified", "--others", "--exclude-standard")), "\n")
	for _, rel := range changed {
		if rel == "" {
			continue
		}
		src, dst := filepath.Join(root, rel), filepath.Join(dir, rel)
		info, err := os.Stat(src)
		if errors.Is(err, os.ErrNotExist) {
			_ = os.Remove(dst)
			continue
		} else if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, b, info.Mode().Perm()); err != nil {
			t.Fatal(err)
		}
	}
	git(t, dir, "add", "-A")
	if git(t, dir, "status", "--porcelain") != "" {
		git(t, dir, "commit", "--quiet", "--no-verify", "-m", "the work tree under test")
	}
	return dir
}

// runRelease runs .ci/release in dir with DRY_RUN=1 and SKIP_TESTS=1, the
// pinned helm, a docker on PATH that fails the test if called, and helm's
// own directories in the test's.
func runRelease(t *testing.T, dir string, env ...string) (string, error) {
	t.Helper()
	fake := t.TempDir()
	called := filepath.Join(fake, "docker-called")
	script := "#!/bin/sh\necho \"$@\" >> " + called + "\nexit 97\n"
	if err := os.WriteFile(filepath.Join(fake, "docker"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	helmHome := t.TempDir()
	cmd := exec.Command("bash", filepath.Join(dir, ".ci", "release"))
	cmd.Dir = dir
	cmd.Env = append(withoutEnv(os.Environ(), "VERSION", "TAG", "PUSH", "PLATFORMS", "REGISTRY", "CHART_REGISTRY", "ATTEST", "DRY_RUN", "SKIP_TESTS", "RELEASE_VERSION", "HELM", "PATH"),
		append([]string{
			"PATH=" + fake + string(os.PathListSeparator) + os.Getenv("PATH"),
			"HELM=" + chart.Helm,
			"HELM_CACHE_HOME=" + filepath.Join(helmHome, "cache"),
			"HELM_CONFIG_HOME=" + filepath.Join(helmHome, "config"),
			"HELM_DATA_HOME=" + filepath.Join(helmHome, "data"),
			"DRY_RUN=1", "SKIP_TESTS=1",
		}, env...)...)
	out, err := cmd.CombinedOutput()
	if b, e := os.ReadFile(called); e == nil {
		t.Errorf("a dry run called docker: %s", b)
	}
	return string(out), err
}

// packagedChart reads Chart.yaml out of the packaged chart.
func packagedChart(t *testing.T, tgz string) chartMeta {
	t.Helper()
	f, err := os.Open(tgz)
	if err != nil {
		t.Fatalf("the packaged chart: %v", err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			t.Fatalf("%s holds no Chart.yaml", tgz)
		} else if err != nil {
			t.Fatal(err)
		}
		if strings.Count(h.Name, "/") == 1 && strings.HasSuffix(h.Name, "/Chart.yaml") {
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			return readChartMeta(t, b)
		}
	}
}

// TestRelease runs the release procedure (.ci/release, make release) as a
// dry run in a clone tagged v<VERSION>: it packages the chart and prints
// the pushes it would make; and it refuses an untagged HEAD, a chart whose
// appVersion is not VERSION, and a dirty tree.
func TestRelease(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	t.Run("dry run", func(t *testing.T) {
		dir := releaseClone(t)
		v := fileVersion(t, dir)
		git(t, dir, "tag", "-f", "v"+v)
		out, err := runRelease(t, dir)
		if err != nil {
			t.Fatalf(".ci/release: %v\n%s", err, out)
		}
		b, err := os.ReadFile(filepath.Join(dir, "charts", "tokendata", "Chart.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		src := readChartMeta(t, b)
		pkg := filepath.Join(dir, ".bin", "release", src.Name+"-"+src.Version+".tgz")
		if got := packagedChart(t, pkg); got.AppVersion != v || got.Version != src.Version {
			t.Errorf("packaged chart: version %q appVersion %q, want %q and %q", got.Version, got.AppVersion, src.Version, v)
		}
		for _, want := range []string{
			"--platform linux/amd64,linux/arm64",
			"--push --sbom=true --provenance=mode=max",
			"push " + pkg + " oci://ghcr.io/tokendata/charts",
			"DRY RUN",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("the plan does not say %q:\n%s", want, out)
			}
		}
		for _, s := range []string{"edge", "supply", "market", "holders", "standalone"} {
			if want := "--tag ghcr.io/tokendata/" + s + ":" + v + " "; !strings.Contains(out, want) {
				t.Errorf("the plan has no %q:\n%s", want, out)
			}
		}
		if git(t, dir, "status", "--porcelain") != "" {
			t.Errorf("a dry run left the tree dirty:\n%s", git(t, dir, "status", "--short"))
		}
	})

	refuses := func(t *testing.T, dir, want string, env ...string) {
		t.Helper()
		out, err := runRelease(t, dir, env...)
		if err == nil {
			t.Fatalf(".ci/release succeeded, want a refusal saying %q:\n%s", want, out)
		}
		if !strings.Contains(out, want) {
			t.Errorf("the refusal does not say %q:\n%s", want, out)
		}
		if strings.Contains(out, "would run") || strings.Contains(out, "Successfully packaged") {
			t.Errorf("refused after packaging or planning:\n%s", out)
		}
	}
	t.Run("untagged", func(t *testing.T) {
		dir := releaseClone(t)
		tag := "v" + fileVersion(t, dir)
		if git(t, dir, "tag", "--list", tag) != "" {
			git(t, dir, "tag", "-d", tag)
		}
		refuses(t, dir, "no tag "+tag)
	})
	t.Run("tag on another commit", func(t *testing.T) {
		dir := releaseClone(t)
		git(t, dir, "tag", "-f", "v"+fileVersion(t, dir), "HEAD~1")
		refuses(t, dir, "is not tagged v"+fileVersion(t, dir))
	})
	t.Run("appVersion is not VERSION", func(t *testing.T) {
		dir := releaseClone(t)
		p := filepath.Join(dir, "charts", "tokendata", "Chart.yaml")
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		re := regexp.MustCompile(`(?m)^appVersion:.*$`)
		if !re.Match(b) {
			t.Fatal("no appVersion line in Chart.yaml")
		}
		if err := os.WriteFile(p, re.ReplaceAll(b, []byte(`appVersion: "0.0.1"`)), 0o644); err != nil {
			t.Fatal(err)
		}
		git(t, dir, "commit", "--quiet", "-am", "appVersion apart from VERSION")
		git(t, dir, "tag", "-f", "v"+fileVersion(t, dir))
		refuses(t, dir, `appVersion "0.0.1"`)
	})
	t.Run("dirty tree", func(t *testing.T) {
		dir := releaseClone(t)
		git(t, dir, "tag", "-f", "v"+fileVersion(t, dir))
		if err := os.WriteFile(filepath.Join(dir, "stray.txt"), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		refuses(t, dir, "the work tree is not clean")
	})
	t.Run("RELEASE_VERSION apart from VERSION", func(t *testing.T) {
		dir := releaseClone(t)
		git(t, dir, "tag", "-f", "v9.9.9")
		refuses(t, dir, "the VERSION file says", "RELEASE_VERSION=9.9.9")
	})
}
