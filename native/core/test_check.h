// The C++ tests' one assertion: a failed check prints where and why and counts, so a test binary
// reports every failure of a run and exits non-zero at the end (test::exit_code()). CTest runs them
// (CMakeLists.txt, SVC_NATIVE_TESTS).
#pragma once

#include <cstdio>
#include <string>

namespace svc::test {
inline int failures = 0;
inline int exit_code() {
  std::printf(failures ? "%d FAILED\n" : "all passed\n", failures);
  return failures ? 1 : 0;
}
// The function form, for a check whose message is built at run time.
inline void check(bool ok, const std::string& what) {
  if (!ok) {
    std::fprintf(stderr, "FAIL: %s\n", what.c_str());
    ++failures;
  }
}
}  // namespace svc::test

// The training tests spell it svc::train::test.
namespace svc::train {
namespace test = ::svc::test;
}  // namespace svc::train

#define CHECK(cond, ...)                               \
  do {                                                 \
    if (!(cond)) {                                     \
      ++::svc::test::failures;                         \
      std::printf("FAIL %s:%d: ", __FILE__, __LINE__); \
      std::printf(__VA_ARGS__);                        \
      std::printf("\n");                               \
    }                                                  \
  } while (0)
