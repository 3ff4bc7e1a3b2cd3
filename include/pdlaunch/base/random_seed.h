#pragma once

#include <cstdint>

namespace pdlaunch {

/// 64 bits from the kernel's random pool (getrandom(2), never blocking), for the seeds of jitter,
/// pod names and node ids; the clock and the pid when the pool is not ready yet (early boot).
/// Not std::random_device: libstdc++'s calls arc4random, a glibc 2.36 symbol, which would raise
/// the glibc the launcher needs (docs/install.md, "The glibc floor"). Never throws.
uint64_t RandomSeed() noexcept;

}  // namespace pdlaunch
