package snapshot

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tokendata/tokendata/services/edge/edgetest"
	"github.com/tokendata/tokendata/shared/contract"
)

var t0 = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

// read is domain d's fixture document as read from the store, updated at
// at, expiring ttl after it.
func read(t *testing.T, d contract.Domain, doc any, at time.Time, ttl time.Duration) ReadDoc {
	t.Helper()
	env, err := contract.NewEnvelope(edgetest.Token().Mint, d, at, edgetest.Source(d, false), doc)
	if err != nil {
		t.Fatal(err)
	}
	return ReadDoc{Env: env, Expires: at.Add(ttl)}
}

// TestMerge: the store's valid document replaces ours even when ours is
// dated later; a refused one never replaces a good one and is named; a
// domain the store no longer has keeps our copy until its own TTL; the
// statuses and the history are carried when not read again.
func TestMerge(t *testing.T) {
	later := read(t, contract.DomainSupply, edgetest.Supply(), t0, time.Hour)
	market := read(t, contract.DomainMarket, edgetest.Market(), t0, time.Minute)
	statuses := map[string]contract.Status{contract.CollectorSupply: {}}
	prev, problems := Merge(nil, map[contract.Domain]ReadDoc{contract.DomainSupply: later, contract.DomainMarket: market}, nil, statuses, t0)
	if len(problems) != 0 || prev.Supply() == nil || prev.Market() == nil || prev.Holders() != nil || prev.Metadata() != nil {
		t.Fatalf("first merge: problems %v, docs %v", problems, prev.Docs)
	}
	prev.Hist = map[HistKey]*HistorySeries{{contract.MeasurePriceUSD, contract.Window24h}: {}}

	// an earlier valid supply replaces ours; the market is gone from the store
	earlier := read(t, contract.DomainSupply, edgetest.Supply(), t0.Add(-time.Minute), time.Hour)
	now := t0.Add(30 * time.Second)
	next, problems := Merge(prev, map[contract.Domain]ReadDoc{contract.DomainSupply: earlier}, nil, nil, now)
	if len(problems) != 0 || !next.Docs[contract.DomainSupply].Env.UpdatedAt.Equal(earlier.Env.UpdatedAt) {
		t.Errorf("the store's earlier document did not replace ours: %v", problems)
	}
	if next.Docs[contract.DomainMarket] != prev.Docs[contract.DomainMarket] {
		t.Error("a domain the store no longer has lost our copy before its TTL")
	}
	if next.Statuses == nil || next.Hist == nil || next.History(contract.MeasurePriceUSD, contract.Window24h) == nil {
		t.Error("the statuses or the history were not carried")
	}

	// a refused supply keeps the previous one; past its TTL the market goes
	bad := edgetest.Supply()
	bad.CirculatingRaw = "1"
	refused := read(t, contract.DomainSupply, bad, t0.Add(time.Minute), time.Hour)
	now = t0.Add(2 * time.Minute)
	last, problems := Merge(next, map[contract.Domain]ReadDoc{contract.DomainSupply: refused}, nil, nil, now)
	if len(problems) != 1 || !strings.Contains(last.Rejected[contract.DomainSupply], "circulating_raw") {
		t.Errorf("the refused supply: problems %v, rejected %v", problems, last.Rejected)
	}
	if last.Docs[contract.DomainSupply] != next.Docs[contract.DomainSupply] {
		t.Error("a refused document replaced a good one")
	}
	if last.Market() != nil {
		t.Error("a document past its TTL was kept")
	}

	// the store could not be read: the rejections stay known, a read error is named
	down, problems := Merge(last, nil, map[contract.Domain]error{contract.DomainHolders: errors.New("holders: unreadable")}, nil, now)
	if len(problems) != 1 || down.Rejected[contract.DomainSupply] == "" || down.Rejected[contract.DomainHolders] == "" {
		t.Errorf("an unreadable store: problems %v, rejected %v", problems, down.Rejected)
	}
}

// TestExpire: a state with nothing past its TTL is returned as is; else a
// copy without the expired documents, carrying the rest.
func TestExpire(t *testing.T) {
	st, _ := Merge(nil, map[contract.Domain]ReadDoc{
		contract.DomainSupply: read(t, contract.DomainSupply, edgetest.Supply(), t0, time.Hour),
		contract.DomainMarket: read(t, contract.DomainMarket, edgetest.Market(), t0, time.Minute),
	}, nil, map[string]contract.Status{}, t0)
	if Expire(st, t0.Add(time.Second)) != st {
		t.Error("nothing expired, yet Expire copied the state")
	}
	next := Expire(st, t0.Add(time.Minute))
	if next == st || next.Market() != nil || next.Supply() == nil || st.Market() == nil || next.Statuses == nil {
		t.Errorf("Expire at the market's TTL: %v (before: %v)", next.Docs, st.Docs)
	}
}
