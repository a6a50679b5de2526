// Runs a fuzz target over files and directories of inputs (the seed corpus and any crash
// reproducers), for builds without libFuzzer (GCC): `make test` replays every corpus under
// ASan+UBSan, then, given -seconds=N, feeds the target random mutations of those inputs for N
// seconds (bytes flipped, inserted, deleted, repeated, inputs cut and spliced): no coverage
// guidance, as libFuzzer has (`make fuzz`), but every run tries new inputs under the
// sanitizers. An input that crashes is left in a file (and the seed is printed) before
// the sanitizer's report (./crash-TARGET, TARGET this program's name), so that it can be
// replayed and added to the corpus.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

std::string ReadAll(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void Run(const std::string& bytes) {
  LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
}

// One random change to `s`.
void Mutate(std::string& s, const std::vector<std::string>& inputs, std::mt19937_64& rng) {
  auto pick = [&](size_t n) { return n == 0 ? size_t{0} : static_cast<size_t>(rng() % n); };
  static const char* kInteresting[] = {"\"",
                                       "\\",
                                       "{",
                                       "}",
                                       "[",
                                       "]",
                                       ",",
                                       ":",
                                       "\n",
                                       "\\u0000",
                                       "-1",
                                       "1e999",
                                       "9223372036854775808",
                                       "null",
                                       "\xff"};
  switch (rng() % 7) {
    case 0:  // flip a byte's bit
      if (!s.empty()) s[pick(s.size())] ^= static_cast<char>(1u << (rng() % 8));
      break;
    case 1:  // a random byte in
      s.insert(s.begin() + static_cast<std::ptrdiff_t>(pick(s.size() + 1)),
               static_cast<char>(rng() & 0xff));
      break;
    case 2:  // a range out
      if (!s.empty()) {
        size_t at = pick(s.size());
        s.erase(at, 1 + pick(std::min<size_t>(16, s.size() - at)));
      }
      break;
    case 3: {  // a range repeated
      if (s.empty() || s.size() > (1u << 16)) break;
      size_t at = pick(s.size());
      std::string part = s.substr(at, 1 + pick(std::min<size_t>(64, s.size() - at)));
      s.insert(pick(s.size() + 1), part);
      break;
    }
    case 4:  // cut short
      s.resize(pick(s.size() + 1));
      break;
    case 5: {  // spliced with another input
      const std::string& other = inputs[pick(inputs.size())];
      s = s.substr(0, pick(s.size() + 1)) + other.substr(pick(other.size() + 1));
      break;
    }
    default:  // a token parsers care about
      s.insert(pick(s.size() + 1), kInteresting[pick(std::size(kInteresting))]);
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> inputs;
  double seconds = 0;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "-seconds=", 9) == 0) {
      seconds = std::atof(argv[i] + 9);
      continue;
    }
    std::filesystem::path p(argv[i]);
    if (std::filesystem::is_directory(p)) {
      for (const auto& e : std::filesystem::recursive_directory_iterator(p)) {
        if (e.is_regular_file()) inputs.push_back(ReadAll(e.path()));
      }
    } else {
      inputs.push_back(ReadAll(p));
    }
  }
  for (const std::string& in : inputs) Run(in);
  std::printf("replayed %zu inputs\n", inputs.size());
  if (inputs.empty()) return 1;
  if (seconds <= 0) return 0;

  uint64_t seed = std::random_device{}();
  std::printf("mutating for %.0f s, seed %llu\n", seconds, static_cast<unsigned long long>(seed));
  std::fflush(stdout);
  std::mt19937_64 rng(seed);
  const std::string crash = "crash-" + std::filesystem::path(argv[0]).filename().string();
  auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  long runs = 0;
  while (std::chrono::steady_clock::now() < end) {
    for (int batch = 0; batch < 64; ++batch) {
      std::string s = inputs[rng() % inputs.size()];
      for (int m = 1 + static_cast<int>(rng() % 4); m > 0; --m) Mutate(s, inputs, rng);
      {
        std::ofstream out(crash, std::ios::binary | std::ios::trunc);
        out << s;
      }
      Run(s);
      ++runs;
    }
  }
  std::filesystem::remove(crash);
  std::printf("ran %ld mutated inputs\n", runs);
  return 0;
}
