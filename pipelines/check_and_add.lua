-- Append a batch of pages to the log, atomically, if no page was appended since the caller read it.
--
-- The caller has compared each page with every kept page of the log up to ARGV[3] (its
-- replica) and with the pages of the batch before it: what it sends was not a near-duplicate
-- of any of them.  Redis runs one script at a time, so if the log still ends at ARGV[3], no
-- other process can have kept a near-duplicate meanwhile, and the pages are appended.  If it
-- grew, nothing is appended: the caller gets the new records, compares its pages with them and
-- tries again.  The decision itself stays in the callers (the search at large distances is
-- what costs), so Redis's single thread does only this bookkeeping.
--
-- KEYS[1]  the meta hash (epoch, count)
-- ARGV     prefix, epoch, seen, chunk size, ttl in seconds (0: never), longest tail to return,
--          then one argument per page: its record (24 bytes) then its entry in the pages list
--          (sketch length byte, sketch, url)
-- Returns  {"epoch"} when the store was created again (restart, reset); {"behind"} when the
--          log grew by more than the longest tail; {"moved", records} with the records from
--          ``seen`` on when it grew; else {"kept", now}: the pages were appended from id ``seen``
--          on, stamped with the server's clock ``now``.

local meta, prefix = KEYS[1], ARGV[1]
if redis.call("HGET", meta, "epoch") ~= ARGV[2] then
  return {"epoch"}
end
local seen, chunk, ttl, max_tail = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local count = tonumber(redis.call("HGET", meta, "count") or "0")

if count ~= seen then
  if count - seen > max_tail then
    return {"behind"}  -- the caller reads the log first: this script's work stays small
  end
  -- Records [seen, count), one GETRANGE per chunk; a chunk that expired reads as zeros.
  local parts, id = {}, seen
  while id < count do
    local base = id - id % chunk
    local from, to = id - base, math.min(chunk, count - base) - 1
    local data = redis.call("GETRANGE", prefix .. ":fp:" .. (base / chunk), from * 24, to * 24 + 23)
    parts[#parts + 1] = data .. string.rep("\0", (to - from + 1) * 24 - #data)
    id = base + chunk
  end
  return {"moved", table.concat(parts)}
end

-- The records' stamp is the server's clock: every process ages pages alike.
local now = tonumber(redis.call("TIME")[1])
local stamp = struct.pack(">I4", now)
local records, entries = {}, {}
for i = 7, #ARGV do
  records[#records + 1] = string.sub(ARGV[i], 1, 16) .. stamp .. string.sub(ARGV[i], 21, 24)
  entries[#entries + 1] = string.sub(ARGV[i], 25)
end

-- Append them a chunk at a time: the records, and the entries to the chunk's list.
local id, last_id = count, count + #records
while id < last_id do
  local n = math.floor(id / chunk)
  local last = math.min(last_id, (n + 1) * chunk)
  local fp_key, pages_key = prefix .. ":fp:" .. n, prefix .. ":pages:" .. n
  local from, to = id - count + 1, last - count
  redis.call("SETRANGE", fp_key, (id % chunk) * 24, table.concat(records, "", from, to))
  for _ = redis.call("LLEN", pages_key), id % chunk - 1 do
    redis.call("RPUSH", pages_key, "\0")  -- the chunk expired meanwhile: keep positions aligned
  end
  redis.call("RPUSH", pages_key, unpack(entries, from, to))
  if ttl > 0 then
    redis.call("EXPIRE", fp_key, ttl)
    redis.call("EXPIRE", pages_key, ttl)
  end
  id = last
end
redis.call("HSET", meta, "count", last_id)
return {"kept", now}
