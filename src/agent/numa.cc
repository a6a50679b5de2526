#include "agent/numa.h"

#include <filesystem>
#include <fstream>

namespace baton::agent {

HostNuma HostNuma::Read(const std::string& root) {
  std::map<int, std::string> lists;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(root, ec)) {
    std::string name = entry.path().filename().string();
    if (name.size() < 5 || name.compare(0, 4, "node") != 0) continue;
    if (name.find_first_not_of("0123456789", 4) != std::string::npos) continue;
    std::ifstream in(entry.path() / "cpulist");
    std::string list;
    if (!std::getline(in, list) || list.empty()) continue;  // a memory-only node
    if (list.find_first_not_of("0123456789,-") != std::string::npos) continue;
    lists[std::stoi(name.substr(4))] = list;
  }
  return HostNuma(std::move(lists));
}

std::optional<std::string> HostNuma::CpusOf(const std::set<int>& nodes) const {
  std::string out;
  for (int n : nodes) {
    auto it = cpulists_.find(n);
    if (it == cpulists_.end()) return std::nullopt;
    out += (out.empty() ? "" : ",") + it->second;
  }
  if (out.empty()) return std::nullopt;
  return out;
}

}  // namespace baton::agent
