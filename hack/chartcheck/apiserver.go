package chartcheck

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Cluster is a Kubernetes control plane of two processes, both on
// 127.0.0.1 and free ports: Debian's etcd and the pinned kube-apiserver
// (hack/build-kube.sh). No controller manager, scheduler or kubelet runs:
// objects are validated, admitted (PodSecurity included) and stored, never
// scheduled. Enough to prove that the API server accepts what the chart
// renders, install after install and upgrade after upgrade.
type Cluster struct {
	// Kubeconfig is the path of a kubeconfig with cluster-admin rights
	// (a bearer token of a member of system:masters).
	Kubeconfig string
	// URL is the API server's https address.
	URL string

	dir   string
	token string
	procs []*exec.Cmd
	logs  []string
}

// KubeBinaries builds (once, cached) and returns the pinned kube-apiserver
// and kubectl: hack/build-kube.sh puts them in .bin/.
func KubeBinaries(root string) (apiserver, kubectl string, err error) {
	cmd := exec.Command("bash", filepath.Join(root, "hack", "build-kube.sh"))
	cmd.Dir = root
	cmd.Env = withoutEnv(os.Environ(), "GOWORK")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", "", fmt.Errorf("hack/build-kube.sh: %w\n%s", err, out)
	}
	return filepath.Join(root, ".bin", "kube-apiserver"), filepath.Join(root, ".bin", "kubectl"), nil
}

