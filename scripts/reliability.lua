-- wrk script of the reliability campaign's load test (scripts/dnaserve_tools/reliability.py).
--
-- One connection per wrk thread, each sending on its own fixed schedule (open loop: a slow
-- answer does not slow the offered rate down, it only shortens the next pause), so that
-- `connections / WRK_PERIOD_S` requests per second are offered in total. Every response is
-- written to WRK_OUT.<thread> as "<status> <latency s> <well_formed> <sent at, monotonic s>", where
-- well_formed
-- checks a 429 the way a client relies on it: Retry-After of at least 1 s, the RateLimit-*
-- headers, and the JSON error envelope with code too_many_requests and a request id.
--
-- Environment: WRK_BODY (file holding the request body), WRK_KEY (API key), WRK_PERIOD_S
-- (seconds between one connection's requests), WRK_CONNECTIONS (how many), WRK_OUT (output
-- prefix).
local ffi = require("ffi")
ffi.cdef [[
  typedef struct { long tv_sec; long tv_nsec; } dnaserve_timespec;
  int clock_gettime(int clock_id, dnaserve_timespec* tp);
]]
local CLOCK_MONOTONIC = 1
local ts = ffi.new("dnaserve_timespec")
local function now()
  ffi.C.clock_gettime(CLOCK_MONOTONIC, ts)
  return tonumber(ts.tv_sec) + tonumber(ts.tv_nsec) * 1e-9
end

local next_id = 0
function setup(thread)
  thread:set("id", next_id)
  next_id = next_id + 1
end

local out, request_bytes, period, due, started

function init(args)
  local f = assert(io.open(os.getenv("WRK_BODY"), "rb"))
  local body = f:read("*a")
  f:close()
  period = tonumber(os.getenv("WRK_PERIOD_S"))
  out = assert(io.open(os.getenv("WRK_OUT") .. "." .. id, "w"))
  wrk.method = "POST"
  wrk.body = body
  wrk.headers["Authorization"] = "Bearer " .. os.getenv("WRK_KEY")
  wrk.headers["Content-Type"] = "application/json"
  request_bytes = wrk.format()
  -- Spread the connections' schedules evenly over one period: arrivals are then evenly spaced
  -- instead of coming in bursts of one request per connection.
  due = now() + period * id / tonumber(os.getenv("WRK_CONNECTIONS"))
end

function delay()
  due = due + period
  local wait = (due - now()) * 1000
  if wait < 0 then
    due = now()  -- behind schedule: send at once, do not try to catch up in a burst
    return 0
  end
  return wait
end

function request()
  started = now()
  return request_bytes
end

local function well_formed_429(headers, body)
  local h = {}
  for name, value in pairs(headers) do h[string.lower(name)] = value end
  local retry = tonumber(h["retry-after"] or "")
  if not retry or retry < 1 then return false end
  for _, name in ipairs({"ratelimit-limit", "ratelimit-remaining", "ratelimit-reset",
                         "ratelimit-policy", "x-request-id"}) do
    if not h[name] then return false end
  end
  if not string.find(h["content-type"] or "", "application/json", 1, true) then return false end
  if not string.find(body, '"code":"too_many_requests"', 1, true) then return false end
  if not string.find(body, '"request_id":"', 1, true) then return false end
  return true
end

function response(status, headers, body)
  local latency = now() - started
  local ok = 1
  if status == 429 and not well_formed_429(headers, body) then ok = 0 end
  out:write(string.format("%d %.6f %d %.6f\n", status, latency, ok, started))
  out:flush()
end
