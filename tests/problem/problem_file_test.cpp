// Problem files (docs/problem-files.md): a problem declared in JSON with a C++ reference beside it
// must be judged exactly as a compiled-in problem is. The examples in examples/problems/ restate
// four library problems (gemm, softmax, scan.gae, conv2d); each must produce the same inputs, the
// same reference, the same FLOP and byte counts and the same verdicts as the library's. Wrong
// kernels must be rejected through a file as they are through the library, and a broken file or
// reference must be reported as the problem's fault (exit 2), never as the kernel's.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kforge/problem.hpp"
#include "kforge/problem_file.hpp"
#include "test_util.hpp"

namespace kforge {
namespace {

using nlohmann::json;

std::string example(const std::string& file) {
  return std::string(KFORGE_TEST_DATA) + "/../../examples/problems/" + file;
}

std::string corpus(const std::string& file) {
  return std::string(KFORGE_TEST_DATA) + "/../verify/wrong/" + file;
}

// A fresh folder under /tmp for one test's files.
std::filesystem::path scratch(const std::string& name) { return test::scratch_dir("kforge-problem-test", name); }

void write(const std::filesystem::path& p, const std::string& text) {
  std::ofstream(p) << text;
}

struct Twin {
  std::string file, library;
  Sizes odd;  // sizes that are not multiples of any tile
};

std::vector<Twin> twins() {
  return {
      {"gemm.json", "gemm", {{"M", 37}, {"N", 29}, {"K", 19}}},
      {"softmax.json", "softmax", {{"M", 13}, {"N", 301}}},
      {"scan_gae.json", "scan.gae", {{"batch", 7}, {"time", 133}}},
      {"conv2d.json", "conv2d",
       {{"N", 2}, {"C", 5}, {"H", 11}, {"W", 9}, {"K", 7}, {"R", 3}, {"S", 2}, {"stride", 2},
        {"pad", 1}, {"dil", 1}}},
  };
}

class Twins : public ::testing::TestWithParam<Twin> {};

void PrintTo(const Twin& t, std::ostream* os) { *os << t.file; }

TEST_P(Twins, DeclareWhatTheLibraryProblemDeclares) {
  const Twin& t = GetParam();
  const auto file = find_problem(example(t.file));
  const auto lib = find_problem(t.library);
  EXPECT_EQ(file->source_file(), std::filesystem::canonical(example(t.file)).string());
  EXPECT_EQ(file->size_names(), lib->size_names());
  EXPECT_EQ(file->default_sizes(), lib->default_sizes());
  EXPECT_EQ(file->scalar_names(), lib->scalar_names());
  ASSERT_EQ(file->tensors().size(), lib->tensors().size());
  for (std::size_t i = 0; i < lib->tensors().size(); ++i) {
    EXPECT_EQ(file->tensors()[i].name, lib->tensors()[i].name);
    EXPECT_EQ(file->tensors()[i].role, lib->tensors()[i].role);
  }
  for (const Sizes& s : {lib->default_sizes(), lib->resolve_sizes(t.odd)}) {
    EXPECT_DOUBLE_EQ(file->flops(s), lib->flops(s));
    EXPECT_DOUBLE_EQ(file->reduction_length(s), lib->reduction_length(s));
    for (DType d : lib->dtypes()) EXPECT_DOUBLE_EQ(file->bytes(s, d), lib->bytes(s, d)) << dtype_name(d);
    for (std::size_t i = 0; i < lib->tensors().size(); ++i)
      EXPECT_EQ(file->tensor_elements(i, s), lib->tensor_elements(i, s));
  }
  for (int trial = 0; trial < 4; ++trial) EXPECT_EQ(file->scalars_for_trial(trial), lib->scalars_for_trial(trial));
  EXPECT_EQ(file->kernel_specs().size(), lib->kernel_specs().size());
}

TEST_P(Twins, GiveTheSameInputsAndReference) {
  const Twin& t = GetParam();
  const auto file = find_problem(example(t.file));
  const auto lib = find_problem(t.library);
  const Sizes s = lib->resolve_sizes(t.odd);
  for (int trial = 0; trial < 3; ++trial) {
    const std::uint64_t seed = 0x5eed0000u + static_cast<std::uint64_t>(trial) * 7919u;
    const Instance a = file->make_instance(s, DType::fp32, Distribution::uniform, seed, trial);
    const Instance b = lib->make_instance(s, DType::fp32, Distribution::uniform, seed, trial);
    ASSERT_EQ(a.tensors, b.tensors) << "trial " << trial << ": conditioned inputs differ";
    EXPECT_EQ(a.scalars, b.scalars);
    const auto& ts = lib->tensors();
    if (std::any_of(ts.begin(), ts.end(), [](const TensorSpec& x) { return x.role == Role::inout; }))
      EXPECT_EQ(file->reads_inout(a), lib->reads_inout(b));
    std::vector<std::vector<double>> out_a, mag_a, out_b, mag_b;
    file->reference(a, out_a, mag_a);
    lib->reference(b, out_b, mag_b);
    ASSERT_EQ(out_a.size(), out_b.size());
    for (std::size_t o = 0; o < out_b.size(); ++o) {
      ASSERT_EQ(out_a[o].size(), out_b[o].size());
      for (std::size_t i = 0; i < out_b[o].size(); ++i) {
        // Both are double computations of the same formula; summation order may differ.
        const double scale = 1e-12 * (std::fabs(mag_b[o][i]) + 1e-300);
        ASSERT_NEAR(out_a[o][i], out_b[o][i], scale) << "output " << o << " element " << i;
        ASSERT_NEAR(mag_a[o][i], mag_b[o][i], 1e-12 * std::fabs(mag_b[o][i]) + 1e-300);
      }
    }
  }
}

// The full protocol (fuzzed shapes, determinism, perturbation) through `kforge verify`: the
// library kernel reaches the same verdict with the same errors under both problems.
TEST_P(Twins, VerifyReachesTheLibraryVerdict) {
  const Twin& t = GetParam();
  std::string sizes;
  for (const auto& [k, v] : t.odd) sizes += (sizes.empty() ? "" : ",") + k + "=" + std::to_string(v);
  // Without index_width: a problem file cannot declare a wide shape (gemm's library twin does).
  const auto a = test::kforge_cli("verify '" + example(t.file) + "' --size " + sizes + " --seed 77 --no-index-width --json");
  const auto b = test::kforge_cli("verify " + t.library + " --size " + sizes + " --seed 77 --no-index-width --json");
  ASSERT_EQ(a.exit_code, 0) << a.out << a.err;
  ASSERT_EQ(b.exit_code, 0) << b.out << b.err;
  const json ja = test::parse_or_fail(a), jb = test::parse_or_fail(b);
  EXPECT_EQ(ja.at("disposition"), "passed");
  EXPECT_EQ(ja.at("kernel"), jb.at("kernel"));
  EXPECT_EQ(ja.at("verify").at("trials"), jb.at("verify").at("trials"));
  EXPECT_DOUBLE_EQ(ja.at("verify").at("max_error_over_bound").get<double>(),
                   jb.at("verify").at("max_error_over_bound").get<double>());
  EXPECT_EQ(ja.at("verify").at("shapes_tried"), jb.at("verify").at("shapes_tried"));
}

INSTANTIATE_TEST_SUITE_P(Examples, Twins, ::testing::ValuesIn(twins()),
                         [](const auto& info) {
                           std::string n = info.param.library;
                           for (char& c : n)
                             if (c == '.') c = '_';
                           return n;
                         });

// Wrong GEMM kernels from tests/verify/wrong/, one per gate, against the gemm problem file.
struct Wrong {
  std::string file, args, check;
};

class WrongThroughAFile : public ::testing::TestWithParam<Wrong> {};
void PrintTo(const Wrong& w, std::ostream* os) { *os << w.file; }

TEST_P(WrongThroughAFile, RejectedByTheSameCheck) {
  const Wrong& w = GetParam();
  const auto r = test::kforge_cli("eval --problem '" + example("gemm.json") + "' --entry gemm --source '" +
                                  corpus(w.file) + "' " + w.args + " --json");
  const json j = test::parse_or_fail(r);
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(j.value("disposition", std::string("passed")), "passed");
  EXPECT_EQ(j.at("verify").value("failed_check", std::string()), w.check) << r.out;
}

const char* const kCpu = "--lang cpp --grid 'ceil_div(M,16)' --size M=64,N=64,K=64";
const char* const kCl = "--lang opencl --grid 'ceil_div(N,16),ceil_div(M,16)' --block 16,16 --size M=64,N=64,K=64";

INSTANTIATE_TEST_SUITE_P(
    Corpus, WrongThroughAFile,
    ::testing::Values(
        Wrong{"ignores_beta.cpp", kCpu, "bound"},
        Wrong{"reads_c_beta_zero.cpp", kCpu, "poison_read"},  // C unread when beta = 0: poisoned
        Wrong{"writes_input_a.cpp", kCpu, "inputs_intact"},
        Wrong{"fingerprint_memo.cpp", kCpu, "perturbation"},
        Wrong{"oob_store_tail.cpp", "--lang cpp --params TM=8 --grid 'ceil_div(M,TM)' --size M=64,N=64,K=64", "shapes"},
        Wrong{"nan_beta_zero.cpp", kCpu, "finite"},
        Wrong{"transposed_b.cl", kCl, "bound"},
        Wrong{"lazy_when_timed.cpp", "--lang cpp --grid 'ceil_div(M,16)' --size M=128,N=128,K=128 --bench --quick",
              "timed_outputs"}),
    [](const auto& info) {
      std::string n = info.param.file;
      for (char& c : n)
        if (c == '.') c = '_';
      return n;
    });

// A small problem of one's own, with its kernel beside it: y = 2x + b.
const char* const kScale = R"J({
  "name": "test.scale",
  "description": "y = 2 x + b",
  "sizes": {"N": {"default": 1000, "min": 1}},
  "tensors": [{"name": "x", "role": "in", "shape": ["N"]},
              {"name": "y", "role": "out", "shape": ["N"]}],
  "scalars": {"b": {"trials": [0.5, -3], "min": -10, "max": 10}},
  "flops": "2 * N",
  "reduction_length": "2",
  "reference": {"source": "scale_reference.cpp", "function": "scale_reference"},
  "kernels": ["scale_cpu.json"],
  "timeout_s": 20
})J";
const char* const kScaleReference = R"J(#include <cmath>
#include <cstdint>
void scale_reference(const double* x, double* y, double* y_mag, int64_t N, double b) {
  for (int64_t i = 0; i < N; ++i) { y[i] = 2 * x[i] + b; y_mag[i] = 2 * std::fabs(x[i]) + std::fabs(b); }
}
)J";
const char* const kScaleSpec = R"J({"name": "scale.cpu", "problem": "test.scale", "lang": "cpp",
  "source": "scale.cpp", "entry": "scale", "params": {"BS": [64, 256]}, "grid": ["ceil_div(N, BS)"]})J";
