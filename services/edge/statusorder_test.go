package edge

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/tokendata/tokendata/services/edge/answer"
	"github.com/tokendata/tokendata/services/edge/edgetest"
	"github.com/tokendata/tokendata/services/edge/view"
	"github.com/tokendata/tokendata/shared/contract"
)

// TestStatusNeverAheadOfTheData: a good poll's document, then a failed
// poll's status record, both in the store before one read. While that
// read is published, /api/status may still show the earlier runs, but
// once it shows the failed run, /api/price serves the good poll's
// document: a client told "the aggregator is failing" reads the last
// good price, never an older one. Repeated, for the window (the render
// of the new view) is short.
func TestStatusNeverAheadOfTheData(t *testing.T) {
	h := newHarness(t, nil)
	h.writeAll()
	h.refresh()
	for i := range 30 {
		h.clock.Add(time.Second)
		h.write(contract.DomainMarket, edgetest.Market(), 0)
		good := answer.FormatTime(h.clock.Now())
		h.clock.Add(time.Second)
		at := h.clock.Now()
		failed := answer.FormatTime(at)
		st := contract.Status{Collector: contract.CollectorMarket, Runs: map[contract.Domain]contract.Run{contract.DomainMarket: {
			StartedAt: at.Add(-time.Millisecond), FinishedAt: at, Upstream: contract.UpstreamDexScreener,
			ErrorKind: contract.ErrKindRateLimited, Error: "429 Too Many Requests", ConsecutiveFailures: 1}}}
		if err := h.store.WriteStatus(context.Background(), st); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			h.srv.Refresh(context.Background())
		}()
		for seen := false; !seen; {
			select {
			case <-done:
				seen = true
			default:
			}
			agg := h.statusBody().Checks.MarketAggregator
			if agg.LastRunAt == nil || *agg.LastRunAt != failed {
				if seen {
					t.Fatalf("poll %d: the read is published and /api/status shows no failed run at %s: %+v", i, failed, agg)
				}
				continue
			}
			rec := h.do(http.MethodGet, view.PathPrice)
			var price struct {
				UpdatedAt string `json:"updated_at"`
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &price); err != nil || rec.Code != http.StatusOK {
				t.Fatalf("poll %d: /api/price: %d %s", i, rec.Code, rec.Body)
			}
			if price.UpdatedAt != good {
				t.Fatalf("poll %d: /api/status shows the run failed at %s while /api/price serves the document of %s, not the good poll's of %s",
					i, failed, price.UpdatedAt, good)
			}
			seen = true
		}
		<-done
	}
}
