"""The Lua scripts of the shared sessions (:mod:`.sessions`): each runs atomically in Redis,
in one round trip."""

# KEYS: record. ARGV: known version, idle ms, heartbeat key prefix, this worker, now ms,
# sessions set. nil: no such session; {version, home, claimed, fields...} (fields only when
# the version differs from the known one).
_LOAD = """
local key = KEYS[1]
if redis.call('EXISTS', key) == 0 then return nil end
redis.call('PEXPIRE', key, tonumber(ARGV[2]))
local fields = redis.call('HMGET', key, 'ver', 'home', 'own')
local version, home, claimed = fields[1], fields[2], 0
if home ~= ARGV[4] and redis.call('EXISTS', ARGV[3] .. home) == 0 then
  redis.call('HSET', key, 'home', ARGV[4])
  home, claimed = ARGV[4], 1
end
redis.call('ZADD', ARGV[6], tonumber(ARGV[5]), key)
if fields[3] then
  redis.call('ZADD', fields[3], tonumber(ARGV[5]), key)
  redis.call('PEXPIRE', fields[3], tonumber(ARGV[2]))
end
if version == ARGV[1] then return {version, home, claimed} end
return {version, home, claimed, redis.call('HGETALL', key)}
"""

# KEYS: records. ARGV: idle ms, heartbeat key prefix, this worker, now ms, sessions set.
# For each record: its home (taken over by this worker if it stopped), or false if gone.
_TOUCH = """
local homes = {}
for i, key in ipairs(KEYS) do
  if redis.call('EXISTS', key) == 0 then
    homes[i] = false
  else
    redis.call('PEXPIRE', key, tonumber(ARGV[1]))
    local fields = redis.call('HMGET', key, 'home', 'own')
    local home = fields[1]
    if home ~= ARGV[3] and redis.call('EXISTS', ARGV[2] .. home) == 0 then
      redis.call('HSET', key, 'home', ARGV[3])
      home = ARGV[3]
    end
    redis.call('ZADD', ARGV[5], tonumber(ARGV[4]), key)
    if fields[2] then
      redis.call('ZADD', fields[2], tonumber(ARGV[4]), key)
      redis.call('PEXPIRE', fields[2], tonumber(ARGV[1]))
    end
    homes[i] = home
  end
end
return homes
"""

# KEYS: all sessions, this owner's sessions. ARGV: now ms, idle ms, in-use ms, max sessions,
# max per owner. {0, evicted...}: room made; {429} or {503}: refused.
_MAKE_ROOM = """
local all, own = KEYS[1], KEYS[2]
local now = tonumber(ARGV[1])
redis.call('ZREMRANGEBYSCORE', all, '-inf', now - tonumber(ARGV[2]))
redis.call('ZREMRANGEBYSCORE', own, '-inf', now - tonumber(ARGV[2]))
local idle_before = now - tonumber(ARGV[3])
local evicted = {0}
local function evict(set, status)
  local victim = redis.call('ZRANGEBYSCORE', set, '-inf', idle_before, 'LIMIT', 0, 1)[1]
  if not victim then return status end
  redis.call('DEL', victim)
  redis.call('ZREM', all, victim)
  redis.call('ZREM', own, victim)
  table.insert(evicted, victim)
  return nil
end
while redis.call('ZCARD', own) >= tonumber(ARGV[5]) do
  local refused = evict(own, 429)
  if refused then return {refused} end
end
while redis.call('ZCARD', all) >= tonumber(ARGV[4]) do
  local refused = evict(all, 503)
  if refused then return {refused} end
end
return evicted
"""

# KEYS: a GET stream's claim. ARGV: this worker. Drops the claim if it is this worker's.
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""
