package cluster

import (
	"crypto/sha1"
	"encoding/hex"
)

// script is a Lua script and its SHA-1, run by Client.run with EVALSHA
// (EVAL once when Redis does not have it). go-redis's Script would do the
// same; this one keeps the key prefix (KEYS[1]) in one place, Client.run.
type script struct{ src, sha string }

func newScript(src string) *script {
	sum := sha1.Sum([]byte(src))
	return &script{src: src, sha: hex.EncodeToString(sum[:])}
}

// The Lua scripts run in Redis, each atomically: that is what makes two
// logins of one name racing on two proxies end with exactly one of them
// accepted. KEYS[1] is the key prefix (redis.go): the scripts build every
// key name from it, which Redis allows on a single server, and on Redis
// Cluster as long as each name is in the hash slot of a declared key: with
// the prefix {tidegate}: every key is in that of KEYS[1], which is also
// where go-redis sends the script. The kick channel is not a key and keeps
// its name. Time is Redis's own (TIME), so the proxies' clocks need not
// agree. Each script that writes this proxy's state also counts the writes
// (the key gen:ID) and returns the count, which lets the client tell that
// Redis lost writes it had acknowledged (see Client.checkGen).

const luaPrelude = `
local P = KEYS[1]
local function bump(id, ttl)
  local k = P .. 'gen:' .. id
  local g = redis.call('INCR', k)
  if ttl then redis.call('PEXPIRE', k, ttl) end
  return g
end
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function split_owner(o)
  return string.match(o, '^([^/]+)/([^/]+)$')
end
local function live_owner(o)
  local p, t = split_owner(o)
  return p ~= nil and redis.call('HEXISTS', P .. 'sessions:' .. p, t) == 1
end
local function fields(rec)
  return string.match(rec, '^1\n([^\n]*)\n([^\n]*)\n([^\n]*)\n')
end
local function each_owned_key(id, f)
  local all = redis.call('HGETALL', P .. 'sessions:' .. id)
  for i = 1, #all, 2 do
    local owner = id .. '/' .. all[i]
    local ln, uu = fields(all[i + 1])
    if ln then
      local ks = {P .. 'name:' .. ln}
      if uu ~= '' then ks[2] = P .. 'uuid:' .. uu end
      for _, k in ipairs(ks) do
        if redis.call('GET', k) == owner then f(k) end
      end
    end
  end
  return #all / 2
end
`

// heartbeatScript: ARGV id, ttl (ms), instance. It marks the proxy alive
// for ttl and extends its session hash, its subnet counts and each name and
// UUID key it still owns. It returns {1 if the proxy's key was there
// before (else Redis lost it: restarted, or the heartbeats stopped for a
// whole ttl), number of sessions, write count}.
var heartbeatScript = newScript(luaPrelude + `
local id, ttl = ARGV[1], tonumber(ARGV[2])
local now = now_ms()
local pk = P .. 'proxy:' .. id
local existed = redis.call('EXISTS', pk)
redis.call('SET', pk, ARGV[3], 'PX', ttl)
redis.call('ZADD', P .. 'proxies', now + ttl, id)
local h = P .. 'sessions:' .. id
redis.call('PEXPIRE', h, ttl)
redis.call('PEXPIRE', P .. 'subnets:' .. id, ttl)
local n = each_owned_key(id, function(k) redis.call('PEXPIRE', k, ttl) end)
return {existed, n, bump(id, ttl)}
`)

// loginScript: ARGV id, token, lower-cased name, uuid, record, ttl (ms),
// mode (refuse or kick), subnet, subnet cap, rate key, rate interval (ms),
// rate tolerance (ms). In order: the network-wide login rate of the rate
// key (GCRA, as the proxy's local buckets; skipped when the key is empty),
// the duplicate check by name and UUID, the subnet's session cap summed over
// the live proxies (skipped when the cap is 0); then it publishes the
// session. With mode kick the live holders of the name or UUID lose their
// record and are told on their proxy's kick channel. It returns {verdict,
// detail, write count}: ok (detail: the owner kicked, or ""), dup (the
// owner holding it), rate, or subnet (the sessions counted); the count is
// "" when nothing of this proxy's was written.
var loginScript = newScript(luaPrelude + `
local id, tok = ARGV[1], ARGV[2]
local now = now_ms()
if ARGV[10] ~= '' then
  local rk = P .. 'rate:login:' .. ARGV[10]
  local iv, tol = tonumber(ARGV[11]), tonumber(ARGV[12])
  local tat = tonumber(redis.call('GET', rk) or '0') or 0
  if tat < now then tat = now end
  if tat - now > tol then return {'rate', '', ''} end
  redis.call('SET', rk, string.format('%.3f', tat + iv), 'PX', math.ceil(tat + iv - now) + 1)
end
local owner = id .. '/' .. tok
local keys = {P .. 'name:' .. ARGV[3]}
if ARGV[4] ~= '' then keys[2] = P .. 'uuid:' .. ARGV[4] end
local live = {}
for _, k in ipairs(keys) do
  local cur = redis.call('GET', k)
  if cur and cur ~= owner and cur ~= live[1] and live_owner(cur) then table.insert(live, cur) end
end
if #live > 0 and ARGV[7] ~= 'kick' then return {'dup', live[1], ''} end
local cap = tonumber(ARGV[9])
if cap > 0 then
  local total = 0
  for _, p in ipairs(redis.call('ZRANGEBYSCORE', P .. 'proxies', now, '+inf')) do
    total = total + (tonumber(redis.call('HGET', P .. 'subnets:' .. p, ARGV[8]) or '0') or 0)
  end
  if total >= cap then return {'subnet', tostring(total), ''} end
end
local ttl = tonumber(ARGV[6])
for _, k in ipairs(keys) do redis.call('SET', k, owner, 'PX', ttl) end
local h = P .. 'sessions:' .. id
local added = redis.call('HSET', h, tok, ARGV[5])
redis.call('PEXPIRE', h, ttl)
if added == 1 and ARGV[8] ~= '' then
  local sk = P .. 'subnets:' .. id
  redis.call('HINCRBY', sk, ARGV[8], 1)
  redis.call('PEXPIRE', sk, ttl)
end
for _, o in ipairs(live) do
  local p, t = split_owner(o)
  local oh = P .. 'sessions:' .. p
  local rec = redis.call('HGET', oh, t)
  if rec then
    redis.call('HDEL', oh, t)
    local _, _, sn = fields(rec)
    if sn and sn ~= '' then
      local sk = P .. 'subnets:' .. p
      if redis.call('HINCRBY', sk, sn, -1) <= 0 then redis.call('HDEL', sk, sn) end
    end
  end
  redis.call('PUBLISH', 'tidegate:kick:' .. p, t)
end
return {'ok', live[1] or '', tostring(bump(id))}
`)