const char* const kScaleKernel = R"J(static void body(const kf_ctx& ctx, const float* x, float* y, int N, float b) {
  const int i0 = static_cast<int>(ctx.block_idx.x) * BS, i1 = i0 + BS < N ? i0 + BS : N;
  for (int i = i0; i < i1; ++i) y[i] = 2.0f * x[i] + b;
}
KF_KERNEL(scale, body)
)J";

std::filesystem::path scale_dir(const std::string& name, const std::string& reference = kScaleReference) {
  const auto dir = scratch(name);
  write(dir / "scale.json", kScale);
  write(dir / "scale_reference.cpp", reference);
  write(dir / "scale_cpu.json", kScaleSpec);
  write(dir / "scale.cpp", kScaleKernel);
  return dir;
}

TEST(ProblemFile, OwnProblemRunsThroughEveryCommand) {
  const auto dir = scale_dir("own");
  const std::string file = "'" + (dir / "scale.json").string() + "'";
  const auto v = test::kforge_cli("verify " + file + " --size N=1001 --json");
  ASSERT_EQ(v.exit_code, 0) << v.out << v.err;
  EXPECT_EQ(test::parse_or_fail(v).at("disposition"), "passed");

  const auto b = test::kforge_cli("bench " + file + " --size N=4099 --json");
  ASSERT_EQ(b.exit_code, 0) << b.out << b.err;
  const json jb = test::parse_or_fail(b);
  EXPECT_GT(jb.at("median_s").get<double>(), 0.0) << b.out;

  const auto t = test::kforge_cli("tune " + file + " --size N=777 --budget 2 --json");
  ASSERT_EQ(t.exit_code, 0) << t.out << t.err;

  // By name through KFORGE_PROBLEM_PATH, and listed.
  const std::string env = "KFORGE_PROBLEM_PATH='" + dir.string() + "' ";
  const auto byname = test::run_command(env + "'" + KFORGE_CLI_PATH + "' verify test.scale --quick --json");
  ASSERT_EQ(byname.exit_code, 0) << byname.out << byname.err;
  const auto list = test::run_command(env + "'" + KFORGE_CLI_PATH + "' list");
  EXPECT_NE(list.out.find("test.scale"), std::string::npos) << list.out;

  // The suite over the folder, kernels beside the problem.
  const auto s = test::kforge_cli("suite --problems '" + dir.string() + "' --backend cpu --json");
  ASSERT_EQ(s.exit_code, 0) << s.out << s.err;
  EXPECT_NE(s.out.find("test.scale"), std::string::npos);
  EXPECT_NE(s.out.find("\"passed\""), std::string::npos) << s.out;
}

