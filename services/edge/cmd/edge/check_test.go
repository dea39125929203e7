package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tokendata/tokendata/shared/config"
	"github.com/tokendata/tokendata/shared/contract"
	"github.com/tokendata/tokendata/shared/store"
	"github.com/tokendata/tokendata/shared/testkit/redistest"
)

// TestCheck: the edge's check reads Redis as serving would: a domain
// nobody wrote fails with what to start, one whose collector fails
// permanently with that collector's remedy; without REDIS_URL it fails
// before anything else.
func TestCheck(t *testing.T) {
	var out, errw bytes.Buffer
	app.Stdout, app.Stderr = &out, &errw
	defer func() { app.Stdout, app.Stderr = nil, nil }()
	t.Setenv("TOKEN_MINT", config.DemoMint)
	t.Setenv("TOKEN_MAX_SUPPLY", config.DemoMaxSupply)
	if code := app.Run(context.Background(), []string{"check"}); code != 1 ||
		!strings.Contains(out.String(), "FAIL  REDIS_URL: not set: the edge service reads and writes its documents in Redis") {
		t.Errorf("without Redis: exit %d\n%s", code, out.String())
	}

	rs := redistest.Start(t)
	t.Setenv("REDIS_URL", rs.URL())
	opts, _ := store.ParseRedisURL(rs.URL())
	st := store.New(store.NewRedis(opts), config.DemoMint)
	defer func() { _ = st.Close() }()
	now := time.Now().UTC()
	if err := st.WriteStatus(context.Background(), contract.Status{Collector: contract.CollectorHolders, Runs: map[contract.Domain]contract.Run{
		contract.DomainHolders: {StartedAt: now, FinishedAt: now, ErrorKind: contract.ErrKindUnsupported, Error: "getProgramAccounts: -32010",
			Remedy: "use an RPC node that indexes token accounts by mint"}}}); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	code := app.Run(context.Background(), []string{"check"})
	for _, want := range []string{
		"ok    REDIS_URL: Redis at " + rs.Addr() + " answers",
		"FAIL  document: not in Redis, and the supply collector has written no status record\n        remedy: start the supply collector",
		"warn  document: not in Redis, and the supply collector has written no status record", // metadata: served from the token file
		"FAIL  document: not in Redis: the holders collector's last run failed (enumeration_unsupported: getProgramAccounts: -32010)\n        remedy: use an RPC node that indexes token accounts by mint",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the report lacks %q:\n%s", want, out.String())
		}
	}
	if code != 1 {
		t.Errorf("exit %d", code)
	}
}
