package edge

import "fmt"

// The connection cap and the file descriptor limit. Every open
// connection holds a descriptor; a process out of descriptors accepts no
// connection at all, so the cap that keeps idle clients from starving the
// others must sit below the limit, with room left for what else the
// process opens: the Redis connections and their notifications, the ops
// listener and its probes and scrapes, the collectors' upstream
// connections in standalone, logs and the runtime's own.

const (
	// defaultMaxConnections is the cap where the limit allows it.
	defaultMaxConnections = 10000
	// minFDReserve is the fewest descriptors kept out of the cap.
	minFDReserve = 128
)

// fdReserve is the descriptors kept for everything but the public
// connections under a limit: an eighth of it, and at least
// minFDReserve.
func fdReserve(limit uint64) uint64 { return max(minFDReserve, limit/8) }

// connCap is the cap of open public connections: the configured one
// (EDGE_MAX_CONNECTIONS > 0) when the descriptor limit allows it, else
// sized from the limit (0). known is false where the platform reports no
// limit: the configured cap, or defaultMaxConnections, is taken as is.
// It says where the figure comes from, for the start log.
func connCap(configured int, limit uint64, known bool) (n int, from string, err error) {
	if !known {
		if configured > 0 {
			return configured, "EDGE_MAX_CONNECTIONS", nil
		}
		return defaultMaxConnections, "default (file descriptor limit unknown)", nil
	}
	reserve := fdReserve(limit)
	if limit <= reserve {
		return 0, "", fmt.Errorf("EDGE_MAX_CONNECTIONS: the file descriptor limit (RLIMIT_NOFILE) is %d, which leaves no room for connections "+
			"once %d are kept for Redis, upstreams and logs; raise it (ulimit -n, LimitNOFILE=, or the container runtime's nofile) to at least %d",
			limit, reserve, reserve+minFDReserve)
	}
	allowed := limit - reserve
	if configured > 0 {
		if uint64(configured) > allowed {
			return 0, "", fmt.Errorf("EDGE_MAX_CONNECTIONS: %d is above what the file descriptor limit allows: RLIMIT_NOFILE is %d and %d are kept "+
				"for Redis, upstreams and logs, so at most %d; lower it, or raise the limit (ulimit -n, LimitNOFILE=, or the container runtime's nofile)",
				configured, limit, reserve, allowed)
		}
		return configured, "EDGE_MAX_CONNECTIONS", nil
	}
	if allowed < defaultMaxConnections {
		return int(allowed), fmt.Sprintf("file descriptor limit %d less %d kept for Redis, upstreams and logs", limit, reserve), nil
	}
	return defaultMaxConnections, "default", nil
}

// resolveConnCap sets cfg.MaxConnections from the process's descriptor
// limit, and returns the attributes of the start log line that says so.
func resolveConnCap(cfg *Config) ([]any, error) {
	limit, known := fileLimit()
	n, from, err := connCap(cfg.MaxConnections, limit, known)
	if err != nil {
		return nil, err
	}
	cfg.MaxConnections = n
	switch {
	case cfg.MaxEventStreams == 0:
		cfg.MaxEventStreams = max(n/2, 1)
	case cfg.MaxEventStreams >= n:
		return nil, fmt.Errorf("EDGE_MAX_EVENT_STREAMS: %d streams would leave no connection of the cap of %d for other requests (EDGE_MAX_CONNECTIONS): give fewer, or raise the cap",
			cfg.MaxEventStreams, n)
	}
	return []any{"max_connections", n, "from", from, "file_limit", limit, "max_event_streams", cfg.MaxEventStreams}, nil
}
