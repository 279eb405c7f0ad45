-- wrk's requests for ScopeServer: /a, /b, /c/N and /z in turn
-- (test_jalen_jetty, jalen-agent/endpoints.sh, bench/bench_jalen_filter.sh)
local n = 0
request = function()
  n = n + 1
  if n % 4 == 0 then return wrk.format('GET', '/a') end
  if n % 4 == 1 then return wrk.format('GET', '/b') end
  if n % 4 == 2 then return wrk.format('GET', '/z') end
  return wrk.format('GET', '/c/' .. n)
end
