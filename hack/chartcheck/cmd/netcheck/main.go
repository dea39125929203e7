// Command netcheck is the client the node test (node_test.go) runs as a
// pod on the local cluster, where the chart's NetworkPolicies decide what
// it reaches: from the Ingress controller's namespace it stands for the
// public's traffic through the cache tier; from another namespace it
// proves that nothing else gets in. It prints JSON lines on stdout, which
// the test reads with kubectl logs.
//
//	netcheck get [-timeout 5s] [-wait 0] URL...
//	    one GET each: {"url","status","body"} or {"url","error"}, and
//	    over TLS "cert", the SHA-256 of the certificate presented; with
//	    -wait, the first URL is tried again until it answers, for at most
//	    that long (a new pod's traffic is refused until the NetworkPolicy
//	    controller has programmed its rules)
//	netcheck loop -duration 60s [-interval 20ms] [-wait 60s] [-workers 1] [-keepalive] URL...
//	    waits (-wait) for the first URL to answer 200 and prints
//	    {"ready":true}, then GETs in turn on a new connection each (a
//	    listener that closes refuses the next one; with -keepalive, on
//	    connections kept as a browser keeps them), until the duration
//	    ends or `netcheck stop` (kubectl exec) asks it to:
//	    {"sent","failed","errors":[first 20]} last
//	netcheck stop
//	    ends the loop of this pod and prints its summary
//	netcheck events -duration 30s [-wait 60s] -until TEXT URL
//	    reads a server-sent event stream (connecting again until it
//	    answers, at most -wait): {"event","id","data","at"} per event (at:
//	    when it was read, RFC 3339), until an
//	    event's data holds TEXT
//
// Every command but stop also takes -ca PEM (the only CA an https URL's
// certificate may chain to; without it, the system's) and -connect
// HOST:PORT (every connection goes there, whatever the URL's host, which
// stays the TLS server name and the Host header): a client of an Ingress
// controller's Service asking for the public host name.
package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"os"
	"strings"
	"sync"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: netcheck get|loop|events [flags] URL...")
		os.Exit(2)
	}
	out := json.NewEncoder(os.Stdout)
	var err error
	switch os.Args[1] {
	case "get":
		err = get(out, os.Args[2:])
	case "loop":
		err = loop(out, os.Args[2:])
	case "events":
		err = events(out, os.Args[2:])
	case "stop":
		err = stop()
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "netcheck:", err)
		os.Exit(1)
	}
}

// dialing holds the flags every command but stop takes: where to connect
// and which CA to trust.
type dialing struct {
	ca      string
	connect string
	// keepAlive: connections are kept for the next request (up to conns
	// idle at once), as a browser's are; without it each request opens
	// its own.
	keepAlive bool
	conns     int
}

func (d *dialing) flags(fs *flag.FlagSet) {
	fs.StringVar(&d.ca, "ca", "", "PEM of the only CA an https URL's certificate may chain to")
	fs.StringVar(&d.connect, "connect", "", "HOST:PORT every connection goes to (the URL's host stays the TLS name)")
}

// client makes a client on a new connection per request (a listener that
// closes refuses the next one) unless keepAlive, with a timeout per
// request (0: none).
func (d *dialing) client(timeout time.Duration) (*http.Client, error) {
	tr := &http.Transport{DisableKeepAlives: !d.keepAlive, MaxIdleConnsPerHost: max(d.conns, 2)}
	if d.ca != "" {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM([]byte(d.ca)) {
			return nil, fmt.Errorf("-ca: no PEM certificate")
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	if d.connect != "" {
		to := d.connect
		var dl net.Dialer
		tr.DialContext = func(ctx context.Context, network, _ string) (net.Conn, error) {
			return dl.DialContext(ctx, network, to)
		}
	}
	return &http.Client{Timeout: timeout, Transport: tr}, nil
}

func client(timeout time.Duration) *http.Client {
	c, _ := (&dialing{}).client(timeout)
	return c
}

type answer struct {
	status int
	body   string
	cert   string // over TLS: the SHA-256 of the leaf certificate, hex
	server string // the Server header: who answered (nginx, the edge, a proxy)
}

func fetch(c *http.Client, url string) (answer, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return answer{}, err
	}
	return do(c, req)
}

func do(c *http.Client, req *http.Request) (answer, error) {
	resp, err := c.Do(req)
	if err != nil {
		return answer{}, err
	}
	defer func() { _ = resp.Body.Close() }()
	a := answer{status: resp.StatusCode, server: resp.Header.Get("Server")}
	if resp.TLS != nil && len(resp.TLS.PeerCertificates) > 0 {
		sum := sha256.Sum256(resp.TLS.PeerCertificates[0].Raw)
		a.cert = hex.EncodeToString(sum[:])
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	a.body = string(b)
	return a, err
}

// truncate cuts s to n bytes at most.
func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// tracedFetch is fetch whose error says how far the request got and
// when (the name resolved, the connection made and to where, the request
// written): a failure in a loop tells the cluster's DNS from a Service's
// endpoints from a backend that took the request and never answered.
func tracedFetch(c *http.Client, url string) (answer, error) {
	var (
		mu     sync.Mutex
		phases []string
	)
	start := time.Now()
	note := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		phases = append(phases, fmt.Sprintf("%s at %dms", fmt.Sprintf(format, args...), time.Since(start).Milliseconds()))
	}
	trace := &httptrace.ClientTrace{
		DNSDone: func(i httptrace.DNSDoneInfo) {
			if i.Err != nil {
				note("name not resolved (%v)", i.Err)
				return
			}
			note("name resolved")
		},
		ConnectDone: func(_, addr string, err error) {
			if err != nil {
				note("connection to %s failed (%v)", addr, err)
				return
			}
			note("connected to %s", addr)
		},
		WroteRequest:         func(httptrace.WroteRequestInfo) { note("request written") },
		GotFirstResponseByte: func() { note("first byte") },
	}
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), http.MethodGet, url, nil)
	if err != nil {
		return answer{}, err
	}
	a, err := do(c, req)
	if err != nil {
		mu.Lock()
		defer mu.Unlock()
		if len(phases) == 0 {
			phases = []string{"no name resolved, no connection made"}
		}
		err = fmt.Errorf("%w [%s]", err, strings.Join(phases, "; "))
	}
	return a, err
}