// StartCluster starts etcd and apiserver with their state in dir (a
// temporary directory the caller removes) and waits until the API server
// is ready. Stop ends both.
func StartCluster(ctx context.Context, apiserver, dir string) (*Cluster, error) {
	etcd, err := exec.LookPath("etcd")
	if err != nil {
		return nil, errors.New("etcd not found: install Debian's etcd-server (hack/install-chart-deps.sh does)")
	}
	c := &Cluster{dir: dir}
	ok := false
	defer func() {
		if !ok {
			c.Stop()
		}
	}()
	ports, err := freePorts(3)
	if err != nil {
		return nil, err
	}
	etcdURL := "http://127.0.0.1:" + strconv.Itoa(ports[0])
	peerURL := "http://127.0.0.1:" + strconv.Itoa(ports[1])
	if err := c.start(ctx, "etcd", etcd,
		"--name", "chartcheck",
		"--data-dir", filepath.Join(dir, "etcd"),
		"--listen-client-urls", etcdURL, "--advertise-client-urls", etcdURL,
		"--listen-peer-urls", peerURL, "--initial-advertise-peer-urls", peerURL,
		"--initial-cluster", "chartcheck="+peerURL,
		"--log-level", "warn"); err != nil {
		return nil, err
	}

	c.token, err = randomHex(24)
	if err != nil {
		return nil, err
	}
	tokens := filepath.Join(dir, "tokens.csv")
	if err := os.WriteFile(tokens, []byte(c.token+",chartcheck-admin,chartcheck-admin,system:masters\n"), 0o600); err != nil {
		return nil, err
	}
	saKey := filepath.Join(dir, "sa.key")
	if err := writeRSAKey(saKey); err != nil {
		return nil, err
	}
	port := ports[2]
	c.URL = "https://127.0.0.1:" + strconv.Itoa(port)
	if err := c.start(ctx, "kube-apiserver", apiserver,
		"--etcd-servers", etcdURL,
		"--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1",
		"--secure-port", strconv.Itoa(port),
		// A self-signed serving certificate generated here.
		"--cert-dir", filepath.Join(dir, "pki"),
		"--token-auth-file", tokens,
		"--authorization-mode", "RBAC",
		"--service-account-issuer", c.URL,
		"--service-account-key-file", saKey,
		"--service-account-signing-key-file", saKey,
		"--service-cluster-ip-range", "10.96.0.0/16",
		// Pods are never created by a controller here; the ServiceAccount
		// admission would only wait for a token controller that is absent.
		"--disable-admission-plugins", "ServiceAccount",
		"--v", "1"); err != nil {
		return nil, err
	}
	if err := c.waitReady(ctx, 3*time.Minute); err != nil {
		return nil, err
	}
	c.Kubeconfig = filepath.Join(dir, "kubeconfig")
	kubeconfig := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: chartcheck
  cluster:
    server: %s
    insecure-skip-tls-verify: true
users:
- name: admin
  user:
    token: %s
contexts:
- name: chartcheck
  context: {cluster: chartcheck, user: admin}
current-context: chartcheck
`, c.URL, c.token)
	if err := os.WriteFile(c.Kubeconfig, []byte(kubeconfig), 0o600); err != nil {
		return nil, err
	}
	ok = true
	return c, nil
}

// start runs a process with its output in dir/<name>.log.
func (c *Cluster) start(ctx context.Context, name, bin string, args ...string) error {
	logPath := filepath.Join(c.dir, name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		_ = f.Close()
		return fmt.Errorf("%s: %w", name, err)
	}
	_ = f.Close()
	c.procs = append(c.procs, cmd)
	c.logs = append(c.logs, logPath)
	return nil
}

// waitReady polls /readyz until the API server answers 200.
func (c *Cluster) waitReady(ctx context.Context, limit time.Duration) error {
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // a loopback API server with a certificate it made itself
	}}
	defer client.CloseIdleConnections()
	deadline := time.Now().Add(limit)
	var last string
	for time.Now().Before(deadline) {
		for i, p := range c.procs {
			if p.ProcessState != nil {
				return fmt.Errorf("%s exited:\n%s", filepath.Base(c.logs[i]), c.LogTail(i))
			}
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.URL+"/readyz", nil)
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+c.token)
		resp, err := client.Do(req)
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
	return fmt.Errorf("kube-apiserver not ready after %s (%s):\n%s", limit, last, c.LogTail(len(c.procs)-1))
}

// LogTail is the end of the log of the i-th process (0 etcd, 1 apiserver).
func (c *Cluster) LogTail(i int) string {
	b, err := os.ReadFile(c.logs[i])
	if err != nil {
		return err.Error()
	}
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// Stop kills the API server, then etcd, and waits for both.
func (c *Cluster) Stop() {
	for i := len(c.procs) - 1; i >= 0; i-- {
		p := c.procs[i]
		if p.Process != nil {
			_ = p.Process.Kill()
			_ = p.Wait()
		}
	}
	c.procs = nil
}

// Env is the environment of kubectl and helm against the cluster: only its
// kubeconfig, and helm's state in the cluster's directory.
func (c *Cluster) Env() []string {
	env := withoutEnv(os.Environ(), "KUBECONFIG", "HELM_CACHE_HOME", "HELM_CONFIG_HOME", "HELM_DATA_HOME")
	return append(env, "KUBECONFIG="+c.Kubeconfig,
		"HELM_CACHE_HOME="+filepath.Join(c.dir, "helm", "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(c.dir, "helm", "config"),
		"HELM_DATA_HOME="+filepath.Join(c.dir, "helm", "data"))
}

// Run runs bin (kubectl or helm) against the cluster with stdin, and
// returns its standard output, or an error with its standard error.
func (c *Cluster) Run(stdin []byte, bin string, args ...string) (stdout, stderr string, err error) {
	cmd := exec.Command(bin, args...)
	cmd.Env = c.Env()
	if stdin != nil {
		cmd.Stdin = strings.NewReader(string(stdin))
	}
	var o, e strings.Builder
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	if err != nil {
		err = fmt.Errorf("%s %s: %w: %s", filepath.Base(bin), strings.Join(args, " "), err, strings.TrimSpace(e.String()))
	}
	return o.String(), e.String(), err
}

func freePorts(n int) ([]int, error) {
	var ports []int
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			_ = l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func randomHex(n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// writeRSAKey writes a new RSA key (PKCS#1 PEM): the API server signs and
// verifies service account tokens with it.
func writeRSAKey(path string) error {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	b := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	return os.WriteFile(path, b, 0o600)
}
