#include "kforge/backend.hpp"
#include "kforge/error.hpp"

namespace kforge {

std::unique_ptr<Backend> make_cpu_backend(const BackendOptions& opts);
#ifdef KFORGE_WITH_OPENCL
std::unique_ptr<Backend> make_opencl_backend(const BackendOptions& opts);
#endif
#ifdef KFORGE_WITH_CUDA
std::unique_ptr<Backend> make_cuda_backend(const BackendOptions& opts);
#endif

std::vector<std::string> backend_names() {
  std::vector<std::string> names{"cpu"};
#ifdef KFORGE_WITH_OPENCL
  names.push_back("opencl");
#endif
#ifdef KFORGE_WITH_CUDA
  names.push_back("cuda");
#endif
  return names;
}

std::unique_ptr<Backend> make_backend(const std::string& name, const BackendOptions& opts) {
  if (name == "cpu") return make_cpu_backend(opts);
#ifdef KFORGE_WITH_OPENCL
  if (name == "opencl") return make_opencl_backend(opts);
#endif
#ifdef KFORGE_WITH_CUDA
  if (name == "cuda") return make_cuda_backend(opts);
#endif
  std::string known;
  for (const auto& n : backend_names()) known += (known.empty() ? "" : ", ") + n;
  throw UsageError("unknown backend '" + name + "' (this build has: " + known + ")");
}

}  // namespace kforge
