#include "core/hostlist.h"

#include <algorithm>
#include <cstdint>

namespace baton {

namespace {

// A name split at the digits that end it: "gpu07" -> ("gpu", "07"); "login" -> ("login", "").
std::pair<std::string_view, std::string_view> SplitNumber(std::string_view name) {
  size_t i = name.size();
  while (i > 0 && name[i - 1] >= '0' && name[i - 1] <= '9') --i;
  return {name.substr(0, i), name.substr(i)};
}

uint64_t Number(std::string_view digits) {
  uint64_t n = 0;
  for (char c : digits) n = n * 10 + static_cast<uint64_t>(c - '0');
  return n;
}

std::string Padded(uint64_t n, size_t width) {
  std::string s = std::to_string(n);
  if (s.size() < width) s.insert(0, width - s.size(), '0');
  return s;
}

// "1-3,7" of a bracket -> 1 2 3 7 (zero padding kept).
Status ExpandRanges(std::string_view ranges, std::string_view list, std::vector<std::string>* out,
                    size_t max_names) {
  auto bad = [&](const std::string& why) {
    return InvalidArgument("host list \"" + std::string(list.substr(0, 80)) + "\": " + why);
  };
  size_t start = 0;
  while (start <= ranges.size()) {
    size_t comma = std::min(ranges.find(',', start), ranges.size());
    std::string_view range = ranges.substr(start, comma - start);
    size_t dash = range.find('-');
    std::string_view lo = range.substr(0, dash);
    std::string_view hi = dash == std::string_view::npos ? lo : range.substr(dash + 1);
    auto digits = [](std::string_view s) {
      return !s.empty() && s.size() <= 18 &&
             std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
    };
    if (!digits(lo) || !digits(hi)) return bad("\"" + std::string(range) + "\" is not a range");
    uint64_t a = Number(lo), b = Number(hi);
    if (b < a) return bad("\"" + std::string(range) + "\" runs backwards");
    if (b - a >= max_names || out->size() + (b - a + 1) > max_names)
      return bad("more than " + std::to_string(max_names) + " names");
    size_t width = lo.size() > 1 && lo[0] == '0' ? lo.size() : 0;
    for (uint64_t n = a; n <= b; ++n) out->push_back(Padded(n, width));
    start = comma + 1;
  }
  return Status::Ok();
}

}  // namespace

std::string CompressHostList(const std::vector<std::string>& names) {
  std::string out;
  size_t i = 0;
  while (i < names.size()) {
    auto [prefix, digits] = SplitNumber(names[i]);
    // The run of names after i with the same prefix and width, each number above the last.
    size_t j = i + 1;
    if (!digits.empty()) {
      uint64_t last = Number(digits);
      for (; j < names.size(); ++j) {
        auto [p, d] = SplitNumber(names[j]);
        if (p != prefix || d.size() != digits.size() || d.size() > 18 || Number(d) <= last) break;
        last = Number(d);
      }
    }
    if (!out.empty()) out += ',';
    if (j == i + 1 || digits.size() > 18) {
      out += names[i];
      ++i;
      continue;
    }
    out += std::string(prefix) + '[';
    size_t width = digits.size();
    for (size_t k = i; k < j;) {
      uint64_t a = Number(SplitNumber(names[k]).second), b = a;
      size_t m = k + 1;
      while (m < j && Number(SplitNumber(names[m]).second) == b + 1) {
        ++b;
        ++m;
      }
      if (k > i) out += ',';
      out += Padded(a, width);
      if (b > a) out += '-' + Padded(b, width);
      k = m;
    }
    out += ']';
    i = j;
  }
  return out;
}

Result<std::vector<std::string>> ExpandHostList(std::string_view list, size_t max_names) {
  std::vector<std::string> out;
  auto bad = [&](const std::string& why) {
    return Err(InvalidArgument("host list \"" + std::string(list.substr(0, 80)) + "\": " + why));
  };
  size_t i = 0;
  while (i < list.size()) {
    // One name pattern, up to the next comma outside brackets.
    std::vector<std::string> names = {""};
    while (i < list.size() && list[i] != ',') {
      if (list[i] == ']') return bad("a ']' without its '['");
      if (list[i] != '[') {
        for (std::string& n : names) n += list[i];
        ++i;
        continue;
      }
      size_t close = list.find(']', i);
      if (close == std::string_view::npos) return bad("a '[' without its ']'");
      std::vector<std::string> numbers;
      RETURN_IF_ERROR(ExpandRanges(list.substr(i + 1, close - i - 1), list, &numbers, max_names));
      if (names.size() * numbers.size() + out.size() > max_names)
        return bad("more than " + std::to_string(max_names) + " names");
      std::vector<std::string> product;
      for (const std::string& n : names) {
        for (const std::string& d : numbers) product.push_back(n + d);
      }
      names = std::move(product);
      i = close + 1;
    }
    for (std::string& n : names) {
      if (n.empty()) return bad("an empty name");
      if (n.find_first_of(" \t\n[]") != std::string::npos) return bad("\"" + n + "\" is no name");
      out.push_back(std::move(n));
    }
    if (i < list.size()) {
      ++i;  // the comma
      if (i == list.size()) return bad("ends with a comma");
    }
  }
  return out;
}

}  // namespace baton
