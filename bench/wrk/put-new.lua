-- SPDX-License-Identifier: BSD-2-Clause
-- wrk script: PUT /v1/objects/<new key> with a SIZE-byte body (default
-- 200). Keys are RUN (env, distinct per run), the thread id and a counter,
-- so no two requests of any run name the same key and every PUT stores.
-- SYNC=1 adds ?sync=1 (answered once the object is durable); DELAY_MS as
-- in get-keys.lua.
local size = tonumber(os.getenv("SIZE") or "200")
local run = tonumber(os.getenv("RUN") or "1")
local body = string.rep("v", size)
local query = os.getenv("SYNC") == "1" and "?sync=1" or ""
local delay_ms = tonumber(os.getenv("DELAY_MS") or "0")
local counter = 0
local threads = 0

function setup(thread)
   thread:set("id", threads)
   threads = threads + 1
end

function request()
   counter = counter + 1
   local path = string.format("/v1/objects/%016x%016x%032x%s", 4096 + run, id or 0, counter, query)
   return wrk.format("PUT", path, { ["Content-Type"] = "application/octet-stream" }, body)
end

if delay_ms > 0 then
   function delay()
      return delay_ms
   end
end

function done(summary, latency, requests)
   -- wrk counts non-2xx/3xx responses in summary.errors.status; report it.
   io.write(string.format("p99.9: %d us\nnon-2xx: %d\n", latency:percentile(99.9), summary.errors.status))
end
