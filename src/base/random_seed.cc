#include "pdlaunch/base/random_seed.h"

#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include <cstdint>

namespace pdlaunch {

uint64_t RandomSeed() noexcept {
  uint64_t seed = 0;
  if (::getrandom(&seed, sizeof seed, GRND_NONBLOCK) == static_cast<ssize_t>(sizeof seed)) {
    return seed;
  }
  timespec now{};
  ::clock_gettime(CLOCK_REALTIME, &now);
  return (static_cast<uint64_t>(now.tv_sec) << 32) ^ static_cast<uint64_t>(now.tv_nsec) ^
         (static_cast<uint64_t>(::getpid()) << 16);
}

}  // namespace pdlaunch
