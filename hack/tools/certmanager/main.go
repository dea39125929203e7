// Command cert-manager is cert-manager's controller (the pinned library
// module) with the parts the local cluster uses only: self-signed and CA
// issuers, the approver, the certificates' control loops and the
// Ingress and Gateway shims that turn the chart's annotation into a
// Certificate. cert-manager's own commands are modules the Go module proxy
// does not serve (cmd/controller's is named ...-binary and replaces the
// library by a relative path), so this command wires the controllers its
// library registers (pkg/controller.Known, each by its import, as
// CoreDNS's plugins are in hack/tools/kube/coredns). No ACME, Vault or
// Venafi: each would compile a cloud's SDK for an issuer the test does not
// use. One replica, no leader election, no webhook (the CRDs' schemas
// validate what the API server takes).
package main

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"sort"
	"syscall"
	"time"

	"github.com/cert-manager/cert-manager/pkg/controller"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificate-shim/gateways"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificate-shim/ingresses"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/approver"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/ca"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/selfsigned"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/issuing"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/keymanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/readiness"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/requestmanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/revisionmanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/trigger"
	_ "github.com/cert-manager/cert-manager/pkg/controller/clusterissuers"
	_ "github.com/cert-manager/cert-manager/pkg/controller/issuers"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/ca"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/selfsigned"
	logf "github.com/cert-manager/cert-manager/pkg/logs"
	"golang.org/x/sync/errgroup"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "cert-manager:", err)
		os.Exit(1)
	}
}

func run() error {
	clusterNS := flag.String("cluster-resource-namespace", "cert-manager",
		"namespace of the Secrets that ClusterIssuers read (a CA issuer's key pair)")
	ownerRef := flag.Bool("enable-certificate-owner-ref", true,
		"give each Certificate's Secret an owner reference to it, so that the Secret goes with the Certificate (cert-manager's own default is false)")
	gateways := flag.Bool("enable-gateway-api", true, "run the Gateway shim (a Gateway's annotation makes the Certificates of its listeners)")
	workers := flag.Int("workers", 2, "workers of each control loop")
	health := flag.String("health-address", ":9403",
		"address of /livez and /readyz (ready once every control loop started and the informers synced)")
	flag.Parse()
	if flag.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", flag.Args())
	}
	if *workers < 1 {
		return fmt.Errorf("-workers %d: at least 1", *workers)
	}

	signalled, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	ctx := signalled
	log := logf.FromContext(ctx)

	factory, err := controller.NewContextFactory(ctx, controller.ContextOptions{
		KubernetesAPIQPS:   20,
		KubernetesAPIBurst: 50,
		IssuerOptions:      controller.IssuerOptions{ClusterResourceNamespace: *clusterNS},
		CertificateOptions: controller.CertificateOptions{
			EnableOwnerRef:                           *ownerRef,
			CertificateRequestMinimumBackoffDuration: time.Second,
			CertificateRequestMaximumBackoffDuration: time.Minute,
		},
		ConfigOptions: controller.ConfigOptions{EnableGatewayAPI: *gateways},
	})
	if err != nil {
		return err
	}
	shared, err := factory.Build()
	if err != nil {
		return err
	}

	// Each import above registered its control loop; the Gateway shim only
	// when asked (it watches Gateways, which need Gateway API's CRDs).
	var names []string
	for name := range controller.Known() {
		if name == "gateway-shim" && !*gateways {
			continue
		}
		names = append(names, name)
	}
	sort.Strings(names)

	g, ctx := errgroup.WithContext(ctx)
	for _, name := range names {
		loop, err := controller.Known()[name](factory)
		if err != nil {
			return fmt.Errorf("control loop %s: %w", name, err)
		}
		g.Go(func() error {
			log.Info("starting control loop", "controller", name)
			return loop.Run(*workers, ctx)
		})
	}
	shared.SharedInformerFactory.Start(ctx.Done())
	shared.KubeSharedInformerFactory.Start(ctx.Done())
	shared.HTTP01ResourceMetadataInformersFactory.Start(ctx.Done())
	if *gateways {
		shared.GWShared.Start(ctx.Done())
	}

	ready := make(chan struct{})
	go func() {
		for _, synced := range shared.SharedInformerFactory.WaitForCacheSync(ctx.Done()) {
			if !synced {
				return
			}
		}
		close(ready)
		log.Info("informers synced", "controllers", names)
	}()
	mux := http.NewServeMux()
	mux.HandleFunc("/livez", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		select {
		case <-ready:
			_, _ = w.Write([]byte("ok\n"))
		default:
			http.Error(w, "informers not synced", http.StatusServiceUnavailable)
		}
	})
	srv := &http.Server{Addr: *health, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	g.Go(func() error {
		if err := srv.ListenAndServe(); err != nil && err != http.ErrServerClosed {
			return err
		}
		return nil
	})
	g.Go(func() error {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return srv.Shutdown(shutdown)
	})
	err = g.Wait()
	if signalled.Err() != nil {
		return nil // stopped: the loops' errors are the stop's
	}
	if err == nil {
		err = fmt.Errorf("every control loop returned")
	}
	return err
}
