// The one tile shape every AMX kernel here uses: tiles 0-7 each 16 rows of 64 bytes (a 16 x 16
// block of fp32 or int32 sums, 16 x 32 bf16 or 16 x 64 int8 of an operand). A thread loads it
// before its first tile instruction and releases the tiles when its task is done: other code on
// the same thread (onnxruntime's kernels, say) may configure tiles its own way in between.
// Include only from files whose functions are built with AMX enabled (a target pragma).
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace svc {
namespace {

struct alignas(64) AmxTileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t bytes_per_row[16] = {};
  uint8_t rows[16] = {};
};

inline void load_amx_tiles() {
  AmxTileConfig cfg;
  for (int t = 0; t < 8; ++t) {
    cfg.rows[t] = 16;
    cfg.bytes_per_row[t] = 64;
  }
  // Not _tile_loadconfig: GCC 12's version names only the first 8 bytes of the configuration as
  // its input, so the compiler may drop the stores to the rest. The whole struct is the operand here.
  __asm__ volatile("ldtilecfg %0" : : "m"(cfg));
}

// Hands the tile state back, so the OS need not save 8 KiB of it on every switch.
inline void release_amx_tiles() { _tile_release(); }

}  // namespace
}  // namespace svc
