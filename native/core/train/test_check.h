// The C++ training tests' one assertion: a failed CHECK prints where and why and counts, so a
// test binary reports every failure of a run and exits non-zero at the end (test::exit_code()).
#pragma once

#include <cstdio>

namespace svc::train::test {
inline int failures = 0;
inline int exit_code() {
  std::printf(failures ? "%d FAILED\n" : "all passed\n", failures);
  return failures ? 1 : 0;
}
}  // namespace svc::train::test

#define CHECK(cond, ...)                                 \
  do {                                                   \
    if (!(cond)) {                                       \
      ++svc::train::test::failures;                      \
      std::printf("FAIL %s:%d: ", __FILE__, __LINE__);   \
      std::printf(__VA_ARGS__);                          \
      std::printf("\n");                                 \
    }                                                    \
  } while (0)
