package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// The history's Lua. Each script runs atomically in Redis; appendScript
// mirrors mergePoint and encodePoint (series.go) exactly: the contract
// suite checks that both backends store the same bytes.

// luaCommon compares canonical decimals as numbers and encodes a point as
// encoding/json does (field order, omitempty).
const luaCommon = `
local function cmp(a, b)
  local ai, af = string.match(a, '^(%d+)%.?(%d*)$')
  local bi, bf = string.match(b, '^(%d+)%.?(%d*)$')
  if #ai ~= #bi then if #ai < #bi then return -1 end return 1 end
  if ai ~= bi then if ai < bi then return -1 end return 1 end
  local n = math.max(#af, #bf)
  af = af .. string.rep('0', n - #af)
  bf = bf .. string.rep('0', n - #bf)
  if af == bf then return 0 end
  if af < bf then return -1 end
  return 1
end
local function int(x) return string.format('%.0f', x) end
local function enc(t, v, o, h, l, n, f, z, sim, bf)
  local s = '{"t":' .. int(t) .. ',"v":"' .. v .. '"'
  if o ~= '' then s = s .. ',"o":"' .. o .. '"' end
  if h ~= '' then s = s .. ',"h":"' .. h .. '"' end
  if l ~= '' then s = s .. ',"l":"' .. l .. '"' end
  if n ~= 0 then s = s .. ',"n":' .. int(n) end
  if f ~= 0 then s = s .. ',"f":' .. int(f) end
  if z ~= 0 then s = s .. ',"z":' .. int(z) end
  if sim then s = s .. ',"sim":true' end
  if bf then s = s .. ',"bf":true' end
  return s .. '}'
end
local function bound(key, cutoff, maxn, ttl)
  redis.call('ZREMRANGEBYSCORE', key, '-inf', '(' .. cutoff)
  local extra = redis.call('ZCARD', key) - tonumber(maxn)
  if extra > 0 then redis.call('ZREMRANGEBYRANK', key, 0, extra - 1) end
  redis.call('PEXPIRE', key, ttl)
end
`

// appendScript: KEYS are the series keys of the ops, then the keys of the
// values to set; ARGV[1] is the number k of values to set, ARGV[2..2k+1]
// each value and its TTL in ms; then opArgs arguments per op (see
// appendArgs).
var appendScript = redis.NewScript(luaCommon + `
local nsets = tonumber(ARGV[1])
local base = 1 + 2 * nsets
local nops = (#ARGV - base) / 14
-- Scripts are not rolled back: refuse before the first write what would
-- fail after it, so that the document and its samples go in together or
-- not at all.
for i = 1, nops do
  local ty = redis.call('TYPE', KEYS[i]).ok
  if ty ~= 'zset' and ty ~= 'none' then
    return redis.error_reply('WRONGTYPE history key ' .. KEYS[i] .. ' holds a ' .. ty)
  end
end
for j = 1, nsets do
  redis.call('SET', KEYS[nops + j], ARGV[2 * j], 'PX', ARGV[2 * j + 1])
end
for i = 0, nops - 1 do
  local a = base + i * 14
  local key, mode, score = KEYS[i + 1], ARGV[a + 1], ARGV[a + 2]
  local t = tonumber(score)
  local v, o, h, l = ARGV[a + 3], ARGV[a + 4], ARGV[a + 5], ARGV[a + 6]
  local n, f, z = tonumber(ARGV[a + 7]), tonumber(ARGV[a + 8]), tonumber(ARGV[a + 9])
  local sim, bf = ARGV[a + 10] == '1', ARGV[a + 11] == '1'
  if mode ~= 'raw' then
    local old = redis.call('ZRANGEBYSCORE', key, score, score)
    if #old > 0 then
      local ok, p = pcall(cjson.decode, old[1])
      if ok and type(p) == 'table' and type(p.v) == 'string' then
        local pt = tonumber(p.t) or t
        local pf, pz, pn = tonumber(p.f) or 0, tonumber(p.z) or 0, tonumber(p.n) or 0
        if pf == 0 then pf = pt end
        if pz == 0 then pz = pt end
        if pn < 1 then pn = 1 end
        local nf, nz = f, z
        if nf == 0 then nf = t end
        if nz == 0 then nz = t end
        if pz > nz then v = p.v end
        if mode == 'ohlc' then
          local oo, oh, ol = p.o, p.h, p.l
          if type(oo) ~= 'string' or oo == '' then oo = p.v end
          if type(oh) ~= 'string' or oh == '' then oh = p.v end
          if type(ol) ~= 'string' or ol == '' then ol = p.v end
          if not (nf < pf) then o = oo end
          if cmp(oh, h) > 0 then h = oh end
          if cmp(ol, l) < 0 then l = ol end
        end
        n = pn + math.max(n, 1)
        f = math.min(pf, nf)
        z = math.max(pz, nz)
        sim = sim or p.sim == true
        bf = bf or p.bf == true
      end
    end
  end
  redis.call('ZREMRANGEBYSCORE', key, score, score)
  redis.call('ZADD', key, score, enc(t, v, o, h, l, n, f, z, sim, bf))
  bound(key, ARGV[a + 12], ARGV[a + 13], ARGV[a + 14])
end
return nops
`)