TEST(ProblemFile, ScalarOutsideItsDomainIsRefused) {
  const auto dir = scale_dir("domain");
  const auto r = test::kforge_cli("verify '" + (dir / "scale.json").string() + "' --scalar b=11");
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("b"), std::string::npos) << r.err;
}

TEST(ProblemFile, WrongKernelOfOwnProblemIsRejected) {
  const auto dir = scale_dir("wrong");
  write(dir / "off_by_one.cpp", R"(static void body(const kf_ctx& ctx, const float* x, float* y, int N, float b) {
  for (int i = 0; i + 1 < N; ++i) y[i] = 2.0f * x[i] + b;  // BUG: the last element
}
KF_KERNEL(scale, body)
)");
  const auto r = test::kforge_cli("eval --problem '" + (dir / "scale.json").string() + "' --source '" +
                                  (dir / "off_by_one.cpp").string() + "' --lang cpp --entry scale --json");
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_EQ(test::parse_or_fail(r).at("verify").at("failed_check"), "poison") << r.out;
}

// Reference faults are the problem's: exit 2, naming the problem, the kernel not judged.
struct Fault {
  std::string name, reference, says;
};

class ReferenceFaults : public ::testing::TestWithParam<Fault> {};
void PrintTo(const Fault& f, std::ostream* os) { *os << f.name; }

