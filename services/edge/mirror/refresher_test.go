package mirror

import (
	"slices"
	"testing"

	"github.com/tokendata/tokendata/shared/contract"
)

// TestDrainCollectsNotifiedDomains: queued notifications are read at once,
// each domain once.
func TestDrainCollectsNotifiedDomains(t *testing.T) {
	ch := make(chan contract.Domain, 8)
	for _, d := range []contract.Domain{contract.DomainSupply, contract.DomainMarket, contract.DomainSupply} {
		ch <- d
	}
	got := drain(ch, contract.DomainMarket)
	if !slices.Equal(got, []contract.Domain{contract.DomainMarket, contract.DomainSupply}) || len(ch) != 0 {
		t.Fatalf("drain = %v, %d left", got, len(ch))
	}
}
