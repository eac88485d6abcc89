-- Append a batch of pages to the log, atomically, unless a page kept since the caller read it
-- may be a near-duplicate of one of them.
--
-- The caller has compared each page with every kept page of the log up to ARGV[3] (its
-- replica) and with the pages of the batch before it: what it sends was not a near-duplicate
-- of any of them.  Redis runs one script at a time, so if the log still ends at ARGV[3], or no
-- page kept since is within the distances of one sent, the pages are appended.  Else nothing
-- is: the caller gets the new records, decides again and retries.  The decision itself
-- (sketches, modes) stays in the callers, where the search at large distances is paid for;
-- Redis's single thread only compares a short tail, on fingerprints.  Lua's bit operations
-- are 32-bit: a fingerprint is two halves.
--
-- KEYS[1]  the meta hash (epoch, count)
-- ARGV     prefix, epoch, seen, chunk size, ttl in seconds (0: never), longest tail to return,
--          most pairs (tail page, sent page) to compare (-1: all), content distance, structure distance
--          (-1: not compared), sketch size in bytes, then one argument per page: its record (32
--          bytes), its sketch (zeros if it has none), its URL
-- Returns  {"epoch"} when the store is gone or was created again (restart, reset); {"lost", count} when
--          the log is shorter than the caller read it (a replica promoted before it had the last pages); {"behind"} when
--          the log grew by more than the longest tail; {"moved", records, sketches} with the records
--          and sketches from ``seen`` on when a page kept since may be near a sent one (or too many
--          to compare); else {"kept", now, records, sketches}: those from ``seen`` on, then the pages
--          sent, appended after them and stamped with the server's clock ``now``.

local meta, prefix = KEYS[1], ARGV[1]
if redis.call("HGET", meta, "epoch") ~= ARGV[2] then
  return {"epoch"}
end
local seen, chunk, ttl, max_tail = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local max_pairs, max_content, max_structure = tonumber(ARGV[7]), tonumber(ARGV[8]), tonumber(ARGV[9])
local sketch_size = tonumber(ARGV[10])
local first_page = 11
local count = tonumber(redis.call("HGET", meta, "count") or "0")
if count < seen then
  return {"lost", count}  -- a failover lost the last pages the caller read: it adds them again
end
if count - seen > max_tail then
  return {"behind"}  -- the caller reads the log first: this script's work stays small
end

local band, bxor, rshift = bit.band, bit.bxor, bit.rshift
local function popcount(x)
  x = x - band(rshift(x, 1), 0x55555555)
  x = band(x, 0x33333333) + band(rshift(x, 2), 0x33333333)
  x = band(x + rshift(x, 4), 0x0F0F0F0F)
  x = x + rshift(x, 8)
  x = x + rshift(x, 16)
  return band(x, 0x3F)
end

-- A record's fingerprints as 32-bit halves (content high, low, structure high, low), which it has
-- (flags: 1 content, 2 structure) and its address (the key of its URL, 8 bytes), read once for all
-- the pairs it is compared in.
local function halves(record, at)
  local content_hi, content_lo, structure_hi, structure_lo = struct.unpack(">I4I4I4I4", record, at + 1)
  return {content_hi, content_lo, structure_hi, structure_lo, string.byte(record, at + 29),
          string.sub(record, at + 17, at + 24)}
end

-- Are two records within the content or the structure distance (-1: not compared), on a
-- part both have?  Most pairs stop at the first half.
local function within(a, b, hi, flag, limit)
  if limit < 0 or band(a[5], b[5], flag) == 0 then
    return false
  end
  local d = popcount(bxor(a[hi], b[hi]))
  return d <= limit and d + popcount(bxor(a[hi + 1], b[hi + 1])) <= limit
end
-- Near, or kept at the same address (a page met again there is judged as its re-crawl).
local function near(a, b)
  return within(a, b, 1, 1, max_content) or within(a, b, 3, 2, max_structure) or a[6] == b[6]
end

