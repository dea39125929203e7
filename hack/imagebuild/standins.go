package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// A stand-in is a local image built from this machine's Debian packages,
// pushed under the exact name of an image the chart or the node pulls from
// a registry that the local cluster cannot reach (docker.io, gcr.io,
// registry.k8s.io). It is not that image: it has the same command on the
// PATH, the same user, ports, stop signal and writable paths, so that the
// chart's own pod specs (security context, read-only root, probes,
// volumes) run as they would on the real one.
type standin struct {
	tree *Tree
	cfg  v1.Config
}

const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// passwd writes /etc/passwd and /etc/group with root, nobody and the
// given users (name, uid; each its own group of the same id).
func passwd(t *Tree, users ...userEntry) {
	all := append([]userEntry{{"root", 0, "/root"}, {"nobody", 65534, "/nonexistent"}}, users...)
	var pw, gr strings.Builder
	for _, u := range all {
		shell := "/sbin/nologin"
		if u.uid == 0 {
			shell = "/bin/sh"
		}
		fmt.Fprintf(&pw, "%s:x:%d:%d:%s:%s:%s\n", u.name, u.uid, u.uid, u.name, u.home, shell)
		fmt.Fprintf(&gr, "%s:x:%d:\n", u.name, u.uid)
	}
	t.File("/etc/passwd", 0o644, []byte(pw.String()))
	t.File("/etc/group", 0o644, []byte(gr.String()))
}

type userEntry struct {
	name string
	uid  int
	home string
}

// busybox adds Debian's busybox-static as /bin/busybox with a link per
// applet (the shell and tools of an Alpine-based image).
func busybox(t *Tree) error {
	bin, err := exec.LookPath("busybox")
	if err != nil {
		return fmt.Errorf("busybox not found: install Debian's busybox-static")
	}
	if err := t.HostFile("/bin/busybox", bin); err != nil {
		return err
	}
	out, err := exec.Command(bin, "--list-full").Output()
	if err != nil {
		return fmt.Errorf("busybox --list-full: %w", err)
	}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		p := "/" + strings.TrimSpace(sc.Text())
		if p == "/" || p == "/bin/busybox" || t.Has(p) {
			continue
		}
		t.Symlink(p, "/bin/busybox")
	}
	return nil
}

// program adds a dynamically linked program of the host and every shared
// library it loads (as ldd lists them), under their host paths, symlinks
// kept as symlinks.
func program(t *Tree, bin string) error {
	if err := hostPath(t, bin); err != nil {
		return err
	}
	out, err := exec.Command("ldd", bin).Output()
	if err != nil {
		return fmt.Errorf("ldd %s: %w", bin, err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		var lib string
		switch {
		case len(f) >= 3 && f[1] == "=>" && strings.HasPrefix(f[2], "/"):
			lib = f[2]
		case len(f) >= 1 && strings.HasPrefix(f[0], "/"):
			lib = f[0]
		default:
			continue
		}
		if err := hostPath(t, lib); err != nil {
			return err
		}
	}
	return nil
}

// hostPath adds the host's path p: a file, or a symlink and what it
// points to.
func hostPath(t *Tree, p string) error {
	for range 8 {
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		if fi.Mode()&os.ModeSymlink == 0 {
			return t.HostFile(p, p)
		}
		target, err := os.Readlink(p)
		if err != nil {
			return err
		}
		t.Symlink(p, target)
		if !filepath.IsAbs(target) {
			target = filepath.Join(filepath.Dir(p), target)
		}
		p = target
	}
	return fmt.Errorf("%s: too many links", p)
}

// hostTree adds every regular file under the host's directory dir.
func hostTree(t *Tree, dir string) error {
	return filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		switch {
		case fi.IsDir():
			t.Dir(p, 0o755, 0, 0)
		case fi.Mode()&os.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			t.Symlink(p, target)
		case fi.Mode().IsRegular():
			return t.HostFile(p, p)
		}
		return nil
	})
}

func lookPath(name, pkg string) (string, error) {
	// The path as found, a symlink kept as one: Debian's redis-server is a
	// link to redis-check-rdb, which acts by the name it was run as.
	p, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("%s not found: install Debian's %s (hack/install-cluster-deps.sh does)", name, pkg)
	}
	return p, nil
}

// staticBase stands in for gcr.io/distroless/static:nonroot, the base of
// the service images: no shell, CA certificates, time zones, the nonroot
// user (65532) and a /tmp.
func staticBase() (standin, error) {
	t := NewTree()
	passwd(t, userEntry{"nonroot", 65532, "/home/nonroot"})
	t.Dir("/home/nonroot", 0o700, 65532, 65532)
	t.Dir("/tmp", 0o1777, 0, 0)
	if err := t.HostFile("/etc/ssl/certs/ca-certificates.crt", "/etc/ssl/certs/ca-certificates.crt"); err != nil {
		return standin{}, fmt.Errorf("CA certificates: install Debian's ca-certificates: %w", err)
	}
	if _, err := os.Stat("/usr/share/zoneinfo"); err == nil {
		if err := hostTree(t, "/usr/share/zoneinfo"); err != nil {
			return standin{}, err
		}
	}
	t.File("/etc/nsswitch.conf", 0o644, []byte("hosts: files dns\n"))
	return standin{tree: t, cfg: v1.Config{
		User:       "65532",
		WorkingDir: "/home/nonroot",
		Env:        []string{"PATH=" + defaultPath, "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt"},
	}}, nil
}

