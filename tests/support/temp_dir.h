// The one temporary-directory helper of the tests: a fresh directory under $TMPDIR
// (or /tmp), removed with everything in it when the owner goes away.
#pragma once

#include <string>

namespace writ::testing {

class TempDir {
 public:
  explicit TempDir(const std::string& stem = "writ-test");
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  std::string File(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

}  // namespace writ::testing
