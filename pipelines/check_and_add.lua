-- Check-and-add for a batch of pages, atomically (Redis runs one script at a time).
--
-- The caller has already compared each page with every kept page below ARGV[3]
-- (its replica of the log); this script compares it with the pages kept since
-- (the tail of the log, pages of this batch included) and appends it unless
-- one of them is a near-duplicate.  Lua's bit operations are 32-bit: a
-- fingerprint is two halves.
--
-- KEYS[1]  the meta hash (epoch, count)
-- ARGV     prefix, epoch, seen, chunk size, ttl in seconds (0: never),
--          mode, content distance, structure distance, min similarity, longest tail to check,
--          then one argument per page: its record (24 bytes); how many earlier pages of the batch
--          are near enough to it (a byte) and their positions (1-based, a byte each); its entry
--          in the pages list (sketch length byte, sketch, url)
-- Returns  {"epoch"} when the store was created again (restart, reset), {"behind"} when the
--          caller's replica misses more than the longest tail, else {answers, records, now}:
--          per page {id} when kept, {-1, id, url, reason, content d, structure d, similarity*1000};
--          the log's records from ``seen`` on; the server's clock

local meta, prefix = KEYS[1], ARGV[1]
if redis.call("HGET", meta, "epoch") ~= ARGV[2] then
  return {"epoch"}
end
local seen, chunk, ttl = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local mode, max_content, max_structure = ARGV[6], tonumber(ARGV[7]), tonumber(ARGV[8])
local min_similarity, max_tail = tonumber(ARGV[9]), tonumber(ARGV[10])
local now = tonumber(redis.call("TIME")[1])
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

local function decode(record)
  local ch, cl, sh, sl, stamp, flags = struct.unpack(">I4I4I4I4I4B", record)
  return {ch = ch, cl = cl, sh = sh, sl = sl, stamp = stamp, flags = flags}
end

local function sketch_of(entry)
  local length = string.byte(entry, 1)
  if length == 0 then return nil end
  return string.sub(entry, 2, 1 + length)
end

