package holderstest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tokendata/tokendata/services/holders/follow"
	"github.com/tokendata/tokendata/services/holders/wire"
	"github.com/tokendata/tokendata/shared/config"
	"github.com/tokendata/tokendata/shared/contract"
	"github.com/tokendata/tokendata/shared/pubsub"
	"github.com/tokendata/tokendata/shared/simulator/solanasim"
)

// FollowNode is a Follower kept by pubsub.Keep on a simulator node's real
// socket, as the collector keeps it, with the node's ledger.
type FollowNode struct {
	*Ledger
	Node *solanasim.Node
	F    *follow.Follower
	// Connected receives once each time the socket is subscribed.
	Connected chan struct{}
}

// StartFollow starts a simulator serving tok, a node of its own and a
// Follower on the node's socket (programSubscribe at finalized), and
// waits for the first subscription; the Follower's Tally seeds the
// ledger's enumerations. All of it stops when the test ends.
func StartFollow(t testing.TB, tok solanasim.Token) *FollowNode {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	n, node := StartNode(ctx, t, tok)
	fw := &FollowNode{Ledger: n, Node: node, F: follow.New(n.Mint, n.Program, 0, 10_000), Connected: make(chan struct{}, 16)}
	n.NewLive = fw.F.Tally
	done := make(chan struct{})
	go func() {
		defer close(done)
		pubsub.Keep(ctx, pubsub.Config{URL: config.Secret("ws" + strings.TrimPrefix(n.URL, "http")),
			Ping: time.Second, Silence: 5 * time.Second, Backoff: 50 * time.Millisecond, BackoffMax: 200 * time.Millisecond,
			MaxMessage: 1 << 20},
			pubsub.Request{Method: "programSubscribe", Params: wire.ProgramSubscribeParams(n.Program, n.Token.Mint, "finalized")},
			pubsub.Hooks{
				State: func(state string, _ error) {
					if state == contract.SubscriptionConnected {
						fw.F.Connected()
						fw.Connected <- struct{}{}
						return
					}
					fw.F.Lost()
				},
				Notification: func(msg []byte, _ uint64) error { return fw.F.Notify(msg) },
			})
	}()
	t.Cleanup(func() { cancel(); <-done })
	fw.WaitConnected()
	return fw
}

// WaitConnected waits (10 s at most) for the socket to be subscribed.
func (fw *FollowNode) WaitConnected() {
	fw.T.Helper()
	select {
	case <-fw.Connected:
	case <-time.After(10 * time.Second):
		fw.T.Fatal("not subscribed within 10 s")
	}
}

// Exact waits (5 s at most) for the live count to be the ledger's
// (closed: the accounts closed since the anchor, which it still counts)
// and returns it.
func (fw *FollowNode) Exact(what string, closed int) follow.LiveCount {
	fw.T.Helper()
	var c follow.LiveCount
	var ok bool
	deadline := time.Now().Add(5 * time.Second)
	for {
		truth, _ := fw.Sim.Truth(fw.Token.Mint)
		c, _, ok = fw.F.Take()
		if ok && c.Holders == uint64(truth.Holders) && c.NonZeroAccounts == uint64(truth.NonZeroAccounts) &&
			c.TokenAccounts == uint64(truth.TokenAccounts+closed) {
			return c
		}
		if time.Now().After(deadline) {
			fw.T.Fatalf("%s: live %+v (live %v); the ledger: %d holders, %d non-zero, %d token accounts (+%d closed)",
				what, c, ok, truth.Holders, truth.NonZeroAccounts, truth.TokenAccounts, closed)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
