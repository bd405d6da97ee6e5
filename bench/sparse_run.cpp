// One timed spmm or sddmm on the cpu backend, in a process of its own, for
// bench/spmm_vs_scipy.py: the library kernel at its default parameters on the problem's own
// instance (uniform pattern, normal inputs, the seed given), one warm-up launch, then `reps`
// timed launches. With --dump DIR it writes each tensor and the kernel's output raw in its
// storage type (DIR/<tensor name>.i32 for the int32 pointers and indices, .f32 else), so the peer computes on the very same matrix and checks against
// kforge's result. Prints one JSON line: seconds (each launch), median_s, sol_fraction (cached
// ceilings), the kernel parameters, and cpu_seconds / cpu_median_s: the calling thread's CPU
// time per launch, which at --threads 1 is the kernel's own (the pool's caller runs every
// block) and leaves out the time slices other processes take on a loaded host. --param NAME=VALUE overrides a default parameter and --spec
// runs a kernel spec on disk (its source beside it) instead of the library's: how a candidate is
// compared with the library kernel, interleaved, before it replaces it. --structure DIR takes the
// sparse matrix from DIR instead of the generator (row_ptr.i32, col_idx.i32 and, if present,
// values.f32, as --dump writes them): M and NNZ come from row_ptr, K from --k; how
// bench/spmm_vs_scipy.py --graphs runs real graphs.
#include <algorithm>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "kforge/kernel_json.hpp"
#include "kforge/measure.hpp"
#include "kforge/sparse.hpp"
#include "kforge/util.hpp"
#include "sparse_bench.hpp"

using namespace kforge;

