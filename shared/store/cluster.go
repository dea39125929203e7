package store

import (
	"context"
	"errors"
	"net"

	"github.com/redis/go-redis/v9"
)

// reloadOnFailure is a hook on every node client of a Redis Cluster: a
// dial that fails, or a command or pipeline that gets no answer from its
// node, makes the cluster client reload its map of slots to masters at
// once.
//
// go-redis reloads that map when a node answers MOVED or READONLY, and
// otherwise every ClusterStateReloadInterval (60 s). A master that dies
// answers nothing: without this hook every write to its slots kept going
// to its address, and failed, for up to a minute after the cluster had
// promoted its replica. With it, the first failure asks for a reload (one
// CLUSTER SLOTS to a live node, at most one at a time, and a pending one
// after a 200 ms pause), so the write that follows the cluster's own
// failover goes to the new master; the command's own retries (MaxRedirects)
// often already do. A pub/sub connection's redial goes through the same
// hook, so a subscription on the dead node moves too.
type reloadOnFailure struct{ c *redis.ClusterClient }

// failed reports whether err means the node gave no answer: a Redis
// error reply (redis.Nil included) is an answer, and the caller's own
// cancellation or deadline says nothing of the node.
func failed(ctx context.Context, err error) bool {
	if err == nil || ctx.Err() != nil {
		return false
	}
	var reply redis.Error
	return !errors.As(err, &reply)
}

func (h reloadOnFailure) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := next(ctx, network, addr)
		if failed(ctx, err) {
			h.c.ReloadState(ctx)
		}
		return conn, err
	}
}

func (h reloadOnFailure) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if failed(ctx, err) {
			h.c.ReloadState(ctx)
		}
		return err
	}
}

func (h reloadOnFailure) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		if failed(ctx, err) {
			h.c.ReloadState(ctx)
		}
		return err
	}
}
