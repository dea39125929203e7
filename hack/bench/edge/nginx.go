package main

// The cache tier rows: the chart's own nginx config (rendered by helm
// from charts/tokendata, as hack/chartcheck does) in front of the edge,
// measured on the hit path, against Debian's nginx serving the same bytes
// as static files with the same headers.

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"gopkg.in/yaml.v3"
)

// renderTierConfig renders the chart's cache ConfigMap with only the
// addresses and paths changed through values, and returns its nginx.conf.
func renderTierConfig(helm, chart, listen, upstream, dir string) (string, error) {
	lhost, lport, _ := net.SplitHostPort(listen)
	uhost, uport, _ := net.SplitHostPort(upstream)
	cmd := exec.Command(helm, "template", "tokendata", chart, "--show-only", "templates/cache.yaml",
		"--set", "cache.nginx.listenAddress="+lhost, "--set", "cache.port="+lport,
		"--set", "cache.nginx.upstream.host="+uhost, "--set", "cache.nginx.upstream.port="+uport,
		"--set", "cache.nginx.cachePath="+filepath.Join(dir, "cache"), "--set", "cache.nginx.tmpPath="+filepath.Join(dir, "tmp"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("helm template: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	dec := yaml.NewDecoder(bytes.NewReader(out))
	for {
		var obj struct {
			Kind string            `yaml:"kind"`
			Data map[string]string `yaml:"data"`
		}
		if err := dec.Decode(&obj); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return "", fmt.Errorf("helm template output: %w", err)
		}
		if conf := obj.Data["nginx.conf"]; obj.Kind == "ConfigMap" && conf != "" {
			return conf, nil
		}
	}
	return "", errors.New("templates/cache.yaml rendered no ConfigMap with nginx.conf")
}

// nginxDirs makes dir and its subdirectories open to nginx's workers,
// which drop to an unprivileged user when the master runs as root.
func nginxDirs(dir string, sub ...string) error {
	if os.Geteuid() == 0 {
		if err := os.Chmod(filepath.Dir(dir), 0o755); err != nil {
			return err
		}
	}
	for _, d := range append([]string{""}, sub...) {
		p := filepath.Join(dir, d)
		if err := os.MkdirAll(p, 0o755); err != nil {
			return err
		}
		if os.Geteuid() == 0 {
			if err := os.Chmod(p, 0o777); err != nil {
				return err
			}
		}
	}
	return nil
}

// startNginx checks and runs nginx with conf in the foreground, with its
// access log (stdout) into /dev/null, and waits until probe answers 200.
func startNginx(nginx, dir, conf, probe string) (*exec.Cmd, error) {
	file := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(file, []byte(conf), 0o644); err != nil {
		return nil, err
	}
	if out, err := exec.Command(nginx, "-t", "-q", "-c", file, "-e", "stderr", "-p", dir).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("nginx -t: %w\n%s", err, out)
	}
	cmd := exec.Command(nginx, "-c", file, "-e", "stderr", "-p", dir)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	if err := waitHTTP(probe); err != nil {
		stopNginx(cmd)
		return nil, err
	}
	return cmd, nil
}

// stopNginx stops nginx through its master (SIGTERM: fast shutdown) and
// waits; a master killed outright would leave its workers running.
func stopNginx(cmd *exec.Cmd) {
	_ = cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
}

// startTier runs the chart's nginx config in front of the edge and warms
// its cache: every path answers HIT before it returns.
func startTier(nginx, helm, chart, dir, edgeAddr string) (string, *exec.Cmd, error) {
	if err := nginxDirs(dir, "cache", "tmp"); err != nil {
		return "", nil, err
	}
	listen, err := freeAddr()
	if err != nil {
		return "", nil, err
	}
	conf, err := renderTierConfig(helm, chart, listen, edgeAddr, dir)
	if err != nil {
		return "", nil, err
	}
	cmd, err := startNginx(nginx, dir, conf, "http://"+listen+"/nginx-healthz")
	if err != nil {
		return "", nil, err
	}
	for _, p := range paths {
		deadline := time.Now().Add(10 * time.Second)
		for {
			h, _, err := get("http://" + listen + p)
			if err == nil && h.Get("X-Cache-Status") == "HIT" {
				break
			}
			if time.Now().After(deadline) {
				stopNginx(cmd)
				if err != nil {
					return "", nil, fmt.Errorf("the cache tier does not answer %s: %w", p, err)
				}
				return "", nil, fmt.Errorf("the cache tier does not answer %s with a HIT (last: %q)", p, h.Get("X-Cache-Status"))
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return listen, cmd, nil
}

// get fetches u without Accept-Encoding (as wrk does) and returns the
// answer's headers and body.
func get(u string) (http.Header, []byte, error) {
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		return nil, nil, err
	}
	resp, err := (&http.Transport{DisableCompression: true}).RoundTrip(req)
	if err != nil {
		return nil, nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("GET %s: %d", u, resp.StatusCode)
	}
	return resp.Header, b, err
}

// staticSkip are the headers nginx writes itself for a static file (or
// per request): the rest of the tier's answer is added as it is.
var staticSkip = map[string]bool{
	"Date": true, "Server": true, "Connection": true, "Keep-Alive": true, "Content-Length": true,
	"Content-Type": true, "Last-Modified": true, "Accept-Ranges": true, "X-Request-Id": true,
}

// nginxValue quotes v for an nginx config, refusing what would not stay
// a constant.
func nginxValue(v string) (string, error) {
	if strings.ContainsAny(v, `'\$`) {
		return "", fmt.Errorf("header value %q: not a constant nginx can quote", v)
	}
	return "'" + v + "'", nil
}

// accessLogRE finds the tier's log format and access_log directive, which
// the static server takes over: both servers log every request alike.
var accessLogRE = regexp.MustCompile(`(?s)\n[ \t]*log_format .*?\n[ \t]*access_log [^\n]*;`)

// workersRE finds the tier's worker_processes, which the static server
// takes over: both get the same number of workers (the chart derives the
// tier's from the container's CPU, 1 by default; "auto" would give the
// static server one per CPU of the machine and the comparison would be
// of worker counts, not of the hit path).
var workersRE = regexp.MustCompile(`(?m)^[ \t]*worker_processes[ \t]+([^;\s]+);`)

// startStatic runs Debian's nginx serving each path's body, as the tier
// answers it without Accept-Encoding, from a file, with the same headers
// (the file's mtime gives Last-Modified; X-Request-Id is nginx's
// $request_id, as in the tier), the tier's access log and its number of
// workers.
func startStatic(nginx, dir, tierAddr, tierConf string) (string, *exec.Cmd, error) {
	if err := nginxDirs(dir, "files", "tmp"); err != nil {
		return "", nil, err
	}
	listen, err := freeAddr()
	if err != nil {
		return "", nil, err
	}
	logging := accessLogRE.FindString(tierConf)
	if logging == "" {
		return "", nil, errors.New("no log_format and access_log in the tier's config")
	}
	workers := workersRE.FindStringSubmatch(tierConf)
	if workers == nil {
		return "", nil, errors.New("no worker_processes in the tier's config")
	}
	var locs strings.Builder
	for i, p := range paths {
		h, body, err := get("http://" + tierAddr + p)
		if err != nil {
			return "", nil, err
		}
		file := filepath.Join(dir, "files", strconv.Itoa(i))
		if err := os.WriteFile(file, body, 0o644); err != nil {
			return "", nil, err
		}
		if lm, err := http.ParseTime(h.Get("Last-Modified")); err == nil {
			if err := os.Chtimes(file, lm, lm); err != nil {
				return "", nil, err
			}
		}
		ct, err := nginxValue(h.Get("Content-Type"))
		if err != nil {
			return "", nil, err
		}
		fmt.Fprintf(&locs, "        location = %s {\n            alias %s;\n            default_type %s;\n", p, file, ct)
		fmt.Fprintf(&locs, "            add_header X-Request-Id $request_id always;\n")
		for k, vs := range h {
			if staticSkip[k] {
				continue
			}
			for _, v := range vs {
				q, err := nginxValue(v)
				if err != nil {
					return "", nil, err
				}
				fmt.Fprintf(&locs, "            add_header %s %s always;\n", k, q)
			}
		}
		locs.WriteString("        }\n")
	}
	tmp := filepath.Join(dir, "tmp")
	conf := fmt.Sprintf(`daemon off;
worker_processes %[5]s;
pid %[1]s/nginx.pid;
error_log stderr warn;
events {
    worker_connections 1024;
}
http {
    server_tokens off;
    sendfile on;
    tcp_nopush on;
    keepalive_timeout 65s;
    client_body_temp_path %[1]s/client_body;
    proxy_temp_path %[1]s/proxy;
    fastcgi_temp_path %[1]s/fastcgi;
    uwsgi_temp_path %[1]s/uwsgi;
    scgi_temp_path %[1]s/scgi;
    types {}
    etag off;
%[2]s
    server {
        listen %[3]s;
        location = /nginx-healthz {
            access_log off;
            return 200 "ok";
        }
%[4]s    }
}
`, tmp, logging, listen, locs.String(), workers[1])
	cmd, err := startNginx(nginx, dir, conf, "http://"+listen+"/nginx-healthz")
	if err != nil {
		return "", nil, err
	}
	return listen, cmd, nil
}
