package collector_test

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tokendata/tokendata/shared/collector"
	"github.com/tokendata/tokendata/shared/config"
	"github.com/tokendata/tokendata/shared/contract"
)

// TestPokePollsNow: a poke makes Run poll at once, long before the next
// tick; pokes made while a poll runs coalesce into one poll after it; a
// poke before Run, or of a domain without a job, is refused.
func TestPokePollsNow(t *testing.T) {
	var polls atomic.Int32
	release := make(chan struct{})
	started := make(chan struct{}, 10)
	r, _, _ := newRunner(t, func(context.Context) (collector.Result, error) {
		polls.Add(1)
		started <- struct{}{}
		<-release
		return collector.Result{Doc: contract.Holders{Holders: 1}}, nil
	})
	r.Jobs[0].Timing.Refresh = time.Hour
	if r.Poke(contract.DomainHolders) {
		t.Fatal("a poke before Run was taken")
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = r.Run(ctx) })
	defer func() { cancel(); close(release); wg.Wait() }()

	<-started // the first poll runs
	for range 5 {
		if !r.Poke(contract.DomainHolders) {
			t.Fatal("poke refused while Run runs")
		}
	}
	if r.Poke(contract.DomainMarket) {
		t.Error("a poke of a domain without a job was taken")
	}
	release <- struct{}{}
	select {
	case <-started: // one poll for the five pokes
	case <-time.After(10 * time.Second):
		t.Fatal("no poll after the pokes")
	}
	release <- struct{}{}
	select {
	case <-started:
		t.Fatal("five pokes during one poll made more than one poll")
	case <-time.After(300 * time.Millisecond):
	}
	if n := polls.Load(); n != 2 {
		t.Errorf("%d polls, want 2", n)
	}
}

// TestSubscriptionsInStatus: the subscriptions set are in every status
// record from then on, redacted, and WriteSubscriptions writes one at once.
func TestSubscriptionsInStatus(t *testing.T) {
	ctx := context.Background()
	r, s, _ := newRunner(t, func(context.Context) (collector.Result, error) {
		return collector.Result{Doc: contract.Holders{Holders: 1}}, nil
	})
	r.Redactor = config.NewRedactor("wss://node.example/?api-key=k3ySECRET0001")
	if err := r.RunOnce(ctx, contract.DomainHolders); err != nil {
		t.Fatal(err)
	}
	sub := contract.LedgerSubscription{Node: 1, State: contract.SubscriptionConnecting, Since: time.Now().UTC(),
		Error: "dial wss://node.example/?api-key=k3ySECRET0001: refused"}
	r.WriteSubscriptions(ctx, []contract.LedgerSubscription{sub})
	st, err := s.ReadStatuses(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := st[contract.CollectorHolders].Subscriptions
	if len(got) != 1 || got[0].State != contract.SubscriptionConnecting || got[0].Node != 1 {
		t.Fatalf("status record's subscriptions: %+v", got)
	}
	if contains := got[0].Error; contains == sub.Error || len(contains) == 0 || strings.Contains(contains, "k3ySECRET0001") {
		t.Errorf("subscription error not redacted: %q", contains)
	}
	if err := r.RunOnce(ctx, contract.DomainHolders); err != nil {
		t.Fatal(err)
	}
	if st, _ := s.ReadStatuses(ctx); len(st[contract.CollectorHolders].Subscriptions) != 1 {
		t.Errorf("the next run's record lost the subscriptions: %+v", st[contract.CollectorHolders])
	}
}
