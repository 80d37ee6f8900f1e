// wordcount.cpp — a word counter of the kind C++ users write: words from a
// deterministic generator into std::map<std::string, int>, then sorted by
// count with std::sort.  Most of its code is inline library templates: the
// functions the compiler kept out of line must all be numbered and counted
// as the machine calls them.
#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

static std::string word(unsigned &seed)
{
	static const char *syl[] = { "ka", "lo", "mi", "nu", "pe", "ra", "so", "ti" };
	seed = seed * 1103515245u + 12345u;
	std::string w = syl[(seed >> 16) & 7];
	w += syl[(seed >> 20) & 7];
	if ((seed >> 24) & 1)
		w += syl[(seed >> 25) & 7];
	return w;
}

int main()
{
	std::map<std::string, int> counts;
	unsigned seed = 42;
	for (int i = 0; i < 200000; i++)
		counts[word(seed)]++;
	std::vector<std::pair<std::string, int>> v(counts.begin(), counts.end());
	std::sort(v.begin(), v.end(), [](const auto &a, const auto &b) {
		return a.second != b.second ? a.second > b.second : a.first < b.first;
	});
	std::printf("%zu words; most frequent: %s %d\n", v.size(), v[0].first.c_str(), v[0].second);
	return 0;
}
