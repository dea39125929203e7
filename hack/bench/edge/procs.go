package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/tokendata/tokendata/services/edge/edgetest"
	"github.com/tokendata/tokendata/shared/store"
	"github.com/tokendata/tokendata/shared/testkit/freeport"
)

// The processes the benches start and read: free ports, a readiness wait,
// a process's RSS, and a real redis-server with the documents written.

func freeAddr() (string, error) {
	p, err := freeport.Take()
	if err != nil {
		return "", err
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(p)), nil
}

func waitHTTP(url string) error {
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get(url)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("%s did not answer 200 within 15s", url)
}

func rssMB(pid int) float64 {
	f, err := os.Open(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return 0
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 64)
			return kb / 1024
		}
	}
	return 0
}

// startRedis runs a redis-server on a free loopback port, its files in
// dir, and writes the four domains' documents and the collectors' status
// records into it as the collectors do. stop ends it (by its PID).
func startRedis(dir string) (url string, st *store.Store, stop func(), err error) {
	redisAddr, err := freeAddr()
	if err != nil {
		return "", nil, nil, err
	}
	_, port, _ := net.SplitHostPort(redisAddr)
	redis := exec.Command("redis-server", "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", dir, "--loglevel", "warning")
	if err := redis.Start(); err != nil {
		return "", nil, nil, fmt.Errorf("start redis-server: %w", err)
	}
	url = "redis://" + redisAddr
	opts, err := store.ParseRedisURL(url)
	if err == nil {
		st = store.New(store.NewRedis(opts), edgetest.Token().Mint)
	}
	stop = func() {
		if st != nil {
			_ = st.Close()
		}
		_ = redis.Process.Kill()
		_ = redis.Wait()
	}
	if err != nil {
		stop()
		return "", nil, nil, err
	}
	ctx := context.Background()
	deadline := time.Now().Add(10 * time.Second)
	for st.Ping(ctx) != nil {
		if time.Now().After(deadline) {
			stop()
			return "", nil, nil, errors.New("redis-server did not answer within 10s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := edgetest.WriteAll(ctx, st, time.Now()); err != nil {
		stop()
		return "", nil, nil, err
	}
	return url, st, stop, nil
}
