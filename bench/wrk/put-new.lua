-- SPDX-License-Identifier: BSD-2-Clause
-- wrk script: PUT /v1/objects/<new key> with a SIZE-byte body (default
-- 200). Keys are RUN (env, distinct per run), the thread id and a counter,
-- so no two requests of any run name the same key and every PUT stores.
local size = tonumber(os.getenv("SIZE") or "200")
local run = tonumber(os.getenv("RUN") or "1")
local body = string.rep("v", size)
local counter = 0
local threads = 0

function setup(thread)
   thread:set("id", threads)
   threads = threads + 1
end

function request()
   counter = counter + 1
   local path = string.format("/v1/objects/%016x%016x%032x", 4096 + run, id or 0, counter)
   return wrk.format("PUT", path, { ["Content-Type"] = "application/octet-stream" }, body)
end

function done(summary, latency, requests)
   -- wrk counts non-2xx/3xx responses in summary.errors.status; report it.
   io.write(string.format("non-2xx: %d\n", summary.errors.status))
end
