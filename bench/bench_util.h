// Small helpers the load tools share (bench/load.cc, bench/agents.cc).
#pragma once

#include <algorithm>
#include <fstream>
#include <string>
#include <vector>

namespace baton::bench {

// The first line of a file ("" when it cannot be read): server.url, admin.token.
inline std::string ReadFirstLine(const std::string& path) {
  std::ifstream in(path);
  std::string s;
  std::getline(in, s);
  return s;
}

// The p-quantile (0..1) of `v`, nearest rank; 0 for none.
inline double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t i = static_cast<size_t>(p * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

}  // namespace baton::bench
