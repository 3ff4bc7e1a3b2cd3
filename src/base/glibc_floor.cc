// The launcher runs on glibc 2.34 and later (docs/install.md, "The glibc floor"): Ubuntu 22.04
// (2.35), the base of Paddle's CUDA 12 images, and RHEL 9 (2.34), although it is built on
// Debian 12 (2.36). Linked into the launcher itself, not into a library, so that the static
// linker sees this definition before libgcc_eh asks for the symbol.
//
// _dl_find_object (glibc 2.35): the static libgcc's unwinder, built against glibc 2.36, finds an
// address's exception tables through it and has no fallback when it is declared. This one walks
// the loaded objects with dl_iterate_phdr (glibc 2.2.5), as libgcc itself did before 2.35: a
// thrown exception costs a little more (the loader's lock, a few objects per frame), and the
// launcher throws only on its error paths and for --help and --version.
#include <dlfcn.h>
#include <elf.h>
#include <link.h>

#include <algorithm>
#include <cstdint>

namespace {

struct Search {
  std::uintptr_t address = 0;
  dl_find_object* result = nullptr;
  bool found = false;
};

int FindObject(dl_phdr_info* info, size_t /*size*/, void* data) {
  auto* search = static_cast<Search*>(data);
  std::uintptr_t low = UINTPTR_MAX;
  std::uintptr_t high = 0;
  bool contains = false;
  const ElfW(Phdr)* eh_frame = nullptr;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& header = info->dlpi_phdr[i];
    if (header.p_type == PT_LOAD) {
      const std::uintptr_t start = info->dlpi_addr + header.p_vaddr;
      const std::uintptr_t end = start + header.p_memsz;
      low = std::min(low, start);
      high = std::max(high, end);
      contains = contains || (search->address >= start && search->address < end);
    } else if (header.p_type == PT_GNU_EH_FRAME) {
      eh_frame = &header;
    }
  }
  if (!contains) return 0;
  dl_find_object& result = *search->result;
  result.dlfo_flags = 0;
  // The loader's addresses are integers (dl_phdr_info): the casts are the interface.
  // NOLINTBEGIN(performance-no-int-to-ptr)
  result.dlfo_map_start = reinterpret_cast<void*>(low);
  result.dlfo_map_end = reinterpret_cast<void*>(high);
  result.dlfo_link_map = nullptr;
  result.dlfo_eh_frame =
      eh_frame != nullptr ? reinterpret_cast<void*>(info->dlpi_addr + eh_frame->p_vaddr) : nullptr;
  // NOLINTEND(performance-no-int-to-ptr)
  search->found = true;
  return 1;
}

}  // namespace

extern "C" int _dl_find_object(void* address, dl_find_object* result) noexcept {
  Search search{reinterpret_cast<std::uintptr_t>(address), result, false};
  ::dl_iterate_phdr(FindObject, &search);
  if (!search.found) return -1;
  link_map* map = nullptr;
  Dl_info info{};  // Unused: dladdr1 wants one.
  if (::dladdr1(address, &info, reinterpret_cast<void**>(&map), RTLD_DL_LINKMAP) != 0) {
    result->dlfo_link_map = map;
  }
  return 0;
}
