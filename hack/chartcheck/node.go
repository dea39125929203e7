package chartcheck

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Node is the local cluster of make cluster-up (hack/cluster): a real
// single node, its kubeconfig and the registry its containerd pulls from.
type Node struct {
	Root       string
	Dir        string // .cluster
	Kubeconfig string
	Registry   string
	// Images maps each stand-in's upstream name (docker.io/library/redis:…)
	// to where it was pushed, by digest (…@sha256:…).
	Images map[string]string
	// Nodes is the number of nodes Up brings (CLUSTER_NODES; 0: up.sh's
	// default, one). Up on a cluster already up adds the missing ones.
	Nodes int
}

// NodeRegistry is the registry of the local cluster's node (hack/cluster/lib.sh).
const NodeRegistry = "10.231.0.2:5000"

// OpenNode reads the cluster of root's .cluster, up or not.
func OpenNode(root string) *Node {
	dir := filepath.Join(root, ".cluster")
	return &Node{Root: root, Dir: dir, Kubeconfig: filepath.Join(dir, "kubeconfig"), Registry: NodeRegistry}
}

// Up runs hack/cluster/up.sh (idempotent) and reads the stand-ins' list.
func (n *Node) Up(ctx context.Context) (string, error) {
	out, err := n.script(ctx, "up.sh")
	if err != nil {
		return out, err
	}
	return out, n.readImages()
}

// worker runs hack/cluster/worker.sh verb k (up, lost or down node k).
func (n *Node) worker(ctx context.Context, verb, k string) (string, error) {
	return n.script(ctx, "worker.sh", verb, k)
}

// Down runs hack/cluster/down.sh.
func (n *Node) Down(ctx context.Context) (string, error) {
	return n.script(ctx, "down.sh")
}

func (n *Node) script(ctx context.Context, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "bash", append([]string{filepath.Join(n.Root, "hack", "cluster", name)}, args...)...)
	cmd.Dir = n.Root
	cmd.Env = withoutEnv(os.Environ(), "GOWORK", "KUBECONFIG", "CLUSTER_NODES")
	if n.Nodes > 0 {
		cmd.Env = append(cmd.Env, fmt.Sprintf("CLUSTER_NODES=%d", n.Nodes))
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("hack/cluster/%s: %w", name, err)
	}
	return string(out), nil
}

// IsUp reports whether the cluster's API server answers.
func (n *Node) IsUp(ctx context.Context) bool {
	if _, err := os.Stat(n.Kubeconfig); err != nil {
		return false
	}
	_, err := n.Kubectl(ctx, "get", "--raw", "/readyz")
	return err == nil
}

func (n *Node) readImages() error {
	b, err := os.ReadFile(filepath.Join(n.Dir, "images"))
	if err != nil {
		return err
	}
	n.Images = map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 2 {
			n.Images[f[0]] = f[1]
		}
	}
	return nil
}

// NodeNames lists the cluster's nodes, sorted (the first node,
// tokendata-node, then tokendata-node2…).
func (n *Node) NodeNames(ctx context.Context) ([]string, error) {
	out, err := n.Kubectl(ctx, "get", "nodes", "-o", "jsonpath={.items[*].metadata.name}")
	if err != nil {
		return nil, err
	}
	names := strings.Fields(out)
	sort.Strings(names)
	return names, nil
}

// NodeCgroup is the memory cgroup of a node's pods (hack/cluster/lib.sh:
// the first node's kubelet at the hierarchy's top, node K's under
// /tokendata-nodeK), and PidsDir where its processes' pid files are.
func (n *Node) NodeCgroup(name string) (kubepods, pidsDir string) {
	if k := strings.TrimPrefix(name, "tokendata-node"); k != "" && k != name {
		return filepath.Join("/sys/fs/cgroup/memory", name, "kubepods"), filepath.Join(n.Dir, "pids", "node"+k)
	}
	return "/sys/fs/cgroup/memory/kubepods", filepath.Join(n.Dir, "pids")
}

// Kubectl runs the pinned kubectl against the node.
func (n *Node) Kubectl(ctx context.Context, args ...string) (string, error) {
	return n.run(ctx, filepath.Join(n.Root, ".bin", "kubectl"), args...)
}

// Helm runs the pinned helm against the node.
func (n *Node) Helm(ctx context.Context, args ...string) (string, error) {
	return n.run(ctx, filepath.Join(n.Root, ".bin", "helm"), args...)
}

