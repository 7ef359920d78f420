-- SPDX-License-Identifier: BSD-2-Clause
-- wrk script: GET /v1/objects/<key> over keys 0 .. KEYS-1, each thread
-- walking its own stride so the threads do not ask in lockstep.
-- KEYS (env) is how many keys bench/http loaded; keys are the index as 64
-- hex digits, as the loader wrote them. PICK=random picks keys at random.
-- STRIDE=S asks for keys 0, S, 2S, ... (KEYS of them): a hot subset of
-- keys put-range.lua wrote. DELAY_MS=D waits D whole ms (wrk rounds down)
-- before each request of a connection: an offered rate of about
-- connections x 1000 / (D + the latency) a second, below saturation.
local keys = tonumber(os.getenv("KEYS") or "1000")
local stride = tonumber(os.getenv("STRIDE") or "1")
local random = os.getenv("PICK") == "random"
local delay_ms = tonumber(os.getenv("DELAY_MS") or "0")
local counter = 0
local threads = 0

function setup(thread)
   thread:set("id", threads)
   threads = threads + 1
end

function init(args)
   counter = (id or 0) * 7919
   math.randomseed(1234 + (id or 0))
end

function request()
   local i
   if random then
      i = math.random(0, keys - 1)
   else
      i = counter % keys
      counter = counter + 1
   end
   return wrk.format("GET", string.format("/v1/objects/%064x", i * stride))
end

if delay_ms > 0 then
   function delay()
      return delay_ms
   end
end

function done(summary, latency, requests)
   io.write(string.format("p99.9: %d us\nnon-2xx: %d\n", latency:percentile(99.9), summary.errors.status))
end
