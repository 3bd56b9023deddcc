-- wrk script of benchmarks/bench_serve.py: one request shape per run, set by environment
-- variables (read in every Lua state wrk creates: the main one and one per thread).
--
--   WRK_METHOD   GET or POST (default GET)
--   WRK_BODY     the body of every request (POST), sent with Content-Type: application/json
--   WRK_BODIES   a file of bodies, one per line; thread n of N sends lines n, n+N, ... once
--                each and stops when it has all their answers (the run's -d is a cap)
--   WRK_AUTH     the Authorization header's value, if any
--   WRK_TO       with WRK_BODY: a recipient prefix ("+90532"); each request's body then
--                has its "@TO@" replaced by that prefix, the thread's number and a counter
--                (7 digits in all), so every request goes to another number
--   WRK_PATH     with WRK_TO and no body: a request path with "@TO@" in it (a GET's query,
--                e.g. Kannel's sendsms), replaced the same way in every request
--
-- done() prints one line, "WRK_RESULT {json}": requests, duration (µs), latency percentiles
-- (µs), socket errors, and the count of every HTTP status seen (wrk itself counts only
-- statuses over 399, as errors.status; 1xx and 3xx would be missed).

local method = os.getenv("WRK_METHOD") or "GET"
local body = os.getenv("WRK_BODY")
local bodies_file = os.getenv("WRK_BODIES")
local auth = os.getenv("WRK_AUTH")
local to_prefix = os.getenv("WRK_TO")
local path_template = os.getenv("WRK_PATH")

wrk.method = method
wrk.headers["Connection"] = "keep-alive"
if auth and auth ~= "" then
   wrk.headers["Authorization"] = auth
end
if body or bodies_file then
   wrk.headers["Content-Type"] = "application/json"
end
if body and not to_prefix then
   wrk.body = body
end

-- main state: the threads, to collect their counts in done()
local threads = {}
local next_id = 0

function setup(thread)
   thread:set("tid", next_id)
   next_id = next_id + 1
   table.insert(threads, thread)
end

-- thread state
codes = {}
answered = 0
local mine = nil
local sent = 0

function init(args)
   if not bodies_file then
      return
   end
   mine = {}
   local nthreads = tonumber(os.getenv("WRK_THREADS") or "1")
   local i = 0
   for line in io.lines(bodies_file) do
      if line ~= "" then
         if i % nthreads == tid then
            table.insert(mine, line)
         end
         i = i + 1
      end
   end
end

if bodies_file then
   function request()
      sent = sent + 1
      -- wrk calls thread 1's request() once before the run, to check it (and never sends
      -- what that call returns): that thread's first body is left out. Past the end, send
      -- the first body again: for thread 1 that is the one left out; the other repeats are
      -- the last requests in flight, and the thread stops once it has as many answers as
      -- bodies, so their answers are not counted.
      local b = mine[sent] or mine[1]
      return wrk.format(nil, nil, nil, b)
   end
end

if body and to_prefix then
   function request()
      sent = sent + 1
      local to = string.format("%s%d%06d", to_prefix, tid % 10, sent % 1000000)
      return wrk.format(nil, nil, nil, (body:gsub("@TO@", to, 1)))
   end
end

if path_template and to_prefix and not body then
   function request()
      sent = sent + 1
      local to = string.format("%s%d%06d", to_prefix, tid % 10, sent % 1000000)
      return wrk.format(nil, (path_template:gsub("@TO@", to, 1)))
   end
end

function response(status, headers, body)
   codes[status] = (codes[status] or 0) + 1
   answered = answered + 1
   if mine and answered >= #mine then
      wrk.thread:stop()
   end
end

function done(summary, latency, requests)
   local totals = {}
   for _, thread in ipairs(threads) do
      local c = thread:get("codes")
      for status, n in pairs(c) do
         totals[status] = (totals[status] or 0) + n
      end
   end
   local parts = {}
   for status, n in pairs(totals) do
      table.insert(parts, string.format('"%d": %d', status, n))
   end
   local e = summary.errors
   io.write(string.format(
      'WRK_RESULT {"requests": %d, "duration_us": %d, "p50_us": %d, "p90_us": %d, '
         .. '"p99_us": %d, "max_us": %d, "errors": {"connect": %d, "read": %d, "write": %d, '
         .. '"timeout": %d, "status": %d}, "codes": {%s}}\n',
      summary.requests, summary.duration, latency:percentile(50), latency:percentile(90),
      latency:percentile(99), latency.max, e.connect, e.read, e.write, e.timeout, e.status,
      table.concat(parts, ", ")))
end
