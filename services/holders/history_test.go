package holders_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/tokendata/tokendata/services/holders/holderstest"
	"github.com/tokendata/tokendata/shared/contract"
)

// TestPollAppendsTheHoldersHistory: a good count appends the holder
// count at the document's time.
func TestPollAppendsTheHoldersHistory(t *testing.T) {
	_, url := sim(t, holderstest.ClassicToken(500))
	f := newCollector(t, setup{url: url, mint: holderstest.ClassicMint})
	if err := f.c.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	h, doc := readHolders(t, f.store)
	r, err := f.store.History(context.Background(), contract.MeasureHolders, contract.Window24h, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Points) != 1 || r.Points[0].V != strconv.FormatUint(h.Holders, 10) || r.Points[0].T != doc.UpdatedAt.UnixMilli() {
		t.Errorf("holders history = %+v, want %d at %s", r.Points, h.Holders, doc.UpdatedAt)
	}
}
