#pragma once
// CUDA C++ to a CUBIN with NVRTC, cached on disk by content hash. Needs no GPU and no driver.
#include <string>

#include "kforge/backend.hpp"

namespace kforge::cuda {

struct Cubin {
  std::string image;       // the ELF image for cuModuleLoadData
  std::string entry_name;  // the entry's symbol in the image (its lowered name)
  std::string arch;        // "sm_90"
  std::string log;         // NVRTC's warnings, if any (ptxas's report is in `resources`)
  CompilerResources resources;  // the entry's registers, spills, shared memory (ptxas)
  std::string ptx_file;    // NVRTC's PTX of the whole source, cached beside the CUBIN
  std::string ptx;         // its text, when just compiled (empty from the cache)
  double compile_s = 0;    // 0 when it came from the cache
};

// Compiles `source`, behind the CUDA prelude (src/backend/cuda/prelude.cuh), for `arch`
// ("sm_90") with `defines`; the entry must be a kernel the source defines. NVRTC's messages name
// `source_name` (the kernel's file; "kernel.cu" when empty) and the kernel's own lines. Throws
// CompileError with NVRTC's log.
[[nodiscard]] Cubin compile_cubin(const std::string& source, const std::string& entry,
                                  const Defines& defines, const std::string& arch,
                                  const std::string& source_name = {});

[[nodiscard]] std::string nvrtc_version();  // "13.0"

}  // namespace kforge::cuda
