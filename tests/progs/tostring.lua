-- tostring.lua: 23,000 calls of tostring from Lua (20,000 in a local function,
-- 3,000 into a table then sorted); prints "tostring CALLS DIGITS FIRST LAST".
local n, acc = 0, 0
local function f(i) local s = tostring(i); n = n + 1; acc = acc + #s end
for i = 1, 20000 do f(i) end
local t = {}
for i = 1, 3000 do t[#t + 1] = tostring(i * 7) ; n = n + 1 end
table.sort(t)
print("tostring", n, acc, t[1], t[#t])
