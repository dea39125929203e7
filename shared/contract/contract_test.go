package contract

import (
	"errors"
	"strings"
	"testing"
	"time"
)

const mint = "Ag2ntwSLqsLLyasGT6KpgbL8EMsSfmmsjDCrG7noZ2HR"

func TestKeys(t *testing.T) {
	if got := DocumentKey(mint, DomainMarket); got != "tokendata:"+mint+":market" {
		t.Error(got)
	}
	if got := StatusKey(mint, CollectorHolders); got != "tokendata:"+mint+":status:holders" {
		t.Error(got)
	}
	if got := UpdatesChannel(mint); got != "tokendata:"+mint+":updates" {
		t.Error(got)
	}
}

func TestDefaultTimingsFollowTheContract(t *testing.T) {
	for _, d := range Domains {
		tm, ok := DefaultTimings[d]
		if !ok {
			t.Fatalf("no default timing for %s", d)
		}
		if err := tm.Validate(); err != nil {
			t.Errorf("%s: %v", d, err)
		}
	}
	// A stale price is worse than none: market expires soonest.
	for _, d := range Domains {
		if d != DomainMarket && DefaultTimings[d].TTL <= DefaultTimings[DomainMarket].TTL {
			t.Errorf("%s expires before market", d)
		}
	}
	bad := []Timing{
		{Refresh: 0, StaleAfter: time.Minute, TTL: time.Hour},
		{Refresh: time.Minute, StaleAfter: time.Second, TTL: time.Hour},
		{Refresh: time.Minute, StaleAfter: time.Minute, TTL: 119 * time.Second},
	}
	for _, tm := range bad {
		if tm.Validate() == nil {
			t.Errorf("%+v accepted", tm)
		}
	}
}

func TestEnvelope(t *testing.T) {
	env, err := NewEnvelope(mint, DomainHolders, time.Date(2026, 1, 2, 3, 4, 5, 678901234, time.FixedZone("x", 3600)),
		Source{Name: UpstreamSolanaRPC}, Holders{Holders: 3})
	if err != nil {
		t.Fatal(err)
	}
	if err := env.Validate(); err != nil {
		t.Fatal(err)
	}
	if env.UpdatedAt.Location() != time.UTC || env.UpdatedAt.Nanosecond() != 678000000 {
		t.Errorf("updated_at not UTC milliseconds: %v", env.UpdatedAt)
	}
	var h Holders
	if err := env.Decode(&h); err != nil || h.Holders != 3 {
		t.Errorf("decode: %+v %v", h, err)
	}
	env.SchemaVersion = 2
	if err := env.Validate(); !errors.Is(err, ErrUnknownSchema) {
		t.Errorf("schema 2: %v", err)
	}
}

func TestValidateAtRefusesFutureDates(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		at time.Time
		ok bool
	}{
		{now.Add(-time.Hour), true},
		{now, true},
		{now.Add(MaxClockSkew), true},
		{now.Add(MaxClockSkew + time.Second), false},
		{time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC), false},
	} {
		env, err := NewEnvelope("mint", DomainMarket, tc.at, Source{Name: "x"}, map[string]int{"a": 1})
		if err != nil {
			t.Fatal(err)
		}
		err = env.ValidateAt(now)
		if (err == nil) != tc.ok {
			t.Errorf("updated_at %s: err %v, want ok=%v", tc.at, err, tc.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "ahead of this reader's clock") {
			t.Errorf("unclear error: %v", err)
		}
	}
}