-- Records and sketches [seen, count), one GETRANGE each per chunk; a chunk that expired reads as zeros.
local function range(part, size)
  local parts, id = {}, seen
  while id < count do
    local base = id - id % chunk
    local from, to = id - base, math.min(chunk, count - base) - 1
    local data = redis.call("GETRANGE", prefix .. ":" .. part .. ":" .. (base / chunk), from * size, to * size + size - 1)
    parts[#parts + 1] = data .. string.rep("\0", (to - from + 1) * size - #data)
    id = base + chunk
  end
  return table.concat(parts)
end
local tail = range("fp", 32)

if count > seen then
  if max_pairs >= 0 and (count - seen) * (#ARGV - first_page + 1) > max_pairs then
    return {"moved", tail, range("sk", sketch_size)}
  end
  local sent = {}
  for i = first_page, #ARGV do
    sent[#sent + 1] = halves(ARGV[i], 0)
  end
  for t = 0, count - seen - 1 do
    local kept = halves(tail, t * 32)
    for _, page in ipairs(sent) do
      if near(kept, page) then
        return {"moved", tail, range("sk", sketch_size)}
      end
    end
  end
end

-- The records' stamp is the server's clock: every process ages pages alike.
local now = tonumber(redis.call("TIME")[1])
local stamp = struct.pack(">I4", now)
local sketches_tail = range("sk", sketch_size)
local records, sketches, urls = {}, {}, {}
for i = first_page, #ARGV do
  records[#records + 1] = string.sub(ARGV[i], 1, 24) .. stamp .. string.sub(ARGV[i], 29, 32)
  sketches[#sketches + 1] = string.sub(ARGV[i], 33, 32 + sketch_size)
  urls[#urls + 1] = string.sub(ARGV[i], 33 + sketch_size)
end

-- Make a chunk's string hold at least ``pages`` items of ``size`` bytes: doubled (at least 16 pages, at most
-- the chunk), written at its exact size. (Grown by SETRANGE, Redis would keep as much again in reserve; made
-- at the chunk's full size at once, a site of a few pages would take a whole chunk.)
local function room(key, size, pages)
  local length = redis.call("STRLEN", key)
  if length >= pages * size then
    return
  end
  local target = math.min(chunk, math.max(pages, 2 * length / size, 16)) * size
  if length == 0 then
    redis.call("SETRANGE", key, target - 1, "\0")
  else
    redis.call("SET", key, redis.call("GET", key) .. string.rep("\0", target - length))  -- (its TTL set below)
  end
end

-- Append them a chunk at a time: the records, the sketches, and the URLs to the chunk's list.
local id, last_id = count, count + #records
while id < last_id do
  local n = math.floor(id / chunk)
  local last = math.min(last_id, (n + 1) * chunk)
  local fp_key, sk_key, pages_key = prefix .. ":fp:" .. n, prefix .. ":sk:" .. n, prefix .. ":pages:" .. n
  local from, to = id - count + 1, last - count
  room(fp_key, 32, last - n * chunk)
  room(sk_key, sketch_size, last - n * chunk)
  redis.call("SETRANGE", fp_key, (id % chunk) * 32, table.concat(records, "", from, to))
  redis.call("SETRANGE", sk_key, (id % chunk) * sketch_size, table.concat(sketches, "", from, to))
  for _ = redis.call("LLEN", pages_key), id % chunk - 1 do
    redis.call("RPUSH", pages_key, "\0")  -- the chunk expired meanwhile: keep positions aligned
  end
  redis.call("RPUSH", pages_key, unpack(urls, from, to))
  if ttl > 0 then
    redis.call("EXPIRE", fp_key, ttl)
    redis.call("EXPIRE", sk_key, ttl)
    redis.call("EXPIRE", pages_key, ttl)
  end
  id = last
end
redis.call("HSET", meta, "count", last_id)
return {"kept", now, tail .. table.concat(records), sketches_tail .. table.concat(sketches)}