// loadScript: KEYS[1] the series; ARGV cutoff, max points, TTL in ms,
// then score and member of each point. Only points older than every
// point of the key are put.
var loadScript = redis.NewScript(luaCommon + `
local key, cutoff = KEYS[1], tonumber(ARGV[1])
local first = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
local below = math.huge
if #first > 0 then below = tonumber(first[2]) end
local added = 0
for i = 4, #ARGV, 2 do
  local s = tonumber(ARGV[i])
  if s < below and s >= cutoff then
    redis.call('ZADD', key, ARGV[i], ARGV[i + 1])
    added = added + 1
  end
end
if added > 0 then bound(key, ARGV[1], ARGV[2], ARGV[3]) end
return added
`)

// readScript: KEYS[1] the series; ARGV from, to (Unix ms, inclusive),
// limit, the largest member returned. The answer is the key's PTTL (-2:
// absent), 1 when more than limit points were in range, the count of
// members left out for their size, then the newest limit members, oldest
// first.
var readScript = redis.NewScript(`
local key, limit = KEYS[1], tonumber(ARGV[3])
local pttl = redis.call('PTTL', key)
if pttl == -2 then return {-2, 0, 0} end
local m = redis.call('ZRANGE', key, ARGV[2], ARGV[1], 'BYSCORE', 'REV', 'LIMIT', 0, limit + 1)
local out = {pttl, 0, 0}
if #m > limit then out[2] = 1 end
for i = math.min(#m, limit), 1, -1 do
  if #m[i] > tonumber(ARGV[4]) then out[3] = out[3] + 1 else out[#out + 1] = m[i] end
end
return out
`)

const opArgs = 14

func appendArgs(args []any, op SeriesOp) []any {
	p := op.Point
	return append(args, op.Mode, p.T, p.V, p.O, p.H, p.L, p.N, p.F, p.Z, flag(p.Sim), flag(p.BF),
		op.Cutoff, op.MaxPoints, ttlMillis(op.TTL))
}

func flag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

func ttlMillis(d time.Duration) int64 { return max(d.Milliseconds(), 1) }

// Append implements Backend: one script sets the document and applies
// every op, atomically. On a Redis Cluster, where the keys lie in
// different slots, the document is set first and each series is updated
// by a script of its own (each atomic by itself): a failure between them
// loses samples, it never adds one.
func (r *Redis) Append(ctx context.Context, entries []Entry, ops []SeriesOp) error {
	for _, e := range entries {
		if e.TTL <= 0 {
			return errors.New("ttl must be positive")
		}
	}
	if err := checkOps(ops); err != nil {
		return err
	}
	if r.perKey() {
		for _, e := range entries {
			if err := r.c.Set(ctx, e.Key, e.Value, e.TTL).Err(); err != nil {
				return err
			}
		}
		for _, op := range ops {
			args := appendArgs([]any{0}, op)
			if err := appendScript.Run(ctx, r.c, []string{op.Key}, args...).Err(); err != nil {
				return fmt.Errorf("history %s: %w", op.Key, err)
			}
		}
		return nil
	}
	keys := make([]string, 0, len(ops)+len(entries))
	args := make([]any, 0, 1+2*len(entries)+opArgs*len(ops))
	args = append(args, len(entries))
	for _, e := range entries {
		args = append(args, e.Value, ttlMillis(e.TTL))
	}
	for _, op := range ops {
		keys = append(keys, op.Key)
		args = appendArgs(args, op)
	}
	for _, e := range entries {
		keys = append(keys, e.Key)
	}
	return appendScript.Run(ctx, r.c, keys, args...).Err()
}

// perKey reports whether a write must go key by key: on a Redis Cluster,
// a script may only touch keys of one slot.
func (r *Redis) perKey() bool {
	if r.forcePerKey {
		return true
	}
	_, cluster := r.c.(*redis.ClusterClient)
	return cluster
}

// LoadSeries implements Backend with one script.
func (r *Redis) LoadSeries(ctx context.Context, l SeriesLoad) (int, error) {
	if err := checkLoad(l); err != nil {
		return 0, err
	}
	args := make([]any, 0, 3+2*len(l.Points))
	args = append(args, l.Cutoff, l.MaxPoints, ttlMillis(l.TTL))
	for _, p := range l.Points {
		args = append(args, p.T, encodePoint(p))
	}
	n, err := loadScript.Run(ctx, r.c, []string{l.Key}, args...).Int()
	return n, err
}

// ReadSeries implements Backend with one script, which leaves in Redis
// the members above MaxPointBytes.
func (r *Redis) ReadSeries(ctx context.Context, key string, from, to int64, limit int) (SeriesRange, error) {
	if limit <= 0 {
		return SeriesRange{}, errors.New("read limit must be positive")
	}
	res, err := readScript.Run(ctx, r.c, []string{key}, from, to, limit, MaxPointBytes).Slice()
	if err != nil {
		return SeriesRange{}, err
	}
	if len(res) < 3 {
		return SeriesRange{}, errors.New("history read: short answer")
	}
	pttl, _ := res[0].(int64)
	if pttl == -2 {
		return SeriesRange{}, nil // absent
	}
	out := SeriesRange{Found: true, TTL: time.Duration(max(pttl, 0)) * time.Millisecond} // -1: no TTL
	if t, _ := res[1].(int64); t == 1 {
		out.Truncated = true
	}
	if n, _ := res[2].(int64); n > 0 {
		out.Oversized = int(n)
	}
	for _, m := range res[3:] {
		s, ok := m.(string)
		if !ok {
			return SeriesRange{}, errors.New("history read: unexpected member type")
		}
		out.Members = append(out.Members, []byte(s))
	}
	return out, nil
}
