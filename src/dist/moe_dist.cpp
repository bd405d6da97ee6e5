// moe_dist: the moe_grouped_gemm layer (kernels/moe/problem.cpp) across ranks. Tokens are split
// over the ranks (rank r holds tokens part(T, R, r)), experts too (rank r owns experts
// part(E, R, r) and only their weights are used there). Each (token, slot) pair routed to an
// expert on another rank goes there as one row (expert id, pair index, the token's H features);
// the owner runs the expert (an OpenBLAS sgemm per expert over the rows it has, one thread per
// rank) and sends the F-wide result row back; the token's rank adds it times the gate.
// Pairs whose expert is local never leave the rank.
//
//   baseline   (alltoallv) counts by MPI_Alltoall, rows by MPI_Alltoallv, one GEMM per local
//              expert over every row it got, results back by MPI_Alltoallv, combine.
//   overlapped (one_sided) one persistent loop per rank over a window (MPI_Win_allocate) in
//              passive-target mode (MPI_Win_lock_all for the whole run). A sender MPI_Puts a
//              chunk of rows into its own slot of the receiver's window, MPI_Win_flush-es it,
//              then Puts the chunk's record (emulated arrival, rows so far), flushes, and sets
//              the record's ready flag with MPI_Accumulate(MPI_REPLACE) + flush. The receiver
//              polls its flags with MPI_Fetch_and_op(MPI_NO_OP) on itself, MPI_Win_sync-s, then
//              reads the rows in place: it runs the experts on each batch as it arrives and puts
//              the results back the same way (a record per batch), while it combines the
//              results of its own tokens as they come back and computes its local pairs.
// Flags: one record per (source, chunk) for rows in and per (owner, batch) for results back.
#include <cblas.h>

#include <algorithm>
#include <cstring>
#include <thread>

#include <fmt/format.h>

#include "dist/moe_gnn.hpp"
#include "dist/multirank.hpp"

namespace kforge::dist {
namespace {

using multirank::Command;
using multirank::RankOutput;
using overlap::Part;

enum { kX, kIds, kGate, kW };

// A flag record in the window: written by its sender, read by the window's rank.
struct Record {
  double arrival;     // emulated arrival (s from the run's start); 0 without an emulated link
  std::int64_t end;   // rows available so far from this sender
  std::int64_t ready; // set last, atomically
};
constexpr std::int64_t kRecordBytes = sizeof(Record);

class MoeRank {
 public:
  MoeRank(const Command& c, const Instance& in, int rank, int ranks)
      : c_(c), rank_(rank), ranks_(ranks), T_(in.sizes.at("T")), H_(in.sizes.at("H")), F_(in.sizes.at("F")),
        E_(in.sizes.at("E")), K_(in.sizes.at("K")), S_(c.form == 1 ? std::max(1, c.chunks) : 1),
        tp_(overlap::part(T_, ranks, rank)), ep_(overlap::part(E_, ranks, rank)),
        link_{c.link_latency_s, c.link_bytes_per_s}, row_bytes_(8 + 4 * H_) {
    // Setup, not timed: this rank's tokens, routing and experts' weights in fp32.
    x_.assign(in.tensors[kX].begin() + tp_.begin * H_, in.tensors[kX].begin() + (tp_.begin + tp_.size) * H_);
    for (std::int64_t i = 0; i < tp_.size * K_; ++i) {
      ids_.push_back(static_cast<int>(in.tensors[kIds][tp_.begin * K_ + i]));
      gate_.push_back(static_cast<float>(in.tensors[kGate][tp_.begin * K_ + i]));
    }
    w_.assign(in.tensors[kW].begin() + ep_.begin * H_ * F_, in.tensors[kW].begin() + (ep_.begin + ep_.size) * H_ * F_);
    send_.resize(static_cast<std::size_t>(ranks));
    for (std::int64_t p = 0; p < tp_.size * K_; ++p) {
      const int o = multirank::owner_of(ids_[p], E_, ranks);
      (o == rank ? local_ : send_[o]).push_back(static_cast<std::int32_t>(p));
    }
    counts_.assign(4, 0);
  }

