// Package chartcheck validates the Helm chart offline: it renders
// charts/tokendata with the pinned helm, decodes every object strictly
// (client-go's scheme through apimachinery's strict serializer, plus the
// structured-merge-diff type converter of client-go's applyconfigurations,
// plus the Go types of the CRD kinds the chart uses) and checks the
// project's policies over the result. Its tests also run the cache tier's
// nginx config for real in front of a running edge.
//
// It is a module of its own, outside go.work: the Kubernetes libraries stay
// out of the services' dependency graph.
package chartcheck

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
)

// RepoRoot finds the repository root (the directory holding go.work) from
// the working directory upwards.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("repository root: no go.work above the working directory")
		}
		dir = parent
	}
}

// Helm builds (once) and returns the pinned helm binary: hack/build-helm.sh
// puts it at .bin/helm. HELM, when set, names another binary to use.
func Helm(root string) (string, error) {
	if h := os.Getenv("HELM"); h != "" {
		return h, nil
	}
	cmd := exec.Command("bash", filepath.Join(root, "hack", "build-helm.sh"))
	cmd.Dir = root
	cmd.Env = withoutEnv(os.Environ(), "GOWORK")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("hack/build-helm.sh: %w\n%s", err, out)
	}
	return filepath.Join(root, ".bin", "helm"), nil
}

// Chart is the chart under test.
type Chart struct {
	// Helm is the helm binary.
	Helm string
	// Dir is the chart directory.
	Dir string
	// Namespace is the release namespace of every render.
	Namespace string
	// Release is the release name of every render.
	Release string
}

// Template runs `helm template` with args (values files, --set ...) and
// returns the manifest stream, or helm's error output.
func (c Chart) Template(args ...string) ([]byte, error) {
	full := append([]string{"template", c.Release, c.Dir, "--namespace", c.Namespace}, args...)
	cmd := exec.Command(c.Helm, full...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("helm template %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.Bytes(), nil
}

// Lint runs `helm lint --strict` with args.
func (c Chart) Lint(args ...string) ([]byte, error) {
	full := append([]string{"lint", "--strict", c.Dir, "--namespace", c.Namespace}, args...)
	out, err := exec.Command(c.Helm, full...).CombinedOutput()
	if err != nil {
		return out, fmt.Errorf("helm lint --strict %s: %w", strings.Join(args, " "), err)
	}
	return out, nil
}

// Document is one YAML document of a manifest stream.
type Document struct {
	// Source is the template that rendered it (helm's "# Source:" line).
	Source string
	// YAML is the document's text.
	YAML []byte
}

var (
	separator = regexp.MustCompile(`(?m)^---[ \t]*$`)
	sourceRE  = regexp.MustCompile(`(?m)^# Source: (.+)$`)
)

// SplitDocuments splits a manifest stream on "---" lines and drops the
// documents that hold only comments and blanks.
func SplitDocuments(stream []byte) []Document {
	var docs []Document
	for _, part := range separator.Split(string(stream), -1) {
		if isBlank(part) {
			continue
		}
		d := Document{YAML: []byte(part)}
		if m := sourceRE.FindStringSubmatch(part); m != nil {
			d.Source = m[1]
		}
		docs = append(docs, d)
	}
	return docs
}

// isBlank reports whether a YAML document has nothing but comments and
// whitespace.
func isBlank(doc string) bool {
	for _, line := range strings.Split(doc, "\n") {
		l := strings.TrimSpace(line)
		if l != "" && !strings.HasPrefix(l, "#") {
			return false
		}
	}
	return true
}

// withoutEnv returns env without the variables named.
func withoutEnv(env []string, names ...string) []string {
	out := env[:0:0]
next:
	for _, kv := range env {
		for _, n := range names {
			if strings.HasPrefix(kv, n+"=") {
				continue next
			}
		}
		out = append(out, kv)
	}
	return out
}
