#include "pdlaunch/errors.h"

#include <system_error>

namespace pdlaunch {

void ThrowSystemError(int err, std::string_view what) {
  throw std::system_error(err, std::generic_category(), std::string(what));
}

}  // namespace pdlaunch
