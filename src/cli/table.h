// Plain-text tables for the CLI: columns padded to their widest cell, no borders.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace baton::cli {

class Table {
 public:
  explicit Table(std::vector<std::string> header) : rows_{std::move(header)} {}
  void Add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  void Print(std::ostream& out) const;

 private:
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace baton::cli
