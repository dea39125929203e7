module github.com/tokendata/tokendata/shared

go 1.26.0

require (
	github.com/andybalholm/brotli v1.2.8
	github.com/caarlos0/env/v11 v11.4.2
	github.com/dunglas/httpsfv v1.1.2
	github.com/gorilla/websocket v1.5.3
	github.com/mr-tron/base58 v1.3.0
	github.com/prometheus/client_golang v1.25.0
	github.com/redis/go-redis/v9 v9.23.0
	github.com/shopspring/decimal v1.6.0
	github.com/tokendata/tokendata/shared/testkit v0.0.0
	go.uber.org/goleak v1.3.0
	golang.org/x/sync v0.24.0
	gopkg.in/yaml.v3 v3.0.1
)

require (
	github.com/beorn7/perks v1.0.1 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/kr/pretty v0.3.1 // indirect
	github.com/kylelemons/godebug v1.1.0 // indirect
	github.com/munnerz/goautoneg v0.0.0-20191010083416-a7dc8b61c822 // indirect
	github.com/prometheus/client_model v0.6.3 // indirect
	github.com/prometheus/common v0.72.0 // indirect
	github.com/prometheus/procfs v0.22.0 // indirect
	github.com/rogpeppe/go-internal v1.14.1 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
	gopkg.in/check.v1 v1.0.0-20201130134442-10cb98267c6c // indirect
)

replace (
	github.com/tokendata/tokendata/shared/simulator => ./simulator
	github.com/tokendata/tokendata/shared/testkit => ./testkit
)
