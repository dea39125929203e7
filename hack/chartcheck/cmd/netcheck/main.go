// Command netcheck is the client the node test (node_test.go) runs as a
// pod on the local cluster, where the chart's NetworkPolicies decide what
// it reaches: from the Ingress controller's namespace it stands for the
// public's traffic through the cache tier; from another namespace it
// proves that nothing else gets in. It prints JSON lines on stdout, which
// the test reads with kubectl logs.
//
//	netcheck get [-timeout 5s] [-wait 0] URL...
//	    one GET each: {"url","status","body"} or {"url","error"}; with
//	    -wait, the first URL is tried again until it answers, for at most
//	    that long (a new pod's traffic is refused until the NetworkPolicy
//	    controller has programmed its rules)
//	netcheck loop -duration 60s [-interval 20ms] [-wait 60s] URL...
//	    waits (-wait) for the first URL to answer 200 and prints
//	    {"ready":true}, then GETs in turn on a new connection each (a
//	    listener that closes refuses the next one), until the duration
//	    ends or `netcheck stop` (kubectl exec) asks it to:
//	    {"sent","failed","errors":[first 20]} last
//	netcheck stop
//	    ends the loop of this pod and prints its summary
//	netcheck events -duration 30s [-wait 60s] -until TEXT URL
//	    reads a server-sent event stream (connecting again until it
//	    answers, at most -wait): {"event","id","data"} per event, until an
//	    event's data holds TEXT
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
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

func client(timeout time.Duration) *http.Client {
	return &http.Client{Timeout: timeout, Transport: &http.Transport{DisableKeepAlives: true}}
}

func fetch(c *http.Client, url string) (int, string, error) {
	resp, err := c.Get(url)
	if err != nil {
		return 0, "", err
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, string(b), err
}

// waitAnswer tries url until it answers (200 if ok200), at most d.
func waitAnswer(c *http.Client, url string, d time.Duration, ok200 bool) bool {
	end := time.Now().Add(d)
	for {
		status, _, err := fetch(c, url)
		if err == nil && (!ok200 || status == http.StatusOK) {
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
	_ = fs.Parse(args)
	c := client(*timeout)
	if *wait > 0 && fs.NArg() > 0 {
		waitAnswer(c, fs.Arg(0), *wait, false)
	}
	for _, u := range fs.Args() {
		status, body, err := fetch(c, u)
		if err != nil {
			_ = out.Encode(map[string]any{"url": u, "error": err.Error()})
			continue
		}
		_ = out.Encode(map[string]any{"url": u, "status": status, "body": body})
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
	_ = fs.Parse(args)
	if fs.NArg() == 0 {
		return fmt.Errorf("loop: no URL")
	}
	if *workers < 1 {
		return fmt.Errorf("loop: -workers %d: at least 1", *workers)
	}
	c := client(*timeout)
	if !waitAnswer(c, fs.Arg(0), *wait, true) {
		return fmt.Errorf("loop: %s did not answer 200 within %s", fs.Arg(0), *wait)
	}
	var (
		mu           sync.Mutex
		sent, failed int
		errs         []string
		done         = make(chan struct{})
		summary      = func() map[string]any {
			mu.Lock()
			defer mu.Unlock()
			return map[string]any{"sent": sent, "failed": failed, "errors": errs}
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
				status, _, err := fetch(c, u)
				mu.Lock()
				sent++
				if err != nil || status != http.StatusOK {
					failed++
					if len(errs) < 20 {
						msg := fmt.Sprintf("%s %s: status %d", time.Now().UTC().Format("15:04:05.000"), u, status)
						if err != nil {
							msg = fmt.Sprintf("%s %s: %v", time.Now().UTC().Format("15:04:05.000"), u, err)
						}
						errs = append(errs, msg)
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
	status, body, err := fetch(client(10*time.Second), "http://"+control+"/stop")
	if err != nil {
		return err
	}
	if status != http.StatusOK {
		return fmt.Errorf("stop: status %d", status)
	}
	fmt.Println(body)
	return nil
}

func events(out *json.Encoder, args []string) error {
	fs := flag.NewFlagSet("events", flag.ExitOnError)
	duration := fs.Duration("duration", 30*time.Second, "how long to read")
	wait := fs.Duration("wait", time.Minute, "how long the stream may take to answer")
	until := fs.String("until", "", "stop at the first event whose data holds this")
	_ = fs.Parse(args)
	if fs.NArg() != 1 || *until == "" {
		return fmt.Errorf("events: -until TEXT and one URL")
	}
	var resp *http.Response
	end := time.Now().Add(*wait)
	for {
		r, err := (&http.Client{Timeout: *duration}).Get(fs.Arg(0))
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
