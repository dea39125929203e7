// Command imagebuild makes container images without Docker, with
// go-containerregistry, and pushes them to a registry:
//
//	imagebuild services  the service images, the same image as
//	                     services/Dockerfile makes (it reads that file's
//	                     final stage: labels, user, ports, entrypoint, the
//	                     binary's path), on a base pulled by reference;
//	imagebuild standin   the local cluster's stand-ins of third-party
//	                     images, from this machine's Debian packages
//	                     (standins.go), under their upstream names;
//	imagebuild binary    one static binary as an image (CoreDNS).
//
// Each prints one line per image: the name asked for, then what was
// pushed, by digest ("<name> <registry>/<repo>@sha256:…"). Images are
// reproducible: the same inputs give the same digest.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// epoch is the time of every file and of every image's creation: images
// built twice from the same inputs are the same bytes.
var epoch = time.Unix(0, 0).UTC()

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "services":
		err = services(os.Args[2:], os.Stdout)
	case "standin":
		err = standins(os.Args[2:], os.Stdout)
	case "binary":
		err = binary(os.Args[2:], os.Stdout)
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "imagebuild:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, `usage:
  imagebuild services -registry R [-tag T] [-base REF] [-version V] [-commit C] [-insecure] [service...]
  imagebuild standin -registry R [-insecure] KIND=NAME...   (KIND: `+standinNames()+`)
  imagebuild binary -registry R -bin FILE -at /PATH [-port 53/udp]... [-insecure] NAME`)
	os.Exit(2)
}

// pusher pushes to one registry; insecure: plain HTTP to it (the local
// cluster's registry).
type pusher struct {
	registry string
	insecure bool
	out      io.Writer
}

func (p *pusher) flags(fs *flag.FlagSet) {
	fs.StringVar(&p.registry, "registry", os.Getenv("REGISTRY"), "registry and path prefix to push to (REGISTRY)")
	fs.BoolVar(&p.insecure, "insecure", false, "plain HTTP to the registry (a local one)")
}

func (p *pusher) check() error {
	if p.registry == "" {
		return errors.New("-registry (or REGISTRY) is required")
	}
	if strings.Contains(p.registry, "://") {
		return fmt.Errorf("-registry %q: a host[:port][/path], without a scheme", p.registry)
	}
	return nil
}

func (p *pusher) opts() []name.Option {
	if p.insecure {
		return []name.Option{name.Insecure}
	}
	return nil
}

// ref is where an image named upstream as `upstream` goes: the registry,
// then the upstream's repository path without its host
// (docker.io/library/redis:7 -> R/library/redis:7).
func (p *pusher) ref(upstream string) (name.Tag, error) {
	u, err := name.NewTag(upstream)
	if err != nil {
		return name.Tag{}, fmt.Errorf("image name %q: %w", upstream, err)
	}
	return name.NewTag(strings.TrimSuffix(p.registry, "/")+"/"+u.RepositoryStr()+":"+u.TagStr(), p.opts()...)
}

func (p *pusher) push(ctx context.Context, asked string, to name.Tag, img v1.Image) error {
	if err := remote.Write(to, img, remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)); err != nil {
		return fmt.Errorf("push %s: %w", to, err)
	}
	d, err := img.Digest()
	if err != nil {
		return err
	}
	fmt.Fprintf(p.out, "%s %s@%s\n", asked, to.Repository.Name(), d)
	return nil
}

// image is empty (or base) + one layer + the config, at the epoch.
func image(base v1.Image, tree *Tree, cfg v1.Config) (v1.Image, error) {
	layer, err := tree.Layer()
	if err != nil {
		return nil, err
	}
	if base == nil {
		base = empty.Image
	}
	img, err := mutate.Append(base, mutate.Addendum{Layer: layer, History: v1.History{
		Created: v1.Time{Time: epoch}, CreatedBy: "hack/imagebuild",
	}})
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.Config = cfg
	cf.OS, cf.Architecture = "linux", runtime.GOARCH
	cf.Created = v1.Time{Time: epoch}
	return mutate.ConfigFile(img, cf)
}

func standins(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("standin", flag.ContinueOnError)
	p := &pusher{out: out}
	p.flags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := p.check(); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return errors.New("standin: name at least one KIND=NAME")
	}
	ctx := context.Background()
	for _, a := range fs.Args() {
		kind, upstream, ok := strings.Cut(a, "=")
		mk := standinKinds[kind]
		if !ok || mk == nil {
			return fmt.Errorf("standin %q: want KIND=NAME with KIND one of %s", a, standinNames())
		}
		s, err := mk()
		if err != nil {
			return fmt.Errorf("stand-in %s: %w", kind, err)
		}
		img, err := image(nil, s.tree, s.cfg)
		if err != nil {
			return err
		}
		to, err := p.ref(upstream)
		if err != nil {
			return err
		}
		if err := p.push(ctx, upstream, to, img); err != nil {
			return err
		}
	}
	return nil
}

type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

func binary(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("binary", flag.ContinueOnError)
	p := &pusher{out: out}
	p.flags(fs)
	bin := fs.String("bin", "", "the static binary")
	at := fs.String("at", "", "its path in the image, the entrypoint")
	var ports listFlag
	fs.Var(&ports, "port", "an exposed port (53/udp), repeatable")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := p.check(); err != nil {
		return err
	}
	if *bin == "" || !strings.HasPrefix(*at, "/") || fs.NArg() != 1 {
		return errors.New("binary: -bin FILE -at /PATH and one NAME")
	}
	s, err := binaryImage(*bin, *at, ports...)
	if err != nil {
		return err
	}
	img, err := image(nil, s.tree, s.cfg)
	if err != nil {
		return err
	}
	to, err := p.ref(fs.Arg(0))
	if err != nil {
		return err
	}
	return p.push(context.Background(), fs.Arg(0), to, img)
}

func services(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("services", flag.ContinueOnError)
	p := &pusher{out: out}
	p.flags(fs)
	root := fs.String("root", ".", "the repository's root")
	tag := fs.String("tag", os.Getenv("TAG"), "image tag (TAG)")
	base := fs.String("base", os.Getenv("BASE_IMAGE"), "base image (BASE_IMAGE; default: the Dockerfile's RUNTIME_IMAGE)")
	version := fs.String("version", envOr("VERSION", "dev"), "build.version of the binaries (VERSION)")
	commit := fs.String("commit", envOr("COMMIT", "unknown"), "build.commit of the binaries (COMMIT)")
	arch := fs.String("arch", runtime.GOARCH, "GOARCH of the binaries and images")
	exact := fs.String("image", "", "the exact name to push one service's image to (skaffold's $IMAGE), instead of <registry>/<service>:<tag>")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *exact != "" {
		if fs.NArg() != 1 {
			return errors.New("services: -image names the image of one service")
		}
		ref, err := name.NewTag(*exact)
		if err != nil {
			return fmt.Errorf("-image %q: %w", *exact, err)
		}
		p.registry, *tag = ref.RegistryStr(), ref.TagStr()
	}
	if err := p.check(); err != nil {
		return err
	}
	if *tag == "" {
		return errors.New("services: -tag (or TAG) is required")
	}
	st, err := ReadStage(filepath.Join(*root, "services", "Dockerfile"))
	if err != nil {
		return err
	}
	if *base == "" {
		*base = st.RuntimeImage
	}
	var baseOpts []name.Option
	if p.insecure && strings.HasPrefix(*base, strings.SplitN(p.registry, "/", 2)[0]+"/") {
		baseOpts = p.opts()
	}
	baseRef, err := name.ParseReference(*base, baseOpts...)
	if err != nil {
		return fmt.Errorf("base %q: %w", *base, err)
	}
	ctx := context.Background()
	baseImg, err := remote.Image(baseRef, remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain),
		remote.WithPlatform(v1.Platform{OS: "linux", Architecture: *arch}))
	if err != nil {
		return fmt.Errorf("base %s: %w", baseRef, err)
	}
	list := fs.Args()
	if len(list) == 0 {
		list = []string{"edge", "supply", "market", "holders", "standalone"}
	}
	tmp, err := os.MkdirTemp("", "imagebuild")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	for _, svc := range list {
		if _, err := os.Stat(filepath.Join(*root, "services", svc, "cmd", svc)); err != nil {
			return fmt.Errorf("no service %s (services/%s/cmd/%s)", svc, svc, svc)
		}
		bin := filepath.Join(tmp, svc)
		if err := goBuild(filepath.Join(*root, "services", svc), svc, bin, *version, *commit, *arch); err != nil {
			return err
		}
		t := NewTree()
		if err := t.HostFile(st.Binary, bin); err != nil {
			return err
		}
		exposed := map[string]struct{}{}
		for _, port := range st.Expose {
			if !strings.Contains(port, "/") {
				port += "/tcp"
			}
			exposed[port] = struct{}{}
		}
		bc, err := baseImg.ConfigFile()
		if err != nil {
			return err
		}
		cfg := bc.Config.DeepCopy()
		cfg.User = st.User
		cfg.Entrypoint = st.Entrypoint
		cfg.Cmd = nil
		cfg.ExposedPorts = exposed
		cfg.Labels = st.Expand(svc, *version, *commit)
		img, err := image(baseImg, t, *cfg)
		if err != nil {
			return err
		}
		target := strings.TrimSuffix(p.registry, "/") + "/" + svc + ":" + *tag
		if *exact != "" {
			target = *exact
		}
		to, err := name.NewTag(target, p.opts()...)
		if err != nil {
			return err
		}
		if err := p.push(ctx, svc, to, img); err != nil {
			return err
		}
	}
	return nil
}

// goBuild builds a service as services/Dockerfile does: its own module
// (GOWORK=off), static, trimmed, with the version and commit.
func goBuild(dir, svc, out, version, commit, arch string) error {
	ldflags := "-s -w -X github.com/tokendata/tokendata/shared/buildinfo.Version=" + version +
		" -X github.com/tokendata/tokendata/shared/buildinfo.Commit=" + commit
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", ldflags, "-o", out, "./cmd/"+svc)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch, "GOFLAGS=-buildvcs=false")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build %s: %w", svc, err)
	}
	return nil
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}