int main(int argc, char** argv) {
  CLI::App app{"one timed spmm or sddmm (cpu backend), for bench/spmm_vs_scipy.py"};
  std::string problem = "spmm", dump, spec_path, structure;
  std::vector<std::string> params;
  std::int64_t m = 1024, k = 1024, w = 64, nnz = 104858;
  int reps = 5, threads = 0;
  std::uint64_t seed = 0x5eed;
  app.add_option("--problem", problem, "spmm or sddmm")->check(CLI::IsMember({"spmm", "sddmm"}));
  app.add_option("--m", m, "rows of A");
  app.add_option("--k", k, "columns of A");
  app.add_option("--w", w, "the dense width: spmm's N, sddmm's D");
  app.add_option("--nnz", nnz, "nonzeros");
  app.add_option("--reps", reps, "timed launches");
  app.add_option("--threads", threads, "cpu threads (0: all cores)");
  app.add_option("--seed", seed, "the instance's seed");
  app.add_option("--param", params, "NAME=VALUE: a kernel parameter instead of its default (repeatable)");
  app.add_option("--spec", spec_path, "a kernel spec JSON on disk (source beside it) instead of the library kernel")
      ->check(CLI::ExistingFile);
  app.add_option("--dump", dump, "a folder to write the tensors and the output to, raw (<name>.i32 or .f32)");
  app.add_option("--structure", structure, "a folder with the matrix, raw (row_ptr.i32, col_idx.i32 int32, values.f32 float32)")
      ->check(CLI::ExistingDirectory);
  CLI11_PARSE(app, argc, argv);

  const auto read_raw = [&](const std::string& name, DType t) {
    const std::string path = structure + "/" + name + (t == DType::int32 ? ".i32" : ".f32");
    std::vector<double> v;
    if (!std::filesystem::exists(path)) return v;
    const std::string bytes = read_file(path);
    v.resize(bytes.size() / 4);
    decode(t, bytes.data(), v);
    return v;
  };
  std::vector<double> row_ptr, col_idx, values;
  if (!structure.empty()) {
    row_ptr = read_raw("row_ptr", DType::int32), col_idx = read_raw("col_idx", DType::int32);
    values = read_raw("values", DType::fp32);
    if (row_ptr.size() < 2 || col_idx.size() != static_cast<std::size_t>(row_ptr.back()))
      throw UsageError("--structure " + structure + ": row_ptr.i32 must hold M + 1 offsets and col_idx.i32 row_ptr[M] indices");
    m = static_cast<std::int64_t>(row_ptr.size()) - 1, nnz = static_cast<std::int64_t>(row_ptr.back());
  }

  const auto p = find_problem(problem);
  const std::string width = problem == "spmm" ? "N" : "D";
  const Sizes sizes = p->resolve_sizes({{"M", m}, {"K", k}, {width, w}, {"NNZ", nnz}});
  p->check_sizes(sizes);
  const Scalars uniform{{"pattern", 0}};
  auto backend = make_backend("cpu", {.threads = threads});
  Instance in = p->make_instance(sizes, DType::fp32, Distribution::normal, seed, 1, uniform);
  if (!structure.empty()) {
    sparse::validate_csr("--structure " + structure, row_ptr.data(), col_idx.data(), m, k, nnz);
    in.tensors[0] = row_ptr, in.tensors[1] = col_idx;
    if (!values.empty() && problem == "spmm") in.tensors[2] = values;
  }
  const ParamValues overrides = bench::parse_params(params);
  const auto kernel = [&] {
    if (spec_path.empty()) return bench::prepare(*backend, *p, sizes, overrides);
    const std::string dir = std::filesystem::path(spec_path).parent_path().string();
    const KernelSpec spec = KernelSpec::from_json(nlohmann::json::parse(read_file(spec_path)), [&](const std::string& f) {
      return read_file(std::filesystem::path(dir) / f);
    });
    return bench::compile(*backend, spec, sizes, overrides);
  }();
  const auto specs = p->tensors();
  std::vector<std::unique_ptr<Buffer>> bufs;
  std::vector<Arg> args;
  for (std::size_t t = 0; t < specs.size(); ++t) {
    bufs.push_back(bench::upload(*backend, specs[t].role == Role::in ? in.tensors[t] : std::vector<double>{},
                                 static_cast<std::size_t>(p->tensor_elements(t, sizes)), storage_dtype(specs[t], in.dtype)));
    args.push_back(Arg::buf(*bufs.back()));
  }
  for (const auto& n : p->size_names()) args.push_back(Arg::i(static_cast<std::int32_t>(sizes.at(n))));
  args.push_back(Arg::f(0.0f));  // pattern, unread by the kernel

  const auto thread_cpu = [] {
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
  };
  kernel(args);
  std::vector<double> seconds, cpu_seconds;
  for (int r = 0; r < reps; ++r) {
    const double c0 = thread_cpu();
    seconds.push_back(kernel(args));
    cpu_seconds.push_back(thread_cpu() - c0);
  }

  if (!dump.empty()) {
    std::filesystem::create_directories(dump);
    for (std::size_t t = 0; t < specs.size(); ++t) {
      const auto n = static_cast<std::size_t>(p->tensor_elements(t, sizes));
      const auto f = bench::download(*backend, *bufs[t], n);  // 4 bytes each, int32 or float as stored
      const bool index = storage_dtype(specs[t], in.dtype) == DType::int32;
      std::ofstream(dump + "/" + specs[t].name + (index ? ".i32" : ".f32"), std::ios::binary)
          .write(reinterpret_cast<const char*>(f.data()), static_cast<std::streamsize>(n * sizeof(float)));
    }
  }
  const double median = median_of(seconds);
  const Ceilings c = ceilings(*backend);
  const Roofline roof = roofline(c, DType::fp32, p->flops(sizes), p->bytes(sizes, DType::fp32), median, 0, /*hot=*/true);
  nlohmann::json out{{"problem", problem}, {"sizes", sizes},          {"seconds", seconds},
                     {"median_s", median}, {"cpu_seconds", cpu_seconds},
                     {"cpu_median_s", median_of(cpu_seconds)}, {"sol_fraction", roof.sol_fraction}, {"params", kernel.params_text()},
                     {"device", backend->device()}};
  fmt::print("{}\n", out.dump());
  return 0;
}