  RankOutput run() {
    const bool windowed = c_.form == 1 && ranks_ > 1;
    if (windowed) open_window();
    if (ranks_ > 1) MPI_Barrier(MPI_COMM_WORLD);
    t0_ = Clock::now();
    y_.assign(static_cast<std::size_t>(tp_.size * F_), 0.0f);
    if (ranks_ == 1) compute_local();
    else if (c_.form == 0) baseline();
    else one_sided();
    RankOutput out;
    out.total_s = multirank::seconds(t0_);
    out.compute_s = compute_s_;
    out.rows = std::move(y_);
    out.counts = counts_;
    if (windowed) {
      MPI_Win_unlock_all(win_);
      MPI_Win_free(&win_);
    }
    return out;
  }

 private:
  // ---- the expert compute, shared by both forms ----
  // Runs local expert e on `n` rows (row i's features at rows[i]), then hands each result row
  // to emit(i, row). One sgemm per call.
  template <typename Emit>
  void expert(std::int64_t e, const std::vector<const float*>& rows, Emit emit) {
    const std::int64_t n = static_cast<std::int64_t>(rows.size());
    if (n == 0) return;
    const auto t = Clock::now();
    a_.resize(static_cast<std::size_t>(n * H_));
    out_.resize(static_cast<std::size_t>(n * F_));
    for (std::int64_t i = 0; i < n; ++i) std::copy_n(rows[i], H_, a_.data() + i * H_);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(n), static_cast<int>(F_),
                static_cast<int>(H_), 1.0f, a_.data(), static_cast<int>(H_), w_.data() + (e - ep_.begin) * H_ * F_,
                static_cast<int>(F_), 0.0f, out_.data(), static_cast<int>(F_));
    for (std::int64_t i = 0; i < n; ++i) emit(i, out_.data() + i * F_);
    compute_s_ += multirank::seconds(t);
  }
  // y[token of pair p] += gate[p] * row.
  void combine(std::int32_t p, const float* row) {
    const float g = gate_[p];
    float* y = y_.data() + (p / K_) * F_;
    for (std::int64_t f = 0; f < F_; ++f) y[f] += g * row[f];
  }
  // Rows (expert id, pair, H features) gathered into per-expert lists, then every local
  // expert run once; `result(row index, result row)`.
  template <typename Result>
  void run_experts(const std::vector<const char*>& rows, Result result) {
    std::vector<std::vector<const float*>> by_expert(static_cast<std::size_t>(ep_.size));
    std::vector<std::vector<std::int64_t>> which(static_cast<std::size_t>(ep_.size));
    for (std::size_t i = 0; i < rows.size(); ++i) {
      std::int32_t e;
      std::memcpy(&e, rows[i], 4);
      by_expert[e - ep_.begin].push_back(reinterpret_cast<const float*>(rows[i] + 8));
      which[e - ep_.begin].push_back(static_cast<std::int64_t>(i));
    }
    for (std::int64_t e = 0; e < ep_.size; ++e)
      expert(ep_.begin + e, by_expert[e], [&](std::int64_t i, const float* r) { result(which[e][i], r); });
  }
  // This rank's own pairs on local expert e (index in ep_), combined straight into y.
  void compute_local(std::int64_t e) {
    std::vector<const float*> rows;
    std::vector<std::int32_t> pairs;
    for (std::int32_t p : local_)
      if (ids_[p] - ep_.begin == e) rows.push_back(x_.data() + (p / K_) * H_), pairs.push_back(p);
    expert(ep_.begin + e, rows, [&](std::int64_t i, const float* r) { combine(pairs[i], r); });
  }
  void compute_local() {
    for (std::int64_t e = 0; e < ep_.size; ++e) compute_local(e);
  }
  // Rows for rank d in send order: (expert, pair, features), packed (counted as compute).
  std::vector<char> pack(int d) {
    const auto t = Clock::now();
    std::vector<char> buf(static_cast<std::size_t>(send_[d].size()) * row_bytes_);
    for (std::size_t q = 0; q < send_[d].size(); ++q) {
      const std::int32_t p = send_[d][q], e = ids_[p];
      char* row = buf.data() + q * row_bytes_;
      std::memcpy(row, &e, 4);
      std::memcpy(row + 4, &p, 4);
      std::memcpy(row + 8, x_.data() + (p / K_) * H_, 4 * H_);
    }
    compute_s_ += multirank::seconds(t);
    return buf;
  }
  void count_out(std::int64_t rows) { counts_[0] += rows, counts_[2] += rows * row_bytes_; }
  void count_back(std::int64_t rows) { counts_[1] += rows, counts_[3] += rows * 4 * F_; }