TEST_P(ReferenceFaults, ReportedAsTheProblemsFault) {
  const Fault& f = GetParam();
  const auto dir = scale_dir(f.name, f.reference);
  // A short limit for the endless loop.
  std::string text = kScale;
  text.replace(text.find("\"timeout_s\": 20"), 15, "\"timeout_s\": 3");
  write(dir / "scale.json", text);
  const auto r = test::kforge_cli("eval --problem '" + (dir / "scale.json").string() + "' --source '" +
                                  (dir / "scale.cpp").string() + "' --lang cpp --entry scale --params BS=64 --grid 'ceil_div(N,BS)' --json");
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("test.scale"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(f.says), std::string::npos) << r.err;
  EXPECT_EQ(r.out.find("\"disposition\""), std::string::npos) << "the kernel was judged:\n" << r.out;
}

INSTANTIATE_TEST_SUITE_P(
    Broken, ReferenceFaults,
    ::testing::Values(
        Fault{"compile_error", "void scale_reference(const double* x) { not c++ }\n", "does not compile"},
        Fault{"crash", "#include <cstdint>\nvoid scale_reference(const double*, double*, double*, int64_t, double) "
                       "{ volatile int* p = nullptr; *p = 1; }\n", "crashed"},
        Fault{"hang", "#include <cstdint>\nvoid scale_reference(const double*, double*, double*, int64_t, double) "
                      "{ for (volatile int i = 0;; i = i + 1) {} }\n", "limit"},
        Fault{"unwritten_magnitude",
              "#include <cstdint>\nvoid scale_reference(const double* x, double* y, double*, int64_t N, double b) "
              "{ for (int64_t i = 0; i < N; ++i) y[i] = 2 * x[i] + b; }\n", "y_magnitude"},
        Fault{"missing_function", "void something_else() {}\n", "scale_reference"}),
    [](const auto& info) { return info.param.name; });

// Malformed files: exit 2 and an error that names the file and the field.
struct Malformed {
  std::string name, edit_from, edit_to, says;
};

