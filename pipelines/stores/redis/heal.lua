-- Make a crawler's replica the store's log again, after Redis lost the store (restarted without its
-- data): the chunks the caller wrote under a staging prefix of its own become the store's, atomically,
-- unless the store exists again with pages (another crawler wrote its replica back first) or was reset
-- on purpose (``remove_redis_store`` leaves a mark): then the caller reloads what Redis holds.  A store
-- that exists but is empty and unmarked (a crawler that started meanwhile created it) is replaced.
--
-- KEYS[1]  the meta hash
-- ARGV     prefix, staging prefix, new epoch, scheme, pages, chunks, ttl in seconds (0: never)
-- Returns  "healed", or "lost" (the staging keys deleted).

local meta, prefix, staging = KEYS[1], ARGV[1], ARGV[2]
local epoch, scheme, pages, chunks, ttl = ARGV[3], ARGV[4], ARGV[5], tonumber(ARGV[6]), tonumber(ARGV[7])
local parts = {"fp", "sk", "pages"}

if redis.call("EXISTS", meta) == 1
    and (tonumber(redis.call("HGET", meta, "count") or "0") > 0 or redis.call("HEXISTS", meta, "reset") == 1) then
  for n = 0, chunks - 1 do
    for _, part in ipairs(parts) do
      redis.call("DEL", staging .. ":" .. part .. ":" .. n)
    end
  end
  return "lost"
end

for n = 0, chunks - 1 do
  for _, part in ipairs(parts) do
    local from, to = staging .. ":" .. part .. ":" .. n, prefix .. ":" .. part .. ":" .. n
    redis.call("DEL", to)
    if redis.call("EXISTS", from) == 1 then
      redis.call("RENAME", from, to)
      if ttl > 0 then
        redis.call("EXPIRE", to, ttl)
      else
        redis.call("PERSIST", to)
      end
    end
  end
end
redis.call("DEL", meta)
redis.call("HSET", meta, "epoch", epoch, "scheme", scheme, "count", pages)
return "healed"
