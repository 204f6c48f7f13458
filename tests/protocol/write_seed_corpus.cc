// Writes the protocol fuzzer's seed corpus: write_seed_corpus DIR
#include <cstdio>
#include <fstream>
#include <string>

#include "seed_corpus.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  for (const auto& [name, bytes] : writ::protocol::testing::SeedCorpus()) {
    const std::string path = std::string(argv[1]) + "/" + name;
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(bytes.data()),
              static_cast<std::streamsize>(bytes.size()));
    if (!out) {
      std::fprintf(stderr, "write_seed_corpus: cannot write %s\n", path.c_str());
      return 1;
    }
  }
  return 0;
}
