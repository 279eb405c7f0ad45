-- wrk's requests for ScopeServer: /a, /b and /c/N in turn
-- (test_jalen_jetty, jalen-agent/endpoints.sh, bench/bench_jalen_filter.sh)
local n = 0
request = function()
  n = n + 1
  if n % 3 == 0 then return wrk.format('GET', '/a') end
  if n % 3 == 1 then return wrk.format('GET', '/b') end
  return wrk.format('GET', '/c/' .. n)
end
