#include "backend/anonymous_mapping.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <new>

namespace kforge {

namespace {
constexpr std::size_t kHuge = std::size_t{2} << 20;
}

AnonymousMapping::AnonymousMapping(std::size_t bytes) {
  mapped_ = (bytes + kHuge - 1) / kHuge * kHuge + kHuge;  // room to align the start
  void* m = mmap(nullptr, mapped_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) throw std::bad_alloc();
  map_ = static_cast<unsigned char*>(m);
  data_ = map_ + (kHuge - reinterpret_cast<std::uintptr_t>(map_) % kHuge) % kHuge;
  // Streaming kernels miss the TLB 512x less often on 2 MiB pages; transparent huge pages are
  // often "madvise" only, so ask (a hint: refused, the small pages serve).
  madvise(data_, mapped_ - kHuge, MADV_HUGEPAGE);
}

AnonymousMapping::~AnonymousMapping() { munmap(map_, mapped_); }

// Old size 0 makes mremap duplicate a shared mapping; memfd_create would be the other way, and
// the worker's sandbox refuses it.
bool AnonymousMapping::fold(std::size_t offset, std::size_t bytes, std::size_t period) {
  const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  unsigned char* at = data_ + offset;
  if (period == 0 || period % page || reinterpret_cast<std::uintptr_t>(at) % page || at + bytes > map_ + mapped_)
    return false;
  void* block = mmap(nullptr, period, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (block == MAP_FAILED) return false;
  bool ok = true;
  for (std::size_t done = 0; ok && done < bytes; done += period) {
    const std::size_t len = std::min(period, bytes - done);
    ok = mremap(block, 0, len, MREMAP_MAYMOVE | MREMAP_FIXED, at + done) != MAP_FAILED;
  }
  munmap(block, period);  // the folded range keeps the pages
  return ok;
}

}  // namespace kforge
