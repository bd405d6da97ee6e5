// The overlapped multi-rank GEMMs of kforge/dist.hpp: ag_gemm and gemm_rs, serial and
// overlapped, over MPI ranks (one OpenBLAS thread each: the ranks are the parallelism).
// Rank 0 drives: it broadcasts a command and the instance, every rank runs its part, rank 0
// gathers the output and its timings. Verification compares the gathered output with the gemm
// problem's double reference through the verifier's own comparison (error bound, non-finite
// and poison checks). Tags >= 1000 so they never meet the tuning messages of wire.hpp.
#include <cblas.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <thread>

#include <fmt/format.h>

#include "dist/moe_gnn.hpp"
#include "dist/overlap_model.hpp"
#include "dist/wire.hpp"
#include "kforge/dist.hpp"
#include "kforge/error.hpp"
#include "kforge/measure.hpp"
#include "kforge/problem.hpp"
#include "kforge/rng.hpp"
#include "kforge/verify.hpp"

namespace kforge::dist {
namespace {

using overlap::Part;

constexpr int kTagData = 1000, kTagOutput = 999, kTagTimes = 998;

enum class Form : int { serial = 0, overlapped = 1 };

// What rank 0 asks of every rank for one run (broadcast as bytes).
struct Command {
  int run = 0;  // 0: leave the loop
  int form = 0, chunks = 1, gather = 0;
  std::int64_t M = 0, N = 0, K = 0;
  float alpha = 1, beta = 0;
};

// Started without mpirun there is one rank and no MPI: the collectives below are then no-ops.
bool mpi_on() {
  int on = 0;
  MPI_Initialized(&on);
  return on != 0;
}
void barrier() {
  if (mpi_on()) MPI_Barrier(MPI_COMM_WORLD);
}
void broadcast(void* data, std::size_t bytes) {
  if (mpi_on() && bytes > 0) MPI_Bcast(data, static_cast<int>(bytes), MPI_BYTE, 0, MPI_COMM_WORLD);
}

double now_s(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Until `at` seconds after t0: sleeps most of the way, then spins (the emulated arrival).
void wait_until(Clock::time_point t0, double at) {
  for (double left; (left = at - now_s(t0)) > 0;)
    if (left > 100e-6) std::this_thread::sleep_for(std::chrono::duration<double>(left - 50e-6));
}

// Tag of chunk `s` of rank `owner`'s block, and of its arrival stamp (tag + 1).
int data_tag(int owner, int s, int chunks) { return kTagData + 2 * (owner * chunks + s); }

class RankRun {
 public:
  RankRun(const OverlapOptions& o, const Command& c, int rank, int ranks)
      : o_(o), c_(c), rank_(rank), ranks_(ranks), link_{o.link_latency_s, o.link_bytes_per_s} {}

  // Runs this rank's part on the full inputs (every rank holds them; only its shard is used).
  void run(const std::vector<float>& A, const std::vector<float>& B, const std::vector<float>& C) {
    barrier();
    t0_ = Clock::now();
    if (o_.problem == "ag_gemm") ag_gemm(A, B, C);
    else gemm_rs(A, B, C);
    total_s_ = now_s(t0_);
  }
  [[nodiscard]] double total_s() const { return total_s_; }
  [[nodiscard]] double compute_s() const { return compute_s_; }
  // This rank's output: ag_gemm's columns (M x n_r) or gemm_rs's rows (m_r x N), row-major.
  [[nodiscard]] const std::vector<float>& output() const { return out_; }

 private:
  // C = alpha * A * B + beta * C on row-major blocks; beta = 0 never reads C.
  void gemm(std::int64_t m, std::int64_t n, std::int64_t k, float alpha, const float* a, std::int64_t lda,
            const float* b, std::int64_t ldb, float beta, float* c, std::int64_t ldc) {
    if (m <= 0 || n <= 0) return;
    const auto t = Clock::now();
    if (k <= 0) {
      for (std::int64_t i = 0; i < m; ++i)
        for (std::int64_t j = 0; j < n; ++j) c[i * ldc + j] = beta == 0 ? 0.0f : beta * c[i * ldc + j];
    } else {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(m), static_cast<int>(n),
                  static_cast<int>(k), alpha, a, static_cast<int>(std::max<std::int64_t>(1, lda)), b,
                  static_cast<int>(std::max<std::int64_t>(1, ldb)), beta, c, static_cast<int>(std::max<std::int64_t>(1, ldc)));
    }
    compute_s_ += seconds_since(t);
  }

  // Every send complete: called before the buffers they read go out of scope.
  void finish_sends() {
    if (!sends_.empty()) MPI_Waitall(static_cast<int>(sends_.size()), sends_.data(), MPI_STATUSES_IGNORE);
    sends_.clear();
  }

  void send_chunk(const float* data, std::int64_t count, int dest, int tag) {
    stamps_out_.push_back(std::make_unique<double>(link_.send(now_s(t0_), 4.0 * static_cast<double>(count))));
    sends_.emplace_back();
    MPI_Isend(stamps_out_.back().get(), 1, MPI_DOUBLE, dest, tag + 1, MPI_COMM_WORLD, &sends_.back());
    sends_.emplace_back();
    MPI_Isend(data, static_cast<int>(count), MPI_FLOAT, dest, tag, MPI_COMM_WORLD, &sends_.back());
  }

  struct Incoming {
    MPI_Request data = MPI_REQUEST_NULL, stamp = MPI_REQUEST_NULL;
    double arrival = 0;
    Part rows;
    float* buffer = nullptr;
    bool done = false;
  };
  void post_receive(Incoming& in, int source, int tag, std::int64_t count) {
    MPI_Irecv(&in.arrival, 1, MPI_DOUBLE, source, tag + 1, MPI_COMM_WORLD, &in.stamp);
    MPI_Irecv(in.buffer, static_cast<int>(count), MPI_FLOAT, source, tag, MPI_COMM_WORLD, &in.data);
  }
  // Waits for an incoming chunk: its bytes, then its emulated arrival.
  void await(Incoming& in) {
    MPI_Wait(&in.stamp, MPI_STATUS_IGNORE);
    MPI_Wait(&in.data, MPI_STATUS_IGNORE);
    wait_until(t0_, in.arrival);
  }
  // Whether it has arrived by now (bytes received and emulated arrival passed).
  bool arrived(Incoming& in) {
    int a = 0, b = 0;
    MPI_Test(&in.stamp, &a, MPI_STATUS_IGNORE);
    if (!a) return false;
    MPI_Test(&in.data, &b, MPI_STATUS_IGNORE);
    return b && now_s(t0_) >= in.arrival;
  }

  // C[:, cols_r] = alpha * A * B[:, cols_r] + beta * C[:, cols_r], A gathered by row chunks.
  void ag_gemm(const std::vector<float>& A, const std::vector<float>& B, const std::vector<float>& C) {
    const std::int64_t M = c_.M, N = c_.N, K = c_.K;
    const int S = c_.form == 1 ? c_.chunks : 1;
    const Part cols = overlap::part(N, ranks_, rank_), mine = overlap::part(M, ranks_, rank_);
    std::vector<float> a(static_cast<std::size_t>(M * K)), b(static_cast<std::size_t>(K * cols.size));
    std::copy(A.begin() + mine.begin * K, A.begin() + (mine.begin + mine.size) * K, a.begin() + mine.begin * K);
    for (std::int64_t k = 0; k < K; ++k)
      std::copy(B.begin() + k * N + cols.begin, B.begin() + k * N + cols.begin + cols.size, b.begin() + k * cols.size);
    out_.assign(static_cast<std::size_t>(M * cols.size), std::numeric_limits<float>::quiet_NaN());
    if (c_.beta != 0)
      for (std::int64_t i = 0; i < M; ++i)
        std::copy(C.begin() + i * N + cols.begin, C.begin() + i * N + cols.begin + cols.size, out_.begin() + i * cols.size);
    // Every remote chunk lands in its place in `a`.
    std::vector<Incoming> in;
    in.reserve(static_cast<std::size_t>(ranks_ * S));
    for (int j = 0; j < ranks_; ++j)
      for (int s = 0; s < S && j != rank_; ++s) {
        const Part rows = overlap::chunk(overlap::part(M, ranks_, j), S, s);
        if (rows.size == 0 || K == 0) continue;
        in.push_back({});
        in.back().rows = rows;
        in.back().buffer = a.data() + rows.begin * K;
        post_receive(in.back(), j, data_tag(j, s, S), rows.size * K);
      }
    // Own chunks to every other rank, chunk-major so every peer gets a first chunk early.
    for (int s = 0; s < S; ++s)
      for (int d = 1; d < ranks_; ++d) {
        const Part rows = overlap::chunk(mine, S, s);
        if (rows.size > 0 && K > 0) send_chunk(a.data() + rows.begin * K, rows.size * K, (rank_ + d) % ranks_, data_tag(rank_, s, S));
      }
    float* c = out_.data();
    if (c_.form == 0) {
      for (Incoming& i : in) await(i);
      gemm(M, cols.size, K, c_.alpha, a.data(), K, b.data(), cols.size, c_.beta, c, cols.size);
      finish_sends();
      return;
    }
    gemm(mine.size, cols.size, K, c_.alpha, a.data() + mine.begin * K, K, b.data(), cols.size, c_.beta,
         c + mine.begin * cols.size, cols.size);
    for (Incoming& i : in) MPI_Wait(&i.stamp, MPI_STATUS_IGNORE);  // stamps: tiny, sent at the start
    std::stable_sort(in.begin(), in.end(), [](const Incoming& x, const Incoming& y) { return x.arrival < y.arrival; });
    for (std::size_t n = 0; n < in.size(); ++n) {
      Incoming& i = in[n];
      await(i);
      if (o_.fault == "drop_chunk" && rank_ == 0 && n + 1 == in.size()) continue;
      gemm(i.rows.size, cols.size, K, c_.alpha, i.buffer, K, b.data(), cols.size, c_.beta, c + i.rows.begin * cols.size,
           cols.size);
    }
    finish_sends();
  }

  // C[rows_r, :] = alpha * sum over ranks of A[:, k_j] B[k_j, :] (rows_r) + beta * C[rows_r, :].
  void gemm_rs(const std::vector<float>& A, const std::vector<float>& B, const std::vector<float>& C) {
    const std::int64_t M = c_.M, N = c_.N, K = c_.K;
    const int S = c_.form == 1 ? c_.chunks : 1;
    const Part ks = overlap::part(K, ranks_, rank_), mine = overlap::part(M, ranks_, rank_);
    std::vector<float> a(static_cast<std::size_t>(M * ks.size)), b(static_cast<std::size_t>(ks.size * N));
    for (std::int64_t i = 0; i < M; ++i)
      std::copy(A.begin() + i * K + ks.begin, A.begin() + i * K + ks.begin + ks.size, a.begin() + i * ks.size);
    std::copy(B.begin() + ks.begin * N, B.begin() + (ks.begin + ks.size) * N, b.begin());
    std::vector<float> partial(static_cast<std::size_t>(M * N));  // this rank's A_r B_r, by rows
    std::vector<float> sum(static_cast<std::size_t>(mine.size * N));
    std::vector<float> received(static_cast<std::size_t>((ranks_ - 1) * mine.size * N));
    std::vector<Incoming> in;
    in.reserve(static_cast<std::size_t>(ranks_ * S));
    for (int j = 0, slot = 0; j < ranks_; ++j) {
      if (j == rank_) continue;
      for (int s = 0; s < S; ++s) {
        const Part rows = overlap::chunk(mine, S, s);
        if (rows.size == 0 || N == 0) continue;
        in.push_back({});
        in.back().rows = rows;
        in.back().buffer = received.data() + static_cast<std::size_t>(slot) * mine.size * N + (rows.begin - mine.begin) * N;
        post_receive(in.back(), j, data_tag(j, s, S), rows.size * N);
      }
      ++slot;
    }
    auto compute = [&](const Part& rows) {
      gemm(rows.size, N, ks.size, 1.0f, a.data() + rows.begin * ks.size, ks.size, b.data(), N, 0.0f,
           partial.data() + rows.begin * N, N);
    };
    auto add = [&](Incoming& i) {
      const auto t = Clock::now();
      float* dst = sum.data() + (i.rows.begin - mine.begin) * N;
      for (std::int64_t e = 0; e < i.rows.size * N; ++e) dst[e] += i.buffer[e];
      compute_s_ += seconds_since(t);
      i.done = true;
    };
    auto add_arrived = [&] {
      for (Incoming& i : in)
        if (!i.done && arrived(i)) add(i);
    };
    // The other ranks' rows first (each chunk sent once computed), this rank's own last.
    for (int d = 1; d <= ranks_; ++d) {
      const int dest = (rank_ + d) % ranks_;
      for (int s = 0; s < S; ++s) {
        const Part rows = overlap::chunk(overlap::part(M, ranks_, dest), S, s);
        if (rows.size == 0) continue;
        compute(rows);
        if (dest != rank_ && c_.form == 1 && N > 0)
          send_chunk(partial.data() + rows.begin * N, rows.size * N, dest, data_tag(rank_, s, S));
        if (c_.form == 1) add_arrived();
      }
    }
    if (c_.form == 0)  // serial: everything computed, then sent
      for (int d = 1; d < ranks_; ++d) {
        const int dest = (rank_ + d) % ranks_;
        const Part rows = overlap::part(M, ranks_, dest);
        if (rows.size > 0 && N > 0) send_chunk(partial.data() + rows.begin * N, rows.size * N, dest, data_tag(rank_, 0, 1));
      }
    {  // this rank's own rows join the sum (chunks that arrived early are in it already)
      const auto t = Clock::now();
      const float* own = partial.data() + mine.begin * N;
      for (std::int64_t e = 0; e < mine.size * N; ++e) sum[static_cast<std::size_t>(e)] += own[e];
      compute_s_ += seconds_since(t);
    }
    for (Incoming& i : in) MPI_Wait(&i.stamp, MPI_STATUS_IGNORE);
    std::vector<Incoming*> order;
    for (Incoming& i : in) order.push_back(&i);
    std::stable_sort(order.begin(), order.end(), [](auto* x, auto* y) { return x->arrival < y->arrival; });
    for (std::size_t n = 0; n < order.size(); ++n) {
      Incoming& i = *order[n];
      if (i.done) continue;
      await(i);
      if (o_.fault == "drop_chunk" && rank_ == 0 && n + 1 == order.size() && c_.form == 1) continue;
      add(i);
    }
    const auto t = Clock::now();
    out_.resize(sum.size());
    for (std::int64_t i = 0; i < mine.size; ++i)
      for (std::int64_t j = 0; j < N; ++j) {
        const std::size_t e = static_cast<std::size_t>(i * N + j);
        const float cin = c_.beta != 0 ? C[static_cast<std::size_t>((mine.begin + i) * N + j)] : 0.0f;
        out_[e] = c_.alpha * sum[e] + (c_.beta != 0 ? c_.beta * cin : 0.0f);
      }
    compute_s_ += seconds_since(t);
    finish_sends();
  }

  const OverlapOptions& o_;
  Command c_;
  int rank_, ranks_;
  overlap::Link link_;
  Clock::time_point t0_;
  std::vector<MPI_Request> sends_;
  std::vector<std::unique_ptr<double>> stamps_out_;  // alive until the sends complete
  std::vector<float> out_;
  double total_s_ = 0, compute_s_ = 0;
};

std::vector<float> to_float(const std::vector<double>& v) { return {v.begin(), v.end()}; }

struct Timing {
  double total_s = 0, compute_s = 0, exposed_s = 0;  // the slowest rank's, the largest exposed
};

// One collective run. Every rank calls it with the same command; rank 0's inputs are broadcast.
// Rank 0 gets the assembled output (when c.gather) and the timing.
Timing run_everywhere(const OverlapOptions& o, Command c, std::vector<float>& A, std::vector<float>& B,
                      std::vector<float>& C, std::vector<float>* output) {
  int rank = 0, ranks = 1;
  if (mpi_on()) {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  }
  broadcast(&c, sizeof c);
  A.resize(static_cast<std::size_t>(c.M * c.K));
  B.resize(static_cast<std::size_t>(c.K * c.N));
  C.resize(static_cast<std::size_t>(c.M * c.N));
  broadcast(A.data(), A.size() * sizeof(float));
  broadcast(B.data(), B.size() * sizeof(float));
  broadcast(C.data(), C.size() * sizeof(float));
  RankRun r(o, c, rank, ranks);
  r.run(A, B, C);
  const double mine[3] = {r.total_s(), r.compute_s(), r.total_s() - r.compute_s()};
  double worst[3] = {mine[0], mine[1], mine[2]};
  if (mpi_on()) MPI_Reduce(mine, worst, 3, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  if (c.gather) {
    if (rank != 0) {  // an empty part (fewer rows or columns than ranks) sends nothing
      if (!r.output().empty())
        MPI_Send(r.output().data(), static_cast<int>(r.output().size()), MPI_FLOAT, 0, kTagOutput, MPI_COMM_WORLD);
    } else {
      output->assign(static_cast<std::size_t>(c.M * c.N), 0.0f);
      for (int j = 0; j < ranks; ++j) {
        const bool ag = o.problem == "ag_gemm";
        const Part p = overlap::part(ag ? c.N : c.M, ranks, j);
        std::vector<float> piece(static_cast<std::size_t>(p.size * (ag ? c.M : c.N)));
        if (j == 0) piece = r.output();
        else if (!piece.empty()) MPI_Recv(piece.data(), static_cast<int>(piece.size()), MPI_FLOAT, j, kTagOutput, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (std::int64_t i = 0; ag && i < c.M; ++i)
          std::copy(piece.begin() + i * p.size, piece.begin() + (i + 1) * p.size, output->begin() + i * c.N + p.begin);
        if (!ag) std::copy(piece.begin(), piece.end(), output->begin() + p.begin * c.N);
      }
    }
  }
  return {worst[0], worst[1], worst[2]};
}

// The other ranks' side: runs what rank 0 broadcasts until it says stop.
void follow(const OverlapOptions& o) {
  std::vector<float> A, B, C;
  for (;;) {
    Command c;
    MPI_Bcast(&c, sizeof c, MPI_BYTE, 0, MPI_COMM_WORLD);  // peek: stop or run
    if (!c.run) return;
    // run_everywhere broadcasts the command again: keep both sides in step.
    (void)run_everywhere(o, c, A, B, C, nullptr);
  }
}

Timing lead(const OverlapOptions& o, const Command& c, std::vector<float>& A, std::vector<float>& B, std::vector<float>& C,
            std::vector<float>* output) {
  Command copy = c;
  broadcast(&copy, sizeof copy);
  return run_everywhere(o, c, A, B, C, output);
}

void stop_followers() {
  Command c;
  c.run = 0;
  broadcast(&c, sizeof c);
}

// The shapes verified: the requested one and odd ones (a single element, fewer rows than ranks,
// primes that divide into no block evenly).
std::vector<Sizes> shapes_for(const Sizes& requested, int ranks) {
  std::vector<Sizes> out{requested};
  out.push_back({{"M", 1}, {"N", 1}, {"K", 1}});
  out.push_back({{"M", std::max(1, ranks - 1)}, {"N", ranks + 1}, {"K", 2}});
  out.push_back({{"M", 37}, {"N", 29}, {"K", 23}});
  out.push_back({{"M", 5 * ranks + 2}, {"N", 3}, {"K", 7}});
  return out;
}

}  // namespace

// The per-rank side of serve(): rank 0 sent the options.
void follow_overlap(const nlohmann::json& options) {
  const OverlapOptions o = OverlapOptions::from_json(options);
  if (const multirank::App* app = multirank_app(o.problem)) return multirank::follow(*app, o);
  follow(o);
}

OverlapResult run_overlap(const OverlapOptions& o) {
  if (const multirank::App* app = multirank_app(o.problem)) return multirank::lead(*app, o);  // moe_dist, gnn_dist
  if (o.problem != "ag_gemm" && o.problem != "gemm_rs")
    throw UsageError("unknown multi-rank problem '" + o.problem + "': use ag_gemm, gemm_rs, moe_dist, gnn_dist or kernel_kmeans_dist");
  if (o.chunks < 0 || o.chunks > 4096) throw UsageError("--chunks must be 0 (chosen) to 4096");
  if (o.rounds < 1) throw UsageError("--rounds must be at least 1");
  auto gemm = find_problem("gemm");
  const Sizes requested = gemm->resolve_sizes(o.sizes);
  for (const char* n : {"M", "N", "K"})
    if (requested.at(n) < 1 || requested.at(n) > (1 << 20)) throw UsageError(fmt::format("{} must be 1..2^20", n));
  const std::int64_t M = requested.at("M"), N = requested.at("N"), K = requested.at("K");
  if (std::max({M * K, K * N, M * N}) > (std::int64_t{1} << 28))  // every rank holds the whole inputs
    throw UsageError("A, B and C must each stay within 2^28 elements (1 GiB) on every rank");
  Session* session = current();
  const int ranks = session ? session->size() : 1;
  openblas_set_num_threads(1);
  // The other ranks join through serve().
  for (int r = 1; r < ranks && mpi_on(); ++r) {
    Outbox out;
    out.post(r, kTagOverlap, o.to_json());
    (void)out.drain(30.0);
  }
  OverlapResult res;
  res.options = o.to_json();
  res.ranks = ranks;
  res.link = o.link_bytes_per_s > 0
                 ? fmt::format("emulated: {:g} us + bytes / {:g} GB/s per sending rank, on top of MPI's transfer",
                               o.link_latency_s * 1e6, o.link_bytes_per_s * 1e-9)
                 : "MPI's own transfers (no emulated link)";
  std::vector<float> A, B, C, out;
  auto command = [&](const Instance& inst, Form f, int chunks, bool gather) {
    Command c;
    c.run = 1;
    c.form = static_cast<int>(f);
    c.chunks = chunks;
    c.gather = gather;
    c.M = inst.sizes.at("M"), c.N = inst.sizes.at("N"), c.K = inst.sizes.at("K");
    c.alpha = static_cast<float>(inst.scalars.at("alpha"));
    c.beta = static_cast<float>(inst.scalars.at("beta"));
    A = to_float(inst.tensors[0]);
    B = to_float(inst.tensors[1]);
    C = to_float(inst.tensors[2]);
    return c;
  };
  try {
    // 1. The split: from a serial run's measured GEMM rate and the link, unless given.
    const Instance probe = gemm->make_instance(requested, DType::fp32, Distribution::normal, o.seed, 1);
    const Timing t = lead(o, command(probe, Form::serial, 1, false), A, B, C, nullptr);
    const double m = static_cast<double>(M), n = static_cast<double>(N), k = static_cast<double>(K);
    overlap::Rates rates;
    rates.flops_per_s = std::max(1e6, 2 * m * n * k / ranks / std::max(t.compute_s, 1e-9));
    rates.latency_s = o.link_latency_s;
    rates.bytes_per_s = o.link_bytes_per_s;
    if (rates.bytes_per_s <= 0 && t.exposed_s > 0)  // MPI's own link: what the serial run moved, per second
      rates.bytes_per_s = 4 * (o.problem == "ag_gemm" ? m * k : m * n) * (ranks - 1) / ranks / t.exposed_s;
    const int chunks = o.chunks > 0 ? o.chunks : overlap::choose_chunks(o.problem, ranks, m, n, k, rates);
    res.chunk_choice = o.chunks > 0 ? "given (--chunks)"
                                    : fmt::format("chosen by the timeline model from a serial run: {:.2f} GFLOP/s per rank, "
                                                  "link {:.2f} GB/s",
                                                  rates.flops_per_s * 1e-9, rates.bytes_per_s * 1e-9);
    // 2. Verification: both forms, the gemm problem's reference and bound.
    res.verified = true;
    for (const Sizes& s : shapes_for(requested, ranks)) {
      res.shapes.push_back(s);
      const bool big = s == requested && m * n * k > 1e7;  // the double reference costs: fewer draws
      for (int trial = 0; trial < o.trials && res.verified; ++trial)
        for (Distribution d : {Distribution::normal, Distribution::uniform, Distribution::wide, Distribution::sparse,
                               Distribution::integers}) {
          if (big && d != Distribution::normal) continue;
          const Instance inst = gemm->make_instance(s, DType::fp32, d, o.seed, trial);
          std::vector<std::vector<double>> ref, mag;
          gemm->reference(inst, ref, mag);
          for (Form f : {Form::serial, Form::overlapped}) {
            (void)lead(o, command(inst, f, chunks, true), A, B, C, &out);
            KernelOutput got;
            got.tensors = {std::vector<double>(out.begin(), out.end())};
            got.unwritten = {std::vector<bool>(out.size(), false)};
            const Comparison cmp = compare(*gemm, inst, got, ref, mag);
            ++res.runs_checked;
            res.worst_bound_ratio = std::max(res.worst_bound_ratio, cmp.max_bound_ratio);
            if (!cmp.passed && res.verified) {
              res.verified = false;
              res.failure = fmt::format("{} form, {} chunk(s), M={},N={},K={}, {} inputs, trial {}: {}",
                                        f == Form::serial ? "serial" : "overlapped", f == Form::serial ? 1 : chunks,
                                        s.at("M"), s.at("N"), s.at("K"), distribution_name(d), trial, cmp.failure);
            }
          }
          if (!res.verified) break;
        }
      if (!res.verified) break;
    }
    // 3. Timing, the forms in turn, only when both were right.
    res.serial.name = "serial";
    res.overlapped.name = "overlapped";
    res.overlapped.chunks = chunks;
    if (res.verified) {
      std::vector<double> st, sc, se, ot, oc, oe;
      for (int round = 0; round < o.rounds; ++round) {
        const Timing a = lead(o, command(probe, Form::serial, 1, false), A, B, C, nullptr);
        const Timing b = lead(o, command(probe, Form::overlapped, chunks, false), A, B, C, nullptr);
        st.push_back(a.total_s), sc.push_back(a.compute_s), se.push_back(a.exposed_s);
        ot.push_back(b.total_s), oc.push_back(b.compute_s), oe.push_back(b.exposed_s);
      }
      res.serial.times_s = st;
      res.overlapped.times_s = ot;
      res.serial.time_s = median_of(st), res.serial.compute_s = median_of(sc), res.serial.exposed_s = median_of(se);
      res.overlapped.time_s = median_of(ot), res.overlapped.compute_s = median_of(oc), res.overlapped.exposed_s = median_of(oe);
      res.overlap_efficiency = res.serial.exposed_s > 0 ? 1 - res.overlapped.exposed_s / res.serial.exposed_s : 0;
      res.percent_of_ideal = res.overlapped.time_s > 0
                                 ? 100 * std::max(res.overlapped.compute_s, res.serial.exposed_s) / res.overlapped.time_s
                                 : 0;
    }
  } catch (...) {
    stop_followers();
    throw;
  }
  stop_followers();
  return res;
}

}  // namespace kforge::dist
