package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Redis is a Backend on go-redis' universal client: one address gives a
// single node, several a Cluster, a master name a Sentinel setup.
type Redis struct {
	c redis.UniversalClient
	// confirmWait bounds Subscribe's wait for Redis to confirm the
	// subscription: a dial and a read.
	confirmWait time.Duration
	// forcePerKey makes Append go key by key as on a Cluster (tests).
	forcePerKey bool
}

// ParseRedisURL turns REDIS_URL into universal client options. Accepted:
// redis://[user:pass@]host:port[/db], rediss:// (TLS), and the go-redis
// cluster form redis://host1:port?addr=host2:port&addr=host3:port.
// Sentinel: redis-sentinel://[:pass@]host1:port,host2:port/master-name[/db].
func ParseRedisURL(raw string) (*redis.UniversalOptions, error) {
	if raw == "" {
		return nil, errors.New("empty Redis URL")
	}
	if rest, ok := strings.CutPrefix(raw, "redis-sentinel://"); ok {
		return parseSentinel(rest)
	}
	if o, err := redis.ParseClusterURL(raw); err == nil && len(o.Addrs) > 1 {
		return &redis.UniversalOptions{
			Addrs: o.Addrs, Username: o.Username, Password: o.Password, TLSConfig: o.TLSConfig,
		}, nil
	}
	o, err := redis.ParseURL(raw)
	if err != nil {
		return nil, errors.New("invalid Redis URL (expected redis://, rediss:// or redis-sentinel://)")
	}
	return &redis.UniversalOptions{
		Addrs: []string{o.Addr}, Username: o.Username, Password: o.Password, DB: o.DB, TLSConfig: o.TLSConfig,
	}, nil
}

// parseSentinel reads "[user:pass@]h1:p1,h2:p2/master[/db]".
func parseSentinel(rest string) (*redis.UniversalOptions, error) {
	o := &redis.UniversalOptions{}
	if at := strings.LastIndexByte(rest, '@'); at >= 0 {
		cred := rest[:at]
		rest = rest[at+1:]
		if user, pass, ok := strings.Cut(cred, ":"); ok {
			o.Username, o.Password = user, pass
		} else {
			o.Password = cred
		}
	}
	hosts, path, _ := strings.Cut(rest, "/")
	master, db, _ := strings.Cut(path, "/")
	if hosts == "" || master == "" {
		return nil, errors.New("invalid Redis Sentinel URL (expected redis-sentinel://host:port[,host:port]/master-name[/db])")
	}
	o.Addrs = strings.Split(hosts, ",")
	o.MasterName = master
	if db != "" {
		n, err := strconv.Atoi(db)
		if err != nil || n < 0 {
			return nil, errors.New("invalid Redis Sentinel URL: database is not a number")
		}
		o.DB = n
	}
	return o, nil
}

// NewRedis connects lazily: it does not fail when Redis is down, the first
// command does (and later ones recover when it is back).
func NewRedis(opts *redis.UniversalOptions) *Redis {
	o := *opts
	if o.DialTimeout == 0 {
		o.DialTimeout = 2 * time.Second
	}
	if o.ReadTimeout == 0 {
		o.ReadTimeout = 2 * time.Second
	}
	if o.WriteTimeout == 0 {
		o.WriteTimeout = 2 * time.Second
	}
	// One dial per try of a command: the command's own retries
	// (MaxRetries) dial again. go-redis's default of five dials inside
	// each of four tries made one command wait up to 40 s (5 × 4 ×
	// DialTimeout) on an address that takes no connection, such as a
	// Redis pod's old address in the second after it was deleted.
	if o.DialerRetries == 0 {
		o.DialerRetries = 1
	}
	// A caller's deadline bounds the command's reads and writes too, not
	// only its wait for a connection: without this, go-redis waits
	// ReadTimeout on each try whatever the context says.
	o.ContextTimeoutEnabled = true
	c := redis.NewUniversalClient(&o)
	if cc, ok := c.(*redis.ClusterClient); ok {
		h := reloadOnFailure{c: cc}
		cc.OnNewNode(func(n *redis.Client) { n.AddHook(h) })
	}
	return &Redis{c: c, confirmWait: max(o.DialTimeout+o.ReadTimeout, time.Second)}
}

// IsAuthError reports whether err is Redis refusing the credentials it
// was given (NOAUTH, WRONGPASS): a configuration mistake, not an outage.
// Its text never carries the password.
func IsAuthError(err error) bool { return err != nil && redis.IsAuthError(err) }

// Client exposes the go-redis client (metrics hooks, tests).
func (r *Redis) Client() redis.UniversalClient { return r.c }

// Set implements Backend with one SET key value EX/PX ttl.
func (r *Redis) Set(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	if ttl <= 0 {
		return errors.New("ttl must be positive")
	}
	return r.c.Set(ctx, key, value, ttl).Err()
}

// SetAll implements Backend with one SET per entry inside MULTI/EXEC. A
// Redis Cluster refuses a transaction over keys of different slots, and
// the contract's keys carry no hash tag: there each SET waits for the one
// before it (a pipeline would send them to their nodes at once, in no
// order), each atomic on its own.
func (r *Redis) SetAll(ctx context.Context, entries ...Entry) error {
	for _, e := range entries {
		if e.TTL <= 0 {
			return errors.New("ttl must be positive")
		}
	}
	set := func(p redis.Pipeliner) error {
		for _, e := range entries {
			p.Set(ctx, e.Key, e.Value, e.TTL)
		}
		return nil
	}
	if r.perKey() {
		for _, e := range entries {
			if err := r.c.Set(ctx, e.Key, e.Value, e.TTL).Err(); err != nil {
				return err
			}
		}
		return nil
	}
	_, err := r.c.TxPipelined(ctx, set)
	return err
}

