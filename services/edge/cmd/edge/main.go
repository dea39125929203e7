// Command edge is the public API of tokendata: it serves every /api/ path
// from a snapshot of the documents the collectors write to Redis. See
// package edge.
package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/tokendata/tokendata/services/edge"
	"github.com/tokendata/tokendata/shared/check"
	"github.com/tokendata/tokendata/shared/cli"
	"github.com/tokendata/tokendata/shared/contract"
	"github.com/tokendata/tokendata/shared/process"
)

func main() { cli.Main(app) }

var app = process.Service{
	Name: "edge",
	About: `The public API of tokendata: it serves every /api/ path on HTTP_ADDR from a
snapshot of the documents the collectors write to Redis (REDIS_URL). It never
calls an upstream.`,
	ServeHelp: "Serves /api/* on HTTP_ADDR, metrics and probes on OPS_ADDR, until SIGTERM.",
	Serve:     run,
	Probe:     probe,
}.App()

// serves names the endpoints each domain decides.
var serves = map[contract.Domain]string{
	contract.DomainSupply:   "/api/total-supply, /api/circulating-supply, /api/max-supply, /api/supply, /api/coingecko-supply",
	contract.DomainMetadata: "/api/token-metadata, its on-chain part",
	contract.DomainMarket:   "/api/price, /api/market, /api/market-data, /api/market-pairs",
	contract.DomainHolders:  "/api/holders",
}

// probe checks the edge's own configuration and, in Redis, the document
// of every domain: present, or missing with what its collector's status
// record says.
func probe(ctx context.Context, c *process.Checked, r *check.Report) {
	g := r.Group("edge", "every /api/ path")
	cfg, err := edge.LoadConfig()
	if err != nil {
		g.Fail("EDGE_ variables", err.Error(), "fix the variable the error names (docs/environment.md)")
		return
	}
	key, prev, err := edge.LoadKeys(false)
	if err != nil {
		g.Fail("signing key", err.Error(), "SIGNING_KEY_FILE must name an Ed25519 private key in PKCS#8 PEM (openssl genpkey -algorithm ed25519)")
		return
	}
	if _, err := edge.New(c.Common, c.Token, cfg, edge.Deps{Store: c.Store, SigningKey: key, PreviousKey: prev}); err != nil {
		g.Fail("configuration", err.Error(), "fix the variable or the token file's key the error names")
		return
	}
	g.OK("configuration", "the edge's variables and the token file are valid")
	if key == nil {
		g.Warn("signing key", "SIGNING_KEY_FILE is not set: answers are not signed", "set SIGNING_KEY_FILE to sign every answer (docs/api.md, Signed answers)")
	} else {
		g.OK("signing key", "answers signed by key %s (its thumbprint; /api/keys publishes it)", key.ID())
	}
	rctx, cancel := context.WithTimeout(ctx, process.CheckTimeout)
	defer cancel()
	docs, errs, err := c.Store.ReadAll(rctx, contract.Domains...)
	if err != nil {
		g.Fail("Redis", "reading the documents failed", "check that Redis answers and REDIS_URL's database is the collectors'")
		return
	}
	statuses, _ := c.Store.ReadStatuses(rctx)
	for _, d := range contract.Domains {
		dg := r.Group(string(d), serves[d])
		if doc, ok := docs[d]; ok {
			dg.OK("document", "in Redis, written %s ago by the %s collector", time.Since(doc.UpdatedAt).Round(time.Second), contract.CollectorOf(d))
			continue
		}
		// Without its metadata document /api/token-metadata still answers,
		// from the token file: a warning, not a failure.
		fail := dg.Fail
		if d == contract.DomainMetadata {
			fail = dg.Warn
		}
		if e := errs[d]; e != nil {
			fail("document", "refused: "+e.Error(), "see the "+contract.CollectorOf(d)+" collector's log; EDGE_MAX_DOCUMENT_BYTES bounds a document")
			continue
		}
		run, ok := statuses[contract.CollectorOf(d)].Runs[d]
		switch {
		case !ok:
			fail("document", "not in Redis, and the "+contract.CollectorOf(d)+" collector has written no status record",
				"start the "+contract.CollectorOf(d)+" collector with the same REDIS_URL and token; `"+contract.CollectorOf(d)+" check` probes its upstream")
		case !run.OK:
			remedy := run.Remedy
			if remedy == "" {
				remedy = "run `" + contract.CollectorOf(d) + " check` for the upstream's verdict"
			}
			fail("document", fmt.Sprintf("not in Redis: the %s collector's last run failed (%s: %s)", contract.CollectorOf(d), run.ErrorKind, run.Error), remedy)
		default:
			fail("document", "not in Redis although the "+contract.CollectorOf(d)+" collector's last run succeeded (expired, or another REDIS_URL database)",
				"check that the collector and the edge share REDIS_URL and the token's mint")
		}
	}
}

func run(ctx context.Context, out io.Writer) error {
	p, err := process.Setup("edge", out)
	if err != nil {
		return err
	}
	defer p.Close()
	cfg, err := edge.LoadConfig()
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	p.LogStart(cfg)
	key, prev, err := edge.LoadKeys(false)
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	srv, err := edge.New(p.Common, p.Token, cfg, edge.Deps{Store: p.Store, Registry: p.Registry, Log: p.Log,
		Demo: p.Common.UpstreamsSimulated, SigningKey: key, PreviousKey: prev})
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	// Ready once the edge holds a snapshot; not while stopping.
	return p.Serve(ctx, srv.Ready, srv.Run)
}