class MalformedFiles : public ::testing::TestWithParam<Malformed> {};
void PrintTo(const Malformed& m, std::ostream* os) { *os << m.name; }

TEST_P(MalformedFiles, RefusedWithTheField) {
  const Malformed& m = GetParam();
  const auto dir = scale_dir(m.name);
  std::string text = kScale;
  const auto at = text.find(m.edit_from);
  ASSERT_NE(at, std::string::npos) << m.edit_from;
  text.replace(at, m.edit_from.size(), m.edit_to);
  write(dir / "scale.json", text);
  const auto r = test::kforge_cli("verify '" + (dir / "scale.json").string() + "'");
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("scale.json"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(m.says), std::string::npos) << r.err;
}

INSTANTIATE_TEST_SUITE_P(
    Fields, MalformedFiles,
    ::testing::Values(
        Malformed{"unknown_size", "\"shape\": [\"N\"]}", "\"shape\": [\"M\"]}", "not a size"},
        Malformed{"bad_role", "\"role\": \"out\"", "\"role\": \"output\"", "role"},
        Malformed{"typo_field", "\"flops\"", "\"flop\"", "flop"},
        Malformed{"not_json", "\"flops\": \"2 * N\",", "\"flops\": ,", "JSON"},
        Malformed{"no_reference", "\"reference\": {\"source\": \"scale_reference.cpp\", \"function\": \"scale_reference\"},",
                  "", "reference"},
        Malformed{"reference_not_found", "scale_reference.cpp", "nowhere.cpp", "nowhere.cpp"},
        Malformed{"bad_expression", "\"2 * N\"", "\"2 * (N\"", "flops"},
        Malformed{"library_name", "\"test.scale\"", "\"gemm\"", "library problem"},
        Malformed{"no_output", "\"role\": \"out\"", "\"role\": \"in\"", "nothing to verify"},
        Malformed{"typed_output", "\"role\": \"out\",", "\"role\": \"out\", \"type\": \"int32\",", "only an input"},
        Malformed{"unknown_type", "\"role\": \"in\",", "\"role\": \"in\", \"type\": \"int64\",", "int64"}),
    [](const auto& info) { return info.param.name; });

TEST(ProblemFile, SizesBreakingAValidityRuleAreRefused) {
  const auto r = test::kforge_cli("verify '" + example("conv2d.json") + "' --size H=2,R=5,pad=0");
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("break the rule '(H + 2*pad - dil*(R-1) - 1)"), std::string::npos) << r.err;
}

TEST(ProblemFile, BaselineIsTimedBesideTheKernel) {
  const auto r = test::kforge_cli("bench '" + example("gemm.json") + "' --size M=96,N=80,K=72 --json");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const json j = test::parse_or_fail(r);
  ASSERT_TRUE(j.contains("baseline")) << r.out;
  EXPECT_EQ(j.at("baseline").at("name"), "openblas_sgemm");
  EXPECT_GT(j.at("baseline").at("median_s").get<double>(), 0.0);
  EXPECT_GT(j.at("speedup_vs_baseline").get<double>(), 0.0);
}

// An input of a fixed integer type (`"type": "int32"`): a gather y[i] = x[idx[i]] from the last
// 1000 elements of x, past 2^24, where fp32 holds only even integers. The signature says `const int* idx`; a kernel
// that reads the indices through float (as every index did when tensors had one dtype) loses
// odd ones and is rejected by the bound; the int32 kernel passes.
const char* const kGather = R"J({
  "name": "test.gather",
  "description": "y[i] = x[idx[i]], idx int32",
  "sizes": {"N": {"default": 1000, "min": 1}, "M": {"default": 100, "min": 1}},
  "tensors": [{"name": "x", "role": "in", "shape": ["N"]},
              {"name": "idx", "role": "in", "type": "int32", "shape": ["M"],
               "condition": {"kind": "index", "low": "N - min(N, 1000)", "high": "N"}},
              {"name": "y", "role": "out", "shape": ["M"]}],
  "flops": "M",
  "reduction_length": "1",
  "reference": {"source": "gather_reference.cpp", "function": "gather_reference"},
  "timeout_s": 60
})J";
const char* const kGatherReference = R"J(#include <cmath>
#include <cstdint>
void gather_reference(const double* x, const double* idx, double* y, double* y_mag, int64_t N, int64_t M) {
  for (int64_t i = 0; i < M; ++i) { y[i] = x[static_cast<int64_t>(idx[i])]; y_mag[i] = std::fabs(y[i]); }
}
)J";