local function similarity(a, b)
  local differing = 0
  for i = 1, #a, 4 do
    differing = differing + popcount(bxor(struct.unpack(">I4", a, i), struct.unpack(">I4", b, i)))
  end
  return 1 - 2 * differing / (#a * 8)
end

local function entry_of(id)
  return redis.call("LINDEX", prefix .. ":pages:" .. math.floor(id / chunk), id % chunk)
end

-- The distance of two fingerprints if within ``limit``, else nil (most pairs stop at one half).
local function within(a_hi, a_lo, b_hi, b_lo, limit)
  local d = popcount(bxor(a_hi, b_hi))
  if d > limit then return nil end
  d = d + popcount(bxor(a_lo, b_lo))
  if d > limit then return nil end
  return d
end

-- The content (structure) distance if both pages have that fingerprint and it is within ``limit``.
local function content_within(kept, page, limit)
  if band(kept.flags, 1) == 0 or band(page.flags, 1) == 0 then return nil end
  return within(kept.ch, kept.cl, page.ch, page.cl, limit)
end

local function structure_within(kept, page, limit)
  if band(kept.flags, 2) == 0 or band(page.flags, 2) == 0 then return nil end
  return within(kept.sh, kept.sl, page.sh, page.sl, limit)
end

-- The reason the kept page ``id`` makes ``page`` a duplicate, or nil (the same rules as
-- MemoryStore._find).  ``entry``: the kept page's sketch and URL when at hand, else read.
local function compare(id, kept, entry, page, sketch)
  local content_d = mode ~= "structure" and content_within(kept, page, max_content)
  local structure_d = mode ~= "content" and structure_within(kept, page, max_structure)
  if not content_d and not structure_d then return nil end  -- most pairs end here
  if mode == "both" and not (content_d and structure_d) then return nil end
  if ttl > 0 and now - kept.stamp > ttl then return nil end
  local agreement
  if content_d and sketch then
    entry = entry or entry_of(id)
    local kept_sketch = entry and sketch_of(entry)
    if kept_sketch then agreement = similarity(kept_sketch, sketch) end
  end
  local content_near = agreement ~= nil and agreement >= min_similarity
  local reason
  if mode == "both" and content_near then reason = "both"
  elseif (mode == "content" or mode == "either") and content_near then reason = "content"
  elseif (mode == "structure" or mode == "either") and structure_d then reason = "structure"
  end
  if not reason then return nil end
  entry = entry or entry_of(id)
  local length = string.byte(entry, 1)
  content_d = content_d or content_within(kept, page, 64)  -- both distances go into the reply
  structure_d = structure_d or structure_within(kept, page, 64)
  return {-1, id, string.sub(entry, 2 + length), reason, content_d or -1, structure_d or -1,
          agreement and math.floor(agreement * 1000 + 0.5) or -1000000}
end

-- Records [first, last) of the log, one GETRANGE per chunk; a chunk that expired reads as zeros.
local function read_records(first, last)
  local parts, id = {}, first
  while id < last do
    local base = id - id % chunk
    local from, to = id - base, math.min(chunk, last - base) - 1
    local data = redis.call("GETRANGE", prefix .. ":fp:" .. (base / chunk), from * 24, to * 24 + 23)
    parts[#parts + 1] = data .. string.rep("\0", (to - from + 1) * 24 - #data)
    id = base + chunk
  end
  return table.concat(parts)
end

-- Could ``kept`` be near ``page``?  One popcount, of the high halves: most pairs end here.
local function may_match(kept, page)
  return (mode ~= "structure" and popcount(bxor(kept.ch, page.ch)) <= max_content)
      or (mode ~= "content" and popcount(bxor(kept.sh, page.sh)) <= max_structure)
end

-- The tail: pages other processes kept since the caller's replica was read.
local tail_records = read_records(seen, count)
local tail = {}
for i = 0, count - seen - 1 do
  local kept = decode(string.sub(tail_records, i * 24 + 1, i * 24 + 24))
  if kept.flags ~= 0 then tail[#tail + 1] = {seen + i, kept} end
end

local results, kept_in_batch = {}, {}  -- batch position -> {id, record, entry} of the pages kept
local new_records, new_entries, first_new = {}, {}, count  -- what this batch appends, from id first_new
local position = 0
for i = 11, #ARGV do
  local record, near = string.sub(ARGV[i], 1, 24), string.byte(ARGV[i], 25)
  local candidates, entry = {string.byte(ARGV[i], 26, 25 + near)}, string.sub(ARGV[i], 26 + near)
  local page, sketch = decode(record), sketch_of(entry)
  position = position + 1
  local found
  for _, kept in ipairs(tail) do
    if may_match(kept[2], page) then
      found = compare(kept[1], kept[2], nil, page, sketch)
      if found then break end
    end
  end
  -- earlier pages of this batch: only those the caller found near enough to matter
  for _, candidate in ipairs(found and {} or candidates) do
    local kept = kept_in_batch[candidate]
    if kept then
      found = compare(kept[1], kept[2], kept[3], page, sketch)
      if found then break end
    end
  end
  if found then
    results[#results + 1] = found
  else
    -- the record's stamp is the server's clock: every process ages pages alike
    new_records[#new_records + 1] = string.sub(record, 1, 16) .. struct.pack(">I4", now) .. string.sub(record, 21)
    new_entries[#new_entries + 1] = entry
    page.stamp = now
    kept_in_batch[position] = {count, page, entry}
    results[#results + 1] = {count}
    count = count + 1
  end
end

-- Append the pages kept, a chunk at a time: their records, and their entries to the chunk's list.
local id = first_new
while id < count do
  local n = math.floor(id / chunk)
  local last = math.min(count, (n + 1) * chunk)
  local fp_key, pages_key = prefix .. ":fp:" .. n, prefix .. ":pages:" .. n
  local from, to = id - first_new + 1, last - first_new
  redis.call("SETRANGE", fp_key, (id % chunk) * 24, table.concat(new_records, "", from, to))
  for _ = redis.call("LLEN", pages_key), id % chunk - 1 do
    redis.call("RPUSH", pages_key, "\0")  -- the chunk expired meanwhile: keep positions aligned
  end
  redis.call("RPUSH", pages_key, unpack(new_entries, from, to))
  if ttl > 0 then
    redis.call("EXPIRE", fp_key, ttl)
    redis.call("EXPIRE", pages_key, ttl)
  end
  id = last
end
redis.call("HSET", meta, "count", count)

-- Every record from ``seen`` on (the tail and this batch): the caller's replica catches up.
return {results, tail_records .. table.concat(new_records), now}