// busyboxImage stands in for docker.io/library/busybox (the chart's test
// pod: sh, wget, grep). Its wget is Debian's GNU wget, not busybox's: the
// wget of Debian's busybox-static (1.35) dies of a segmentation fault
// whenever -T (a timeout) is given, which the chart's test always gives;
// GNU wget takes the same -q -T -O and fails on an HTTP error as well. Its
// sh is Debian's dash: busybox's own shell runs busybox's wget whatever
// the PATH says (the static build prefers its applets).
func busyboxImage() (standin, error) {
	t := NewTree()
	passwd(t)
	t.Dir("/tmp", 0o1777, 0, 0)
	if err := busybox(t); err != nil {
		return standin{}, err
	}
	wget, err := lookPath("wget", "wget")
	if err != nil {
		return standin{}, err
	}
	if err := program(t, wget); err != nil {
		return standin{}, err
	}
	t.Symlink("/bin/wget", wget)
	dash, err := lookPath("dash", "dash")
	if err != nil {
		return standin{}, err
	}
	if err := program(t, dash); err != nil {
		return standin{}, err
	}
	t.Symlink("/bin/sh", dash)
	t.File("/etc/nsswitch.conf", 0o644, []byte("hosts: files dns\n"))
	return standin{tree: t, cfg: v1.Config{Env: []string{"PATH=" + defaultPath}, Cmd: []string{"sh"}}}, nil
}

// nginxImage stands in for docker.io/nginxinc/nginx-unprivileged (the
// cache tier): Debian's nginx as `nginx` on the PATH, user 101, port 8080,
// graceful stop on SIGQUIT as the real image, a busybox shell as Alpine's.
func nginxImage() (standin, error) {
	t := NewTree()
	passwd(t, userEntry{"nginx", 101, "/nonexistent"})
	t.Dir("/tmp", 0o1777, 0, 0)
	t.Dir("/var/cache/nginx", 0o755, 101, 101)
	if err := busybox(t); err != nil {
		return standin{}, err
	}
	bin, err := lookPath("nginx", "nginx")
	if err != nil {
		return standin{}, err
	}
	if err := program(t, bin); err != nil {
		return standin{}, err
	}
	if _, err := os.Stat("/usr/sbin/nginx"); err == nil && bin != "/usr/sbin/nginx" {
		t.Symlink("/usr/sbin/nginx", bin)
	}
	if err := t.HostFile("/etc/nginx/mime.types", "/etc/nginx/mime.types"); err != nil {
		return standin{}, err
	}
	t.File("/etc/nginx/nginx.conf", 0o644, []byte("# stand-in: the chart runs nginx -c with its own file\nevents {}\n"))
	return standin{tree: t, cfg: v1.Config{
		User:         "101",
		Env:          []string{"PATH=" + defaultPath},
		Cmd:          []string{"nginx", "-g", "daemon off;"},
		ExposedPorts: map[string]struct{}{"8080/tcp": {}},
		StopSignal:   "SIGQUIT",
	}}, nil
}

// redisImage stands in for docker.io/library/redis: Debian's redis-server
// and redis-cli on the PATH, /data for user 999, port 6379.
func redisImage() (standin, error) {
	t := NewTree()
	passwd(t, userEntry{"redis", 999, "/data"})
	t.Dir("/tmp", 0o1777, 0, 0)
	t.Dir("/data", 0o755, 999, 999)
	if err := busybox(t); err != nil {
		return standin{}, err
	}
	for _, name := range []string{"redis-server", "redis-cli"} {
		bin, err := lookPath(name, "redis-server and redis-tools")
		if err != nil {
			return standin{}, err
		}
		if err := program(t, bin); err != nil {
			return standin{}, err
		}
	}
	return standin{tree: t, cfg: v1.Config{
		Env:          []string{"PATH=" + defaultPath},
		Cmd:          []string{"redis-server"},
		WorkingDir:   "/data",
		ExposedPorts: map[string]struct{}{"6379/tcp": {}},
	}}, nil
}

// pauseImage stands in for registry.k8s.io/pause, every pod's sandbox
// process: Debian's catatonit in its pause mode (-P), static, user 65535.
func pauseImage() (standin, error) {
	t := NewTree()
	bin, err := lookPath("catatonit", "catatonit")
	if err != nil {
		return standin{}, err
	}
	if err := t.HostFile("/catatonit", bin); err != nil {
		return standin{}, err
	}
	return standin{tree: t, cfg: v1.Config{
		User:       "65535:65535",
		Entrypoint: []string{"/catatonit", "-P"},
	}}, nil
}

// binaryImage is one static binary as the entrypoint (CoreDNS, built from
// its module): user 65532 as the official image.
func binaryImage(bin, at string, ports ...string) (standin, error) {
	t := NewTree()
	passwd(t, userEntry{"nonroot", 65532, "/home/nonroot"})
	if err := t.HostFile(at, bin); err != nil {
		return standin{}, err
	}
	exposed := map[string]struct{}{}
	for _, p := range ports {
		exposed[p] = struct{}{}
	}
	return standin{tree: t, cfg: v1.Config{
		User:         "65532",
		Entrypoint:   []string{at},
		ExposedPorts: exposed,
	}}, nil
}

var standinKinds = map[string]func() (standin, error){
	"static":  staticBase,
	"busybox": busyboxImage,
	"nginx":   nginxImage,
	"redis":   redisImage,
	"pause":   pauseImage,
}

func standinNames() string {
	names := make([]string, 0, len(standinKinds))
	for k := range standinKinds {
		names = append(names, k)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}
