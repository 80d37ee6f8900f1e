-- bench.lua — a call-heavy Lua workload for sonde's tests and benchmarks:
-- recursion, table churn, string building, closures.  N scales it.
local N = tonumber(arg and arg[1]) or 20
local function fib(n) if n < 2 then return n end return fib(n - 1) + fib(n - 2) end
local t = {}
for i = 1, N * 1000 do t[i] = { id = i, name = "k" .. i } end
table.sort(t, function(a, b) return a.name < b.name end)
local parts = {}
for i = 1, N * 200 do parts[#parts + 1] = string.format("%d:%s", i, t[i % #t + 1].name) end
local s = table.concat(parts, ",")
local count = 0
for _ in s:gmatch("k1") do count = count + 1 end
print(fib(N), #t, #s, count)
