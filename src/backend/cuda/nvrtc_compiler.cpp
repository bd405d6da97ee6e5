#include "backend/cuda/nvrtc_compiler.hpp"

#include <nvrtc.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <filesystem>
#include <memory>

#include "backend/cuda/ptxas_report.hpp"
#include "backend/with_prelude.hpp"
#include "kforge/error.hpp"
#include "kforge/util.hpp"

namespace kforge::cuda {
namespace {

struct ProgramDeleter {
  void operator()(nvrtcProgram p) const { nvrtcDestroyProgram(&p); }
};
using Program = std::unique_ptr<_nvrtcProgram, ProgramDeleter>;

bool is_identifier(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

std::vector<std::string> options(const Defines& defines, const std::string& arch) {
  // ptxas's verbose report gives registers, spills and shared memory without a GPU.
  std::vector<std::string> o{"--gpu-architecture=" + arch, "-std=c++17", "--ptxas-options=-v"};
  // The toolkit's headers (cuda_fp16.h, cuda_bf16.h, ...), found when kforge was configured.
  for (const auto& dir : split(KFORGE_CUDA_INCLUDE, ';'))
    if (!dir.empty()) o.push_back("-I" + dir);
  for (const auto& [k, v] : defines) o.push_back("-D" + k + "=" + v);
  return o;
}

std::string program_log(nvrtcProgram p) {
  std::size_t n = 0;
  if (nvrtcGetProgramLogSize(p, &n) != NVRTC_SUCCESS || n <= 1) return {};
  std::string log(n, '\0');
  nvrtcGetProgramLog(p, log.data());
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
  return log;
}

}  // namespace

std::string nvrtc_version() {
  int major = 0, minor = 0;
  nvrtcVersion(&major, &minor);
  return std::to_string(major) + "." + std::to_string(minor);
}

// Compiles with `opts` into out.image/entry_name/log; leaves out.image empty when ptxas did
// not know the entry by its plain name; throws CompileError for every other failure.
void nvrtc_compile(const std::string& source, const std::string& entry,
                   const std::vector<std::string>& opts, Cubin& out) {
  nvrtcProgram raw = nullptr;
  if (nvrtcResult r = nvrtcCreateProgram(&raw, source.c_str(), "kernel.cu", 0, nullptr, nullptr);
      r != NVRTC_SUCCESS)
    throw CompileError("NVRTC could not create a program", nvrtcGetErrorString(r));
  const Program prog(raw);
  // Asking for the entry's lowered name makes NVRTC check that the source defines it, and
  // gives its symbol even when it has C++ linkage.
  nvrtcAddNameExpression(raw, entry.c_str());
  std::vector<const char*> argv;
  for (const auto& o : opts) argv.push_back(o.c_str());
  const nvrtcResult r = nvrtcCompileProgram(raw, static_cast<int>(argv.size()), argv.data());
  out.log = program_log(raw);
  if (r != NVRTC_SUCCESS) {
    if (opts.back().rfind("--ptxas-options=--entry=", 0) == 0 &&
        out.log.find("Unknown function " + entry) != std::string::npos)
      return;
    if (out.log.find("__nv_name_map") != std::string::npos)
      throw CompileError(
          "the source defines no kernel '" + entry + "'",
          "declare it as: extern \"C\" __global__ void " + entry + "(...)\n" + out.log);
    throw CompileError(
        std::string("CUDA compilation failed (") + nvrtcGetErrorString(r) + ", " + out.arch + ")",
        out.log);
  }
  const char* lowered = nullptr;
  if (nvrtcGetLoweredName(raw, entry.c_str(), &lowered) != NVRTC_SUCCESS || !lowered)
    throw CompileError("the source defines no kernel '" + entry + "'", out.log);
  out.entry_name = lowered;
  std::size_t size = 0;
  if (nvrtcGetCUBINSize(raw, &size) != NVRTC_SUCCESS || size == 0)
    throw CompileError("NVRTC produced no CUBIN for " + out.arch, out.log);
  out.image.resize(size);
  nvrtcGetCUBIN(raw, out.image.data());
  if (nvrtcGetPTXSize(raw, &size) == NVRTC_SUCCESS && size > 1) {
    out.ptx.resize(size);
    nvrtcGetPTX(raw, out.ptx.data());
    out.ptx.resize(size - 1);  // the terminating NUL
  }
}

Cubin compile_cubin(const std::string& kernel_source, const std::string& entry,
                    const Defines& defines, const std::string& arch,
                    const std::string& source_name) {
  const std::string source =
      with_prelude("src/backend/cuda/prelude.cuh", kernel_source, source_name, "kernel.cu");
  // ptxas compiles only the entry asked for when it is told its name: faster for a source of
  // many kernels, and its report then holds that entry alone (on an H200 host the report of a
  // source of several entries lost some entries' lines: ptxas's order is not specified). An
  // entry with C++ linkage has a mangled name known only after compiling: for it ptxas says
  // "Unknown function" and the source is compiled again, every entry in it.
  const std::vector<std::string> opts = options(defines, arch);
  std::vector<std::string> one_entry = opts;
  if (is_identifier(entry)) one_entry.push_back("--ptxas-options=--entry=" + entry);
  std::string key = "nvrtc " + nvrtc_version() + '\0' + entry + '\0' + source;
  for (const auto& o : one_entry) key += '\0' + o;
  const auto dir = cache_dir("cuda");
  const std::string stem = hex64(hash64(key));
  const auto cubin_path = dir / (stem + ".cubin"), name_path = dir / (stem + ".entry");
  const auto log_path = dir / (stem + ".log");  // NVRTC's log, ptxas's report in it
  const auto ptx_path = dir / (stem + ".ptx");  // the PTX, for `kforge features --code`

  Cubin out;
  out.arch = arch;
  if (std::filesystem::exists(cubin_path) && std::filesystem::exists(name_path) &&
      std::filesystem::exists(ptx_path)) {
    try {
      out.image = read_file(cubin_path);
      out.entry_name = read_file(name_path);
      const std::string log = std::filesystem::exists(log_path) ? read_file(log_path) : "";
      auto report = parse_ptxas_report(log, out.entry_name, arch);
      out.resources = report.entry;
      out.log = std::move(report.rest);
      out.ptx_file = ptx_path.string();
      if (!out.image.empty() && !out.entry_name.empty()) return out;
    } catch (const std::exception&) {
      // unreadable: compile again
    }
  }

  const auto t0 = std::chrono::steady_clock::now();
  out = Cubin{};
  out.arch = arch;
  nvrtc_compile(source, entry, one_entry, out);
  if (out.image.empty()) nvrtc_compile(source, entry, opts, out);
  out.compile_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  write_file_atomic(log_path, out.log);
  auto report = parse_ptxas_report(out.log, out.entry_name, arch);
  out.resources = report.entry;
  out.log = std::move(report.rest);
  if (!out.ptx.empty()) {
    write_file_atomic(ptx_path, out.ptx);
    out.ptx_file = ptx_path.string();
  }
  write_file_atomic(name_path, out.entry_name);
  write_file_atomic(cubin_path, out.image);
  return out;
}

}  // namespace kforge::cuda