  // ---- baseline: alltoallv, experts, alltoallv back ----
  // Emulated link for a collective exchange: every rank's outgoing bytes through its link; the
  // exchange is over when the slowest rank's last byte arrived.
  void emulate_exchange(double bytes_out) {
    if (!link_.emulated()) return;
    double arrival = link_.send(multirank::seconds(t0_), bytes_out), last = 0;
    MPI_Allreduce(&arrival, &last, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    multirank::wait_until(t0_, last);
  }
  void baseline() {
    std::vector<char> out;
    std::vector<int> scount(ranks_), sdisp(ranks_), rcount(ranks_), rdisp(ranks_), nrows(ranks_), nin(ranks_);
    for (int d = 0; d < ranks_; ++d) {
      const std::vector<char> part = d == rank_ ? std::vector<char>{} : pack(d);
      sdisp[d] = static_cast<int>(out.size());
      scount[d] = static_cast<int>(part.size());
      nrows[d] = d == rank_ ? 0 : static_cast<int>(send_[d].size());
      out.insert(out.end(), part.begin(), part.end());
      count_out(nrows[d]);
    }
    MPI_Alltoall(nrows.data(), 1, MPI_INT, nin.data(), 1, MPI_INT, MPI_COMM_WORLD);
    int total = 0;
    for (int s = 0; s < ranks_; ++s) rcount[s] = nin[s] * static_cast<int>(row_bytes_), rdisp[s] = total, total += rcount[s];
    std::vector<char> in(static_cast<std::size_t>(total));
    MPI_Alltoallv(out.data(), scount.data(), sdisp.data(), MPI_BYTE, in.data(), rcount.data(), rdisp.data(), MPI_BYTE,
                  MPI_COMM_WORLD);
    emulate_exchange(static_cast<double>(out.size()));
    // One GEMM per local expert over every row it got, then this rank's own pairs.
    const std::int64_t rows_in = total / row_bytes_;
    std::vector<const char*> rows;
    for (std::int64_t i = 0; i < rows_in; ++i) rows.push_back(in.data() + i * row_bytes_);
    std::vector<float> back(static_cast<std::size_t>(rows_in * F_));
    run_experts(rows, [&](std::int64_t i, const float* r) { std::copy_n(r, F_, back.data() + i * F_); });
    compute_local();
    for (int s = 0; s < ranks_; ++s) count_back(nin[s]);
    std::vector<int> bcount(ranks_), bdisp(ranks_), ccount(ranks_), cdisp(ranks_);
    for (int s = 0, at = 0; s < ranks_; ++s) bcount[s] = nin[s] * F_, bdisp[s] = at, at += bcount[s];
    int got = 0;
    for (int d = 0; d < ranks_; ++d) ccount[d] = nrows[d] * F_, cdisp[d] = got, got += ccount[d];
    std::vector<float> results(static_cast<std::size_t>(got));
    MPI_Alltoallv(back.data(), bcount.data(), bdisp.data(), MPI_FLOAT, results.data(), ccount.data(), cdisp.data(),
                  MPI_FLOAT, MPI_COMM_WORLD);
    emulate_exchange(4.0 * static_cast<double>(back.size()));
    const auto t = Clock::now();
    for (int d = 0; d < ranks_; ++d)
      for (int q = 0; q < nrows[d]; ++q) combine(send_[d][q], results.data() + cdisp[d] + static_cast<std::int64_t>(q) * F_);
    compute_s_ += multirank::seconds(t);
  }

  // ---- overlapped: one-sided puts with flags, one persistent loop ----
  std::int64_t cap(int s) const { return overlap::part(T_, ranks_, s).size * K_; }
  std::int64_t records_end() const { return 2 * ranks_ * S_ * kRecordBytes; }
  std::int64_t in_record(int s, int c) const { return (s * S_ + c) * kRecordBytes; }
  std::int64_t back_record(int o, int b) const { return (ranks_ * S_ + o * S_ + b) * kRecordBytes; }
  std::int64_t in_rows(int s) const {
    std::int64_t at = records_end();
    for (int j = 0; j < s; ++j) at += cap(j) * row_bytes_;
    return at;
  }
  // Where owner o's result rows for rank x's tokens land in x's window.
  std::int64_t back_rows(int x, int o) const { return records_end() + T_ * K_ * row_bytes_ + o * cap(x) * F_ * 4; }

  void open_window() {
    const std::int64_t bytes = back_rows(rank_, ranks_);
    multirank::mpi_check(MPI_Win_allocate(static_cast<MPI_Aint>(bytes), 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base_, &win_),
                         "MPI_Win_allocate (moe_dist's window)");
    std::memset(base_, 0, static_cast<std::size_t>(records_end()));
    multirank::mpi_check(MPI_Win_lock_all(0, win_), "MPI_Win_lock_all");
    MPI_Win_sync(win_);
  }
  // Rows [from, to) of `data` into rank d at `at`, then the record that says so.
  void put_rows(const void* data, std::int64_t bytes, int d, std::int64_t at, std::int64_t record, std::int64_t end) {
    if (bytes > 0) MPI_Put(data, static_cast<int>(bytes), MPI_BYTE, d, at, static_cast<int>(bytes), MPI_BYTE, win_);
    const Record r{link_.send(multirank::seconds(t0_), static_cast<double>(bytes)), end, 0};
    MPI_Win_flush(d, win_);  // the rows are in place before the record says they are
    MPI_Put(&r, 16, MPI_BYTE, d, record, 16, MPI_BYTE, win_);
    MPI_Win_flush(d, win_);
    const std::int64_t one = 1;
    MPI_Accumulate(&one, 1, MPI_INT64_T, d, record + 16, 1, MPI_INT64_T, MPI_REPLACE, win_);
    MPI_Win_flush(d, win_);
  }
  // The record at `record` in this rank's window once it is ready and has arrived.
  bool arrived(std::int64_t record, Record& r) {
    std::int64_t ready = 0;
    MPI_Fetch_and_op(nullptr, &ready, MPI_INT64_T, rank_, record + 16, MPI_NO_OP, win_);
    MPI_Win_flush(rank_, win_);
    if (!ready) return false;
    MPI_Win_sync(win_);
    std::memcpy(&r, static_cast<char*>(base_) + record, sizeof r);
    return multirank::seconds(t0_) >= r.arrival;
  }

  void one_sided() {
    // Every chunk of rows to every peer, chunk-major so each peer gets a first chunk early.
    std::vector<std::vector<char>> staged(static_cast<std::size_t>(ranks_));
    for (int d = 0; d < ranks_; ++d)
      if (d != rank_) staged[d] = pack(d);
    for (int c = 0; c < S_; ++c)
      for (int dd = 1; dd < ranks_; ++dd) {
        const int d = (rank_ + dd) % ranks_;
        const Part rows = overlap::chunk(Part{0, static_cast<std::int64_t>(send_[d].size())}, S_, c);
        put_rows(staged[d].data() + rows.begin * row_bytes_, rows.size * row_bytes_, d,
                 in_rows(rank_) + rows.begin * row_bytes_, in_record(rank_, c), rows.begin + rows.size);
        count_out(rows.size);
      }
    std::vector<int> next_chunk(ranks_, 0), next_batch(ranks_, 0), batches_out(ranks_, 0);
    std::vector<std::int64_t> rows_in(ranks_, 0), rows_done(ranks_, 0), back_done(ranks_, 0);
    std::vector<float> results;
    std::int64_t local_next = 0;  // this rank's own pairs: one local expert per pass
    bool skipped = false;
    multirank::Idle idle;
    for (;;) {
      bool progress = false, finished = local_next == ep_.size;
      for (int s = 0; s < ranks_; ++s) {
        if (s == rank_) continue;
        // Rows in from s: run them through the experts, put the results back to s.
        Record r;
        while (next_chunk[s] < S_ && arrived(in_record(s, next_chunk[s]), r)) rows_in[s] = r.end, ++next_chunk[s];
        if (rows_in[s] > rows_done[s]) {
          const char* first = static_cast<const char*>(base_) + in_rows(s) + rows_done[s] * row_bytes_;
          const std::int64_t n = rows_in[s] - rows_done[s];
          std::vector<const char*> rows;
          for (std::int64_t i = 0; i < n; ++i) rows.push_back(first + i * row_bytes_);
          results.resize(static_cast<std::size_t>(n * F_));
          run_experts(rows, [&](std::int64_t i, const float* row) { std::copy_n(row, F_, results.data() + i * F_); });
          put_rows(results.data(), n * F_ * 4, s, back_rows(s, rank_) + rows_done[s] * F_ * 4,
                   back_record(rank_, batches_out[s]++), rows_in[s]);
          count_back(n);
          rows_done[s] = rows_in[s];
          progress = true;
        }
        // Results back from owner s: combine them into this rank's tokens.
        while (next_batch[s] < S_ && arrived(back_record(s, next_batch[s]), r)) {
          ++next_batch[s];
          if (c_.fault && rank_ == 0 && !skipped) {  // tests: a lost batch must be caught
            skipped = true, back_done[s] = r.end;
            continue;
          }
          const auto t = Clock::now();
          const float* first = reinterpret_cast<const float*>(static_cast<const char*>(base_) + back_rows(rank_, s));
          for (std::int64_t q = back_done[s]; q < r.end; ++q) combine(send_[s][q], first + q * F_);
          compute_s_ += multirank::seconds(t);
          back_done[s] = r.end;
          progress = true;
        }
        finished = finished && next_chunk[s] == S_ && rows_done[s] == rows_in[s] &&
                   back_done[s] == static_cast<std::int64_t>(send_[s].size());
      }
      if (finished) break;
      if (local_next < ep_.size) {  // own pairs between polls: rows from peers are served early
        compute_local(local_next++);
        progress = true;
      }
      if (progress) idle.reset();
      else idle.wait();
    }
  }

  const Command& c_;
  int rank_, ranks_;
  std::int64_t T_, H_, F_, E_, K_;
  int S_;
  Part tp_, ep_;
  overlap::Link link_;
  std::int64_t row_bytes_;
  std::vector<float> x_, gate_, w_, y_, a_, out_;
  std::vector<std::int32_t> ids_;
  std::vector<std::vector<std::int32_t>> send_;  // per owner rank: pairs, in send order
  std::vector<std::int32_t> local_;              // pairs whose expert is on this rank
  std::vector<std::int64_t> counts_;
  MPI_Win win_ = MPI_WIN_NULL;
  void* base_ = nullptr;
  Clock::time_point t0_;
  double compute_s_ = 0;
};

class MoeDist final : public multirank::App {
 public:
  std::string name() const override { return "moe_dist"; }
  std::shared_ptr<Problem> problem() const override { return find_problem("moe_grouped_gemm"); }
  std::string baseline_name() const override { return "alltoallv"; }
  std::string overlapped_name() const override { return "one_sided"; }
  // Trial 0 routes balanced, trial 1 skewed (Zipf-like) with an expert that gets no token.
  std::vector<int> trials() const override { return {0, 1}; }
  int timed_trial() const override { return 1; }
  std::vector<Sizes> odd_shapes(int ranks) const override {
    return {{{"T", 37}, {"H", 29}, {"F", 23}, {"E", 2 * ranks + 1}, {"K", 2}},  // odd everything
            {{"T", std::max(1, ranks - 1)}, {"H", 5}, {"F", 3}, {"E", ranks + 2}, {"K", 2}},  // fewer tokens than ranks
            {{"T", 9}, {"H", 7}, {"F", 5}, {"E", 1}, {"K", 1}},  // one expert: ranks without experts
            {{"T", 1}, {"H", 1}, {"F", 1}, {"E", 3}, {"K", 1}}};
  }
  void check(const Sizes& s) const override {
    const std::int64_t T = s.at("T"), H = s.at("H"), F = s.at("F"), K = s.at("K");
    if (T * K * (8 + 4 * H) >= (std::int64_t{1} << 31) || 8 * T * K * F >= (std::int64_t{1} << 31))
      throw UsageError(fmt::format("moe_dist: T*K*(8+4H)={} and 8*T*K*F={} must stay below 2^31 bytes (MPI "
                                   "counts); use fewer tokens or narrower rows",
                                   T * K * (8 + 4 * H), 8 * T * K * F));
  }
  std::int64_t output_rows(const Sizes& s) const override { return s.at("T"); }
  std::int64_t output_cols(const Sizes& s) const override { return s.at("F"); }
  std::vector<std::string> count_names() const override {
    return {"rows_sent", "rows_returned", "bytes_sent", "bytes_returned"};
  }
  // Rank r sends one row per pair of its tokens whose expert is elsewhere, and returns one
  // result row per pair of the other ranks' tokens whose expert it owns.
  std::vector<std::vector<std::int64_t>> expected_counts(const Instance& in, int ranks) const override {
    const std::int64_t T = in.sizes.at("T"), H = in.sizes.at("H"), F = in.sizes.at("F"), E = in.sizes.at("E"),
                       K = in.sizes.at("K");
    std::vector<std::vector<std::int64_t>> n(static_cast<std::size_t>(ranks), std::vector<std::int64_t>(4, 0));
    for (std::int64_t t = 0; t < T; ++t)
      for (std::int64_t k = 0; k < K; ++k) {
        const int src = multirank::owner_of(t, T, ranks);
        const int dst = multirank::owner_of(static_cast<std::int64_t>(in.tensors[kIds][t * K + k]), E, ranks);
        if (src == dst) continue;
        n[src][0] += 1, n[src][2] += 8 + 4 * H;
        n[dst][1] += 1, n[dst][3] += 4 * F;
      }
    return n;
  }
  nlohmann::json count_context(const Instance& in, int ranks) const override {
    const std::int64_t T = in.sizes.at("T"), K = in.sizes.at("K");
    std::vector<std::int64_t> pairs(static_cast<std::size_t>(ranks));
    for (int r = 0; r < ranks; ++r) pairs[r] = overlap::part(T, ranks, r).size * K;
    return {{"routed_pairs_per_rank", pairs},
            {"row", "a sent row: expert id and pair index (8 bytes) + H fp32 features; a returned row: F fp32"}};
  }
  RankOutput run(const Command& c, const Instance& in, int rank, int ranks) const override {
    return MoeRank(c, in, rank, ranks).run();
  }
};

}  // namespace

const multirank::App& moe_dist_app() {
  static const MoeDist app;
  return app;
}

}  // namespace kforge::dist
