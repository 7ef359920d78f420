-- SPDX-License-Identifier: BSD-2-Clause
-- wrk script: PUT /v1/objects/<key> once for each key FIRST .. FIRST+COUNT-1
-- (env; keys are the index as 64 hex digits, as get-keys.lua asks for them),
-- the threads taking the keys in turn, each body MIN..MAX bytes (env, default
-- 100..1500), its size chosen from the key so every run writes the same
-- bytes. When a thread has put its share it GETs its keys that are multiples
-- of 10 (the hot tenth) for the rest of the run.
local first = tonumber(os.getenv("FIRST") or "0")
local count = tonumber(os.getenv("COUNT") or "10000")
local min = tonumber(os.getenv("MIN") or "100")
local max = tonumber(os.getenv("MAX") or "1500")
local threads = 0
local n = 0
local bodies = {}

function setup(thread)
   thread:set("id", threads)
   threads = threads + 1
end

function init(args)
   n = 0
   nthreads = tonumber(os.getenv("THREADS") or "2")
end

local function body_of(i)
   local size = min + (i * 2654435761) % (max - min + 1)
   local b = bodies[size]
   if b == nil then
      b = string.rep("v", size)
      bodies[size] = b
   end
   return b
end

function request()
   local i = first + (id or 0) + n * nthreads
   n = n + 1
   if i < first + count then
      return wrk.format("PUT", string.format("/v1/objects/%064x", i),
                        { ["Content-Type"] = "application/octet-stream" }, body_of(i))
   end
   local hot = first + ((i - first) % count) - ((i - first) % count) % 10
   return wrk.format("GET", string.format("/v1/objects/%064x", hot))
end

function done(summary, latency, requests)
   io.write(string.format("non-2xx: %d\n", summary.errors.status))
end