// MGet implements Backend: PTTL and GETRANGE 0..limit of every key in
// one pipeline, so a value above limit is never transferred whole; the
// size of such a value (the only one GETRANGE's answer leaves unknown) is
// asked after, with STRLEN, in a second round trip.
func (r *Redis) MGet(ctx context.Context, limit int64, keys ...string) ([]Value, error) {
	if limit <= 0 {
		return nil, errors.New("read limit must be positive")
	}
	ttls := make([]*redis.DurationCmd, len(keys))
	gets := make([]*redis.StringCmd, len(keys))
	_, err := r.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, k := range keys {
			ttls[i] = p.PTTL(ctx, k)
			gets[i] = p.GetRange(ctx, k, 0, limit) // at most limit+1 bytes: enough to tell "longer"
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make([]Value, len(keys))
	var large []int
	for i := range keys {
		ttl, found := redisTTL(ttls[i].Val())
		if !found {
			continue // absent, or expired before the pipeline ran
		}
		b, err := gets[i].Bytes()
		if err != nil {
			return nil, err
		}
		v := Value{TTL: ttl, Found: true, Size: int64(len(b))}
		if v.Size > limit {
			v.TooLarge = true
			large = append(large, i)
		} else {
			v.Data = b
		}
		out[i] = v
	}
	if len(large) == 0 {
		return out, nil
	}
	sizes := make([]*redis.IntCmd, len(large))
	if _, err := r.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for j, i := range large {
			sizes[j] = p.StrLen(ctx, keys[i])
		}
		return nil
	}); err != nil {
		return nil, err
	}
	for j, i := range large {
		// the value may have been rewritten since: at least what was read
		out[i].Size = max(sizes[j].Val(), out[i].Size)
	}
	return out, nil
}

// Exists implements Backend: one EXISTS per key in one pipeline (EXISTS
// with several keys only counts them).
func (r *Redis) Exists(ctx context.Context, keys ...string) ([]bool, error) {
	cmds := make([]*redis.IntCmd, len(keys))
	_, err := r.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, k := range keys {
			cmds[i] = p.Exists(ctx, k)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make([]bool, len(keys))
	for i, c := range cmds {
		out[i] = c.Val() > 0
	}
	return out, nil
}

// Stat implements Backend: STRLEN and PTTL of every key in one pipeline.
func (r *Redis) Stat(ctx context.Context, keys ...string) ([]Stat, error) {
	ttls := make([]*redis.DurationCmd, len(keys))
	sizes := make([]*redis.IntCmd, len(keys))
	_, err := r.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, k := range keys {
			ttls[i] = p.PTTL(ctx, k)
			sizes[i] = p.StrLen(ctx, k)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make([]Stat, len(keys))
	for i := range keys {
		if ttl, found := redisTTL(ttls[i].Val()); found {
			out[i] = Stat{Found: true, Size: sizes[i].Val(), TTL: ttl}
		}
	}
	return out, nil
}

// redisTTL reads a PTTL answer: -2 is an absent key, -1 one without expiry
// (TTL 0).
func redisTTL(ttl time.Duration) (time.Duration, bool) {
	switch {
	case ttl == -2:
		return 0, false
	case ttl < 0:
		return 0, true
	}
	return ttl, true
}

// Publish implements Backend. On a Redis Cluster the PUBLISH goes to the
// master of the channel's slot, the node Subscribe listens on (go-redis
// sends a command without keys to any master, round robin): there each
// subscriber receives it at once and in the order of the writes. A
// PUBLISH that another node takes reaches the channel's subscribers later,
// over the cluster bus, and may reach a subscription made after it
// returned.
func (r *Redis) Publish(ctx context.Context, channel, message string) error {
	cmd := redis.NewIntCmd(ctx, "publish", channel, message)
	cmd.SetFirstKeyPos(1) // route by the channel, as a key
	_ = r.c.Process(ctx, cmd)
	return cmd.Err()
}

// Subscribe implements Backend. It returns once Redis has confirmed the
// subscription: a message published after it returns is delivered, and
// one whose Publish returned before it was called is not (Publish). When
// Redis gives no confirmation within a dial and a read (it is down), the
// subscription is returned pending: go-redis makes it when Redis is back,
// and after every reconnect.
func (r *Redis) Subscribe(ctx context.Context, channel string) (Subscription, error) {
	ps := r.c.Subscribe(ctx, channel)
	if err := r.confirm(ctx, ps); err != nil && ctx.Err() != nil {
		_ = ps.Close()
		return nil, err
	}
	out := make(chan string, 64)
	go func() {
		defer close(out)
		for msg := range ps.Channel() {
			select {
			case out <- msg.Payload:
			default: // a hint only: readers also poll
			}
		}
	}()
	return &redisSub{ps: ps, ch: out}, nil
}

// confirm reads ps until Redis confirms its subscription, for at most
// confirmWait.
func (r *Redis) confirm(ctx context.Context, ps *redis.PubSub) error {
	ctx, cancel := context.WithTimeout(ctx, r.confirmWait)
	defer cancel()
	for {
		msg, err := ps.Receive(ctx)
		if err != nil {
			return err
		}
		if _, ok := msg.(*redis.Subscription); ok {
			return nil
		}
	}
}

// Ping implements Backend.
func (r *Redis) Ping(ctx context.Context) error {
	if err := r.c.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("redis ping: %w", err)
	}
	return nil
}

// Close implements Backend.
func (r *Redis) Close() error { return r.c.Close() }

type redisSub struct {
	ps *redis.PubSub
	ch chan string
}

func (s *redisSub) C() <-chan string { return s.ch }
func (s *redisSub) Close() error     { return s.ps.Close() }