func (n *Node) run(ctx context.Context, bin string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(withoutEnv(os.Environ(), "KUBECONFIG", "GOWORK"), "KUBECONFIG="+n.Kubeconfig)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("%s %s: %w: %s", filepath.Base(bin), strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out.String(), nil
}

// Apply applies YAML to the node (server-side).
func (n *Node) Apply(ctx context.Context, yaml string) error {
	cmd := exec.CommandContext(ctx, filepath.Join(n.Root, ".bin", "kubectl"), "apply", "--server-side", "--force-conflicts", "-f", "-")
	cmd.Env = append(withoutEnv(os.Environ(), "KUBECONFIG"), "KUBECONFIG="+n.Kubeconfig)
	cmd.Stdin = strings.NewReader(yaml)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("kubectl apply: %w: %s", err, out)
	}
	return nil
}

// HostState is what the node may change on the host, as text per item:
// links, addresses, routes, the host's iptables and ip6tables rules of every
// table, mounts (with their propagation), named network namespaces, the
// entries of /run (and of /var/run when it is not /run), the top of every
// cgroup hierarchy, the kernel tunables kubelet sets and the net.* ones the
// node sets in its own namespace. cluster-down must leave it as cluster-up
// found it.
func HostState() (map[string]string, error) {
	state := map[string]string{}
	cmds := map[string][]string{
		"links":     {"ip", "-o", "link", "show"},
		"addrs":     {"ip", "-o", "addr", "show"},
		"routes":    {"ip", "route", "show", "table", "all"},
		"iptables":  {"iptables-save"},
		"ip6tables": {"ip6tables-save"},
		"mounts":    {"findmnt", "-rn", "-o", "TARGET,SOURCE,FSTYPE,PROPAGATION"},
		"netns":     {"ip", "netns", "list"},
		"run":       {"ls", "-A", "/run"},
		"sysctls": {"sysctl", "vm.overcommit_memory", "vm.panic_on_oom", "kernel.panic", "kernel.panic_on_oops",
			"kernel.keys.root_maxkeys", "kernel.keys.root_maxbytes", "net.ipv4.ip_forward",
			"net.bridge.bridge-nf-call-iptables", "net.ipv4.conf.all.route_localnet"},
	}
	for k, c := range cmds {
		out, err := exec.Command(c[0], c[1:]...).Output()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", strings.Join(c, " "), err)
		}
		state[k] = normalizeState(k, string(out))
	}
	if dst, err := filepath.EvalSymlinks("/var/run"); err == nil && dst != "/run" {
		out, err := exec.Command("ls", "-A", "/var/run").Output()
		if err != nil {
			return nil, fmt.Errorf("ls /var/run: %w", err)
		}
		state["var-run"] = string(out)
	}
	var cg []string
	hier, _ := filepath.Glob("/sys/fs/cgroup/*/")
	for _, h := range hier {
		entries, err := os.ReadDir(h)
		if err != nil {
			continue
		}
		for _, e := range entries {
			if e.IsDir() {
				cg = append(cg, filepath.Join(h, e.Name()))
			}
		}
	}
	sort.Strings(cg)
	state["cgroups"] = strings.Join(cg, "\n")
	return state, nil
}

// normalizeState drops what changes by itself: iptables-save's comments and
// counters, link statistics.
func normalizeState(kind, s string) string {
	var keep []string
	for _, line := range strings.Split(s, "\n") {
		switch {
		case (kind == "iptables" || kind == "ip6tables") && (strings.HasPrefix(line, "#") || strings.HasPrefix(line, ":")):
			if strings.HasPrefix(line, ":") { // a chain: its name and policy, not its counters
				f := strings.Fields(line)
				if len(f) >= 2 {
					line = f[0] + " " + f[1]
				}
			} else {
				continue
			}
		case line == "":
			continue
		}
		keep = append(keep, line)
	}
	return strings.Join(keep, "\n")
}

// DiffState lists what differs between two host states.
func DiffState(before, after map[string]string) []string {
	var diffs []string
	for k, b := range before {
		if a := after[k]; a != b {
			diffs = append(diffs, fmt.Sprintf("%s:\n--- before\n%s\n+++ after\n%s", k, b, a))
		}
	}
	sort.Strings(diffs)
	return diffs
}

// waitFor polls f every interval until it returns true, at most d.
func waitFor(d, interval time.Duration, f func() bool) bool {
	end := time.Now().Add(d)
	for {
		if f() {
			return true
		}
		if time.Now().After(end) {
			return false
		}
		time.Sleep(interval)
	}
}
