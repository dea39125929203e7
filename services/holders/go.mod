module github.com/tokendata/tokendata/services/holders

go 1.26.0

require (
	github.com/gorilla/websocket v1.5.3
	github.com/mr-tron/base58 v1.3.0
	github.com/prometheus/client_golang v1.25.0
	github.com/tokendata/tokendata/shared v0.0.0
	github.com/tokendata/tokendata/shared/simulator v0.0.0
	github.com/tokendata/tokendata/shared/testkit v0.0.0
	go.uber.org/goleak v1.3.0
)

require (
	github.com/beorn7/perks v1.0.1 // indirect
	github.com/caarlos0/env/v11 v11.4.2 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/kr/text v0.2.0 // indirect
	github.com/kylelemons/godebug v1.1.0 // indirect
	github.com/munnerz/goautoneg v0.0.0-20191010083416-a7dc8b61c822 // indirect
	github.com/prometheus/client_model v0.6.3 // indirect
	github.com/prometheus/common v0.72.0 // indirect
	github.com/prometheus/procfs v0.22.0 // indirect
	github.com/redis/go-redis/v9 v9.23.0 // indirect
	github.com/shopspring/decimal v1.6.0 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/sync v0.24.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
)

replace (
	github.com/tokendata/tokendata/shared => ../../shared
	github.com/tokendata/tokendata/shared/simulator => ../../shared/simulator
	github.com/tokendata/tokendata/shared/testkit => ../../shared/testkit
)