// settled asks url until it answers 200 n times in a row (a failure
// starts the count again), until end. A new pod's address is admitted by
// the NetworkPolicy engine of each node in turn (kube-router REJECTs an
// address it has not yet admitted): one answer tells only that the node of
// the one endpoint that answered admits it, and n answers in a row, each
// on a connection of its own balanced over the endpoints, that all of them
// do. What a loop counts starts after that, as it would for a client that
// has run for a while.
func settled(c *http.Client, url string, n int, end time.Time) bool {
	for streak := 0; streak < n; {
		if a, err := fetch(c, url); err == nil && a.status == http.StatusOK {
			streak++
			continue
		}
		streak = 0
		if time.Now().After(end) {
			return false
		}
		time.Sleep(200 * time.Millisecond)
	}
	return true
}

// waitAnswer tries url until it answers (200 if ok200), at most d.
func waitAnswer(c *http.Client, url string, d time.Duration, ok200 bool) bool {
	end := time.Now().Add(d)
	for {
		a, err := fetch(c, url)
		if err == nil && (!ok200 || a.status == http.StatusOK) {
			return true
		}
		if time.Now().After(end) {
			return false
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func get(out *json.Encoder, args []string) error {
	fs := flag.NewFlagSet("get", flag.ExitOnError)
	timeout := fs.Duration("timeout", 5*time.Second, "per request")
	wait := fs.Duration("wait", 0, "retry the first URL until it answers, at most this long")
	var d dialing
	d.flags(fs)
	_ = fs.Parse(args)
	c, err := d.client(*timeout)
	if err != nil {
		return err
	}
	if *wait > 0 && fs.NArg() > 0 {
		waitAnswer(c, fs.Arg(0), *wait, false)
	}
	for _, u := range fs.Args() {
		a, err := fetch(c, u)
		if err != nil {
			_ = out.Encode(map[string]any{"url": u, "error": err.Error()})
			continue
		}
		line := map[string]any{"url": u, "status": a.status, "body": a.body}
		if a.cert != "" {
			line["cert"] = a.cert
		}
		_ = out.Encode(line)
	}
	return nil
}

// control is where a loop listens for `netcheck stop`, in its own pod.
const control = "127.0.0.1:8089"

func loop(out *json.Encoder, args []string) error {
	fs := flag.NewFlagSet("loop", flag.ExitOnError)
	duration := fs.Duration("duration", time.Minute, "how long at most")
	interval := fs.Duration("interval", 20*time.Millisecond, "pause between two requests")
	timeout := fs.Duration("timeout", 5*time.Second, "per request")
	wait := fs.Duration("wait", time.Minute, "how long the first URL may take to answer 200")
	workers := fs.Int("workers", 1, "requests in flight at once: each worker loops over the URLs")
	settle := fs.Int("settle", 20, "answers 200 in a row the first URL gives before the loop starts counting (within -wait)")
	var d dialing
	d.flags(fs)
	fs.BoolVar(&d.keepAlive, "keepalive", false, "keep connections for the next requests (default: a new one each)")
	_ = fs.Parse(args)
	d.conns = *workers
	if fs.NArg() == 0 {
		return fmt.Errorf("loop: no URL")
	}
	if *workers < 1 {
		return fmt.Errorf("loop: -workers %d: at least 1", *workers)
	}
	c, err := d.client(*timeout)
	if err != nil {
		return err
	}
	if !settled(c, fs.Arg(0), max(*settle, 1), time.Now().Add(*wait)) {
		return fmt.Errorf("loop: %s did not answer 200 (%d in a row) within %s", fs.Arg(0), max(*settle, 1), *wait)
	}
	var (
		mu           sync.Mutex
		sent, failed int
		errs         []string
		// when the first and the last failed request were sent (a
		// timeout fails its request -timeout later): how long a fault
		// lasted for the clients
		firstFail, lastFail time.Time
		done                = make(chan struct{})
		summary             = func() map[string]any {
			mu.Lock()
			defer mu.Unlock()
			s := map[string]any{"sent": sent, "failed": failed, "errors": errs}
			if failed > 0 {
				s["first_failure"], s["last_failure"] = firstFail, lastFail
			}
			return s
		}
	)
	stopped := make(chan []byte, 1)
	mux := http.NewServeMux()
	mux.HandleFunc("/stop", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-done:
		default:
			close(done)
		}
		b, _ := json.Marshal(summary())
		_, _ = w.Write(b)
		stopped <- b
	})
	ln, err := net.Listen("tcp", control)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	_ = out.Encode(map[string]any{"ready": true})
	end := time.After(*duration)
	over := make(chan struct{}) // the duration ended
	for w := range *workers {
		go func() {
			for i := w; ; i++ {
				select {
				case <-done:
					return
				case <-over:
					return
				default:
				}
				u := fs.Arg(i % fs.NArg())
				sentAt := time.Now().UTC()
				a, err := tracedFetch(c, u)
				status := a.status
				mu.Lock()
				sent++
				if err != nil || status != http.StatusOK {
					failed++
					if failed == 1 || sentAt.Before(firstFail) {
						firstFail = sentAt
					}
					if sentAt.After(lastFail) {
						lastFail = sentAt
					}
					// who answered: the Server header and the body's start
					// (a proxy's 502 from the cache tier's, say); the
					// first 199 failures and the latest one are kept
					msg := fmt.Sprintf("%s %s: status %d (server %q, body %q)", time.Now().UTC().Format("15:04:05.000"), u, status,
						a.server, truncate(a.body, 80))
					if err != nil {
						msg = fmt.Sprintf("%s %s: %v", time.Now().UTC().Format("15:04:05.000"), u, err)
					}
					msg += " (sent " + sentAt.Format("15:04:05.000") + ")"
					if len(errs) < 200 {
						errs = append(errs, msg)
					} else {
						errs[199] = msg
					}
				}
				mu.Unlock()
				time.Sleep(*interval)
			}
		}()
	}
	select {
	case <-done:
		// Stay up until the pod is deleted (or the duration ends): the
		// exec'd `netcheck stop` is killed if the pod's process ends
		// before it printed.
		<-stopped
		_ = out.Encode(summary())
		<-end
		return nil
	case <-end:
		close(over)
		return out.Encode(summary())
	}
}

// stop ends the loop running in this pod and prints its summary.
func stop() error {
	a, err := fetch(client(10*time.Second), "http://"+control+"/stop")
	if err != nil {
		return err
	}
	if a.status != http.StatusOK {
		return fmt.Errorf("stop: status %d", a.status)
	}
	fmt.Println(a.body)
	return nil
}

func events(out *json.Encoder, args []string) error {
	fs := flag.NewFlagSet("events", flag.ExitOnError)
	duration := fs.Duration("duration", 30*time.Second, "how long to read")
	wait := fs.Duration("wait", time.Minute, "how long the stream may take to answer")
	until := fs.String("until", "", "stop at the first event whose data holds this")
	var d dialing
	d.flags(fs)
	_ = fs.Parse(args)
	if fs.NArg() != 1 || *until == "" {
		return fmt.Errorf("events: -until TEXT and one URL")
	}
	c, err := d.client(*duration)
	if err != nil {
		return err
	}
	var resp *http.Response
	end := time.Now().Add(*wait)
	for {
		r, err := c.Get(fs.Arg(0))
		if err == nil && r.StatusCode == http.StatusOK {
			resp = r
			break
		}
		if err == nil {
			_ = r.Body.Close()
			err = fmt.Errorf("status %d", r.StatusCode)
		}
		if time.Now().After(end) {
			return fmt.Errorf("events: %w", err)
		}
		time.Sleep(500 * time.Millisecond)
	}
	defer func() { _ = resp.Body.Close() }()
	_ = out.Encode(map[string]any{"ready": true})
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	ev := map[string]string{}
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			if len(ev) > 0 {
				ev["at"] = time.Now().UTC().Format(time.RFC3339Nano)
				_ = out.Encode(ev)
				if strings.Contains(ev["data"], *until) {
					return nil
				}
				ev = map[string]string{}
			}
			continue
		}
		if strings.HasPrefix(line, ":") {
			continue
		}
		k, v, _ := strings.Cut(line, ":")
		ev[k] = strings.TrimPrefix(v, " ")
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("events: no event with %q: %w", *until, err)
	}
	return fmt.Errorf("events: the stream ended without an event with %q", *until)
}
