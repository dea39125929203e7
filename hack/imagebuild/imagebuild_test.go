package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

const repoRoot = "../.."

// TestReadStageOfTheDockerfile: the builder reads the final stage of the
// real services/Dockerfile, the image it reproduces.
func TestReadStageOfTheDockerfile(t *testing.T) {
	st, err := ReadStage(filepath.Join(repoRoot, "services", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	if st.Binary != "/service" || st.User != "65532:65532" || !slices.Equal(st.Entrypoint, []string{"/service"}) ||
		!slices.Equal(st.Expose, []string{"8080", "9090"}) || st.RuntimeImage != "gcr.io/distroless/static:nonroot" {
		t.Errorf("stage %+v", st)
	}
	labels := st.Expand("edge", "1.2.3", "abc1234")
	if labels["org.opencontainers.image.title"] != "tokendata-edge" || labels["org.opencontainers.image.version"] != "1.2.3" ||
		labels["org.opencontainers.image.revision"] != "abc1234" || len(labels) != 6 {
		t.Errorf("labels %v", labels)
	}
}

// TestParseStageRefuses: a final stage the builder would not reproduce is
// an error, not a different image.
func TestParseStageRefuses(t *testing.T) {
	base := "ARG RUNTIME_IMAGE=x\nFROM golang AS build\nRUN go build\nFROM ${RUNTIME_IMAGE}\nCOPY --from=build /out/service /service\nUSER 1:1\nENTRYPOINT [\"/service\"]\n"
	if _, err := parseStage(strings.NewReader(base)); err != nil {
		t.Fatalf("the minimal stage: %v", err)
	}
	for name, df := range map[string]string{
		"a RUN in the final stage": base + "RUN touch /x\n",
		"an ENV":                   base + "ENV A=b\n",
		"shell-form entrypoint":    strings.Replace(base, `ENTRYPOINT ["/service"]`, "ENTRYPOINT /service", 1),
		"no user":                  strings.Replace(base, "USER 1:1\n", "", 1),
		"another base":             strings.Replace(base, "FROM ${RUNTIME_IMAGE}", "FROM alpine", 1),
		"an unterminated label":    base + "LABEL a=\"b\n",
	} {
		if _, err := parseStage(strings.NewReader(df)); err == nil {
			t.Errorf("%s: parsed", name)
		}
	}
}

func testRegistry(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

func pushed(t *testing.T, out string) map[string]string {
	t.Helper()
	m := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 {
			t.Fatalf("output line %q", line)
		}
		m[f[0]] = f[1]
	}
	return m
}

func pulled(t *testing.T, ref string) (v1.Image, *v1.ConfigFile) {
	t.Helper()
	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	img, err := remote.Image(r)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	return img, cf
}

// files lists an image's files by path (the last layer that has each).
func files(t *testing.T, img v1.Image) map[string]*tar.Header {
	t.Helper()
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*tar.Header{}
	for _, l := range layers {
		rc, err := l.Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		tr := tar.NewReader(rc)
		for {
			h, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			out["/"+strings.TrimSuffix(h.Name, "/")] = h
		}
		_ = rc.Close()
	}
	return out
}

// TestServiceImageIsTheDockerfiles: a service image, built on the stand-in
// base and pushed to a registry, has the Dockerfile's user, entrypoint,
// ports and labels, the binary where the Dockerfile puts it and the base's
// files under it; built again from the same sources it is the same image.
func TestServiceImageIsTheDockerfiles(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds a service")
	}
	reg := testRegistry(t)
	var out bytes.Buffer
	if err := standins([]string{"-registry", reg, "static=gcr.io/distroless/static:nonroot"}, &out); err != nil {
		t.Fatal(err)
	}
	base := pushed(t, out.String())["gcr.io/distroless/static:nonroot"]
	build := func() string {
		out.Reset()
		if err := services([]string{"-root", repoRoot, "-registry", reg + "/tokendata", "-tag", "t", "-base", base,
			"-version", "9.9.9", "-commit", "feedbee", "market"}, &out); err != nil {
			t.Fatal(err)
		}
		return pushed(t, out.String())["market"]
	}
	ref := build()
	if !strings.HasPrefix(ref, reg+"/tokendata/market@sha256:") {
		t.Fatalf("pushed %q", ref)
	}
	img, cf := pulled(t, ref)
	c := cf.Config
	if c.User != "65532:65532" || !slices.Equal(c.Entrypoint, []string{"/service"}) || len(c.Cmd) != 0 {
		t.Errorf("user %q entrypoint %v cmd %v", c.User, c.Entrypoint, c.Cmd)
	}
	if _, ok := c.ExposedPorts["8080/tcp"]; !ok || len(c.ExposedPorts) != 2 {
		t.Errorf("ports %v", c.ExposedPorts)
	}
	if c.Labels["org.opencontainers.image.title"] != "tokendata-market" || c.Labels["org.opencontainers.image.version"] != "9.9.9" ||
		c.Labels["org.opencontainers.image.revision"] != "feedbee" {
		t.Errorf("labels %v", c.Labels)
	}
	if !slices.Contains(c.Env, "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt") {
		t.Errorf("env %v: the base's is lost", c.Env)
	}
	fs := files(t, img)
	bin := fs["/service"]
	if bin == nil || bin.Mode&0o111 == 0 || bin.Uid != 0 || bin.Size < 1<<20 {
		t.Errorf("/service %+v", bin)
	}
	for _, p := range []string{"/etc/passwd", "/etc/ssl/certs/ca-certificates.crt", "/home/nonroot", "/tmp"} {
		if fs[p] == nil {
			t.Errorf("no %s from the base", p)
		}
	}
	if again := build(); again != ref {
		t.Errorf("built again: %s, first %s", again, ref)
	}
}

// TestStandins: each stand-in has what the chart's pod specs rely on,
// and is the same image when built again.
func TestStandins(t *testing.T) {
	reg := testRegistry(t)
	var out bytes.Buffer
	args := []string{"-registry", reg, "nginx=docker.io/nginxinc/nginx-unprivileged:1.28.0-alpine",
		"redis=docker.io/library/redis:7.4.2-alpine", "busybox=docker.io/library/busybox:1.37.0", "pause=registry.k8s.io/pause:3.10"}
	if err := standins(args, &out); err != nil {
		t.Fatal(err)
	}
	first := pushed(t, out.String())
	out.Reset()
	if err := standins(args, &out); err != nil {
		t.Fatal(err)
	}
	if again := pushed(t, out.String()); !maps(first, again) {
		t.Errorf("built again: %v, first %v", again, first)
	}
	nginx, ncf := pulled(t, first["docker.io/nginxinc/nginx-unprivileged:1.28.0-alpine"])
	if ncf.Config.User != "101" || ncf.Config.StopSignal != "SIGQUIT" {
		t.Errorf("nginx: user %q stop signal %q (the chart's graceful stop needs SIGQUIT)", ncf.Config.User, ncf.Config.StopSignal)
	}
	nf := files(t, nginx)
	for _, p := range []string{"/usr/sbin/nginx", "/etc/nginx/mime.types", "/bin/sh", "/bin/sleep"} {
		if nf[p] == nil {
			t.Errorf("nginx: no %s", p)
		}
	}
	redis, _ := pulled(t, first["docker.io/library/redis:7.4.2-alpine"])
	rf := files(t, redis)
	if h := rf["/usr/bin/redis-server"]; h == nil || (h.Typeflag == tar.TypeSymlink && rf[filepath.Join("/usr/bin", h.Linkname)] == nil) {
		t.Errorf("redis: redis-server %+v, or what it links to, missing", h)
	}
	if rf["/usr/bin/redis-cli"] == nil || rf["/data"] == nil || rf["/data"].Uid != 999 {
		t.Error("redis: no redis-cli, or /data not the redis user's")
	}
	bb, _ := pulled(t, first["docker.io/library/busybox:1.37.0"])
	bf := files(t, bb)
	if h := bf["/bin/wget"]; h == nil || h.Linkname == "/bin/busybox" {
		t.Errorf("busybox: wget %+v: want Debian's wget (busybox's dies with -T)", h)
	}
	if h := bf["/bin/sh"]; h == nil || h.Linkname == "/bin/busybox" {
		t.Errorf("busybox: sh %+v: want dash (busybox's sh runs its own wget)", h)
	}
	_, pcf := pulled(t, first["registry.k8s.io/pause:3.10"])
	if !slices.Equal(pcf.Config.Entrypoint, []string{"/catatonit", "-P"}) {
		t.Errorf("pause: entrypoint %v", pcf.Config.Entrypoint)
	}
}

func maps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func TestMain(m *testing.M) {
	// The service build runs go; the tests' own GOWORK does not apply.
	_ = os.Unsetenv("GOWORK")
	os.Exit(m.Run())
}