TEST(ProblemFile, IntegerInputPassesIndicesBeyondFloat) {
  const auto dir = scratch("gather");
  write(dir / "gather.json", kGather);
  write(dir / "gather_reference.cpp", kGatherReference);
  write(dir / "int_idx.cpp", R"(static void body(const kf_ctx& ctx, const float* x, const int* idx, float* y, int N, int M) {
  for (int i = 0; i < M; ++i) y[i] = x[idx[i]];
}
KF_KERNEL(gather, body)
)");
  write(dir / "float_idx.cpp", R"(static void body(const kf_ctx& ctx, const float* x, const int* idx, float* y, int N, int M) {
  for (int i = 0; i < M; ++i) y[i] = x[(int)(float)idx[i]];  // BUG: an index past 2^24 rounds
}
KF_KERNEL(gather, body)
)");
  const std::string file = "'" + (dir / "gather.json").string() + "'";
  const auto abi = test::kforge_cli("list --problem " + file + " --json");
  ASSERT_EQ(abi.exit_code, 0) << abi.out << abi.err;
  EXPECT_NE(abi.out.find("const int* idx"), std::string::npos) << abi.out;
  const std::string sizes = " --size N=16777301,M=4099 --quick --json";
  const auto good = test::kforge_cli("eval --problem " + file + " --source '" + (dir / "int_idx.cpp").string() +
                                     "' --lang cpp --entry gather" + sizes);
  ASSERT_EQ(good.exit_code, 0) << good.out << good.err;
  EXPECT_EQ(test::parse_or_fail(good).at("disposition"), "passed") << good.out;
  const auto bad = test::kforge_cli("eval --problem " + file + " --source '" + (dir / "float_idx.cpp").string() +
                                    "' --lang cpp --entry gather" + sizes);
  EXPECT_EQ(bad.exit_code, 1) << bad.out << bad.err;
}

// examples/problems/embedding_gather.json, a problem of one's own with int32 ids and its kernel
// beside it: thorough verification passes at an odd shape in fp32 and bf16, and its ABI says int.
TEST(ProblemFile, EmbeddingGatherExamplePassesWithItsKernel) {
  const std::string file = "'" + example("embedding_gather.json") + "'";
  const auto abi = test::kforge_cli("list --problem " + file);
  ASSERT_EQ(abi.exit_code, 0) << abi.out << abi.err;
  EXPECT_NE(abi.out.find("const int* ids"), std::string::npos) << abi.out;
  for (const char* dtype : {"fp32", "bf16"}) {
    const auto r = test::kforge_cli("verify " + file + " --size V=1031,D=37,B=517 --dtype " + dtype + " --json");
    ASSERT_EQ(r.exit_code, 0) << dtype << ": " << r.out << r.err;
    EXPECT_EQ(test::parse_or_fail(r).at("disposition"), "passed") << dtype << ": " << r.out;
  }
}

// The integer type is the tensor's own whatever the dtype: in an fp16 instance x and y hold 2
// bytes an element and idx still 4 (the runner sizes, guards and encodes each tensor apart).
TEST(ProblemFile, IntegerInputKeepsItsTypeInAnFp16Instance) {
  const auto dir = scratch("gather16");
  std::string text = kGather;
  text.replace(text.find("\"flops\""), 0, "\"dtypes\": [\"fp32\", \"fp16\"],\n  ");
  write(dir / "gather.json", text);
  write(dir / "gather_reference.cpp", kGatherReference);
  write(dir / "gather16.cpp", R"(static void body(const kf_ctx& ctx, const kf_storage* x, const int* idx, kf_storage* y, int N,
                 int M) {
  for (int i = 0; i < M; ++i) y[i] = x[idx[i]];
}
KF_KERNEL(gather, body)
)");
  const auto r = test::kforge_cli("eval --problem '" + (dir / "gather.json").string() + "' --source '" +
                                  (dir / "gather16.cpp").string() + "' --lang cpp --entry gather --dtype fp16 "
                                  "--size N=5003,M=777 --json");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(test::parse_or_fail(r).at("disposition"), "passed") << r.out;
}

}  // namespace
}  // namespace kforge
