-- SPDX-License-Identifier: BSD-2-Clause
-- wrk script: GET /v1/objects/<key> over keys 0 .. KEYS-1, each thread
-- walking its own stride so the threads do not ask in lockstep.
-- KEYS (env) is how many keys bench/http loaded; keys are the index as 64
-- hex digits, as the loader wrote them. PICK=random picks keys at random.
-- STRIDE=S asks for keys 0, S, 2S, ... (KEYS of them): a hot subset of
-- keys put-range.lua wrote.
local keys = tonumber(os.getenv("KEYS") or "1000")
local stride = tonumber(os.getenv("STRIDE") or "1")
local random = os.getenv("PICK") == "random"
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
