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
--          (-1: not compared), then one argument per page: its record (24 bytes) then its
--          entry in the pages list (sketch length byte, sketch, url)
-- Returns  {"epoch"} when the store was created again (restart, reset); {"behind"} when the
--          log grew by more than the longest tail; {"moved", records} with the records from
--          ``seen`` on when a page kept since may be near a sent one (or too many to compare);
--          else {"kept", now, records}: the records from ``seen`` on, then the pages sent,
--          appended after them and stamped with the server's clock ``now``.

local meta, prefix = KEYS[1], ARGV[1]
if redis.call("HGET", meta, "epoch") ~= ARGV[2] then
  return {"epoch"}
end
local seen, chunk, ttl, max_tail = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local max_pairs, max_content, max_structure = tonumber(ARGV[7]), tonumber(ARGV[8]), tonumber(ARGV[9])
local first_page = 10
local count = tonumber(redis.call("HGET", meta, "count") or "0")
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

-- A record's fingerprints as 32-bit halves (content high, low, structure high, low) and which
-- it has (flags: 1 content, 2 structure), read once for all the pairs it is compared in.
local function halves(record, at)
  local content_hi, content_lo, structure_hi, structure_lo = struct.unpack(">I4I4I4I4", record, at + 1)
  return {content_hi, content_lo, structure_hi, structure_lo, string.byte(record, at + 21)}
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
local function near(a, b)
  return within(a, b, 1, 1, max_content) or within(a, b, 3, 2, max_structure)
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
local tail = table.concat(parts)

if count > seen then
  if max_pairs >= 0 and (count - seen) * (#ARGV - first_page + 1) > max_pairs then
    return {"moved", tail}
  end
  local sent = {}
  for i = first_page, #ARGV do
    sent[#sent + 1] = halves(ARGV[i], 0)
  end
  for t = 0, count - seen - 1 do
    local kept = halves(tail, t * 24)
    for _, page in ipairs(sent) do
      if near(kept, page) then
        return {"moved", tail}
      end
    end
  end
end

-- The records' stamp is the server's clock: every process ages pages alike.
local now = tonumber(redis.call("TIME")[1])
local stamp = struct.pack(">I4", now)
local records, entries = {}, {}
for i = first_page, #ARGV do
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
return {"kept", now, tail .. table.concat(records)}