// releaseScript: ARGV id, then for each session that ended its token,
// lower-cased name, uuid and subnet. It removes each: its record, its
// subnet count (only if the record was there, so a release is idempotent),
// and the name and UUID keys it still owns. It returns the write count.
var releaseScript = newScript(luaPrelude + `
local id = ARGV[1]
local h, sk = P .. 'sessions:' .. id, P .. 'subnets:' .. id
for i = 2, #ARGV - 3, 4 do
  local tok, ln, uu, sn = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3]
  local owner = id .. '/' .. tok
  local keys = {P .. 'name:' .. ln}
  if uu ~= '' then keys[2] = P .. 'uuid:' .. uu end
  for _, k in ipairs(keys) do
    if redis.call('GET', k) == owner then redis.call('DEL', k) end
  end
  if redis.call('HDEL', h, tok) == 1 and sn ~= '' then
    if redis.call('HINCRBY', sk, sn, -1) <= 0 then redis.call('HDEL', sk, sn) end
  end
end
return bump(id)
`)

// republishScript: ARGV id, ttl (ms), mode, then token and record pairs.
// Mode 1 first removes everything the proxy published (its records, its
// subnet counts, the keys they own), mode 2 does that and takes the proxy
// out of the network (a clean stop), mode 0 removes nothing. Then each
// session is published unless a live session of another owner holds its
// name or UUID (sessions both proxies let in while Redis was away): those
// tokens are returned, not published, after the write count.
var republishScript = newScript(luaPrelude + `
local id, ttl, mode = ARGV[1], tonumber(ARGV[2]), ARGV[3]
local h, sk = P .. 'sessions:' .. id, P .. 'subnets:' .. id
if mode ~= '0' then
  each_owned_key(id, function(k) redis.call('DEL', k) end)
  redis.call('DEL', h, sk)
end
if mode == '2' then
  redis.call('ZREM', P .. 'proxies', id)
  redis.call('DEL', P .. 'proxy:' .. id, P .. 'gen:' .. id)
  return {}
end
local conflicts = {tostring(bump(id))}
for i = 4, #ARGV, 2 do
  local tok, rec = ARGV[i], ARGV[i + 1]
  local ln, uu, sn = fields(rec)
  local owner = id .. '/' .. tok
  local keys = {}
  if ln then keys[1] = P .. 'name:' .. ln end
  if uu and uu ~= '' then keys[2] = P .. 'uuid:' .. uu end
  local free = ln ~= nil
  for _, k in pairs(keys) do
    local cur = redis.call('GET', k)
    if cur and cur ~= owner and live_owner(cur) then free = false end
  end
  if free then
    for _, k in pairs(keys) do redis.call('SET', k, owner, 'PX', ttl) end
    if redis.call('HSET', h, tok, rec) == 1 and sn ~= '' then redis.call('HINCRBY', sk, sn, 1) end
  else
    table.insert(conflicts, tok)
  end
end
redis.call('PEXPIRE', h, ttl)
redis.call('PEXPIRE', sk, ttl)
return conflicts
`)

// networkScript: ARGV sample size. It drops the proxies whose heartbeat
// expired from tidegate:proxies and returns {sessions of the live proxies,
// live proxies, up to sample records picked at random}.
var networkScript = newScript(luaPrelude + `
local n = tonumber(ARGV[1])
redis.call('ZREMRANGEBYSCORE', P .. 'proxies', '-inf', now_ms())
local total, out = 0, {}
local ps = redis.call('ZRANGE', P .. 'proxies', 0, -1)
for _, p in ipairs(ps) do
  local h = P .. 'sessions:' .. p
  total = total + redis.call('HLEN', h)
  if #out < n then
    local r = redis.call('HRANDFIELD', h, n - #out, 'WITHVALUES')
    for i = 2, #r, 2 do table.insert(out, r[i]) end
  end
end
local res = {total, #ps}
for _, v in ipairs(out) do table.insert(res, v) end
return res
`)
