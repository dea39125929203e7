#!/usr/bin/env bash
# Benchmark of the holders enumeration at 1,000,000 token accounts: ours
# against solana-go's GetProgramAccountsWithOpts on the same response, each
# in its own process (wall time, accounts/s, peak RSS). `make bench-holders`.
set -euo pipefail
# hack/bench is its own module, outside go.work (like hack/chartcheck)
cd "$(dirname "$0")/.."
bin="$(mktemp -d)/holders-bench"
trap 'rm -rf "$(dirname "$bin")"' EXIT
GOWORK=off go build -o "$bin" ./holders
"$bin" -accounts "${ACCOUNTS:-1000000}" "$@"
