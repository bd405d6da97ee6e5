// gnn_dist: the gnn_aggregate problem (kernels/sparse/gnn_problem.hpp: GCN normalized sum or
// GraphSAGE mean over a CSR adjacency, features H (M,N)) over a graph partitioned by rows: rank
// r owns nodes part(M, R, r), their adjacency rows and their feature rows, the latter exposed in
// an MPI window. The degrees of all nodes (row_ptr) are known on every rank: the GCN weight of a
// remote neighbour needs its degree, and every rank builds the graph from the same seed.
// A rank fetches only the distinct remote rows its edges name, each once, with MPI_Rget of an
// indexed datatype (one get per owner and chunk) in a passive-target epoch (MPI_Win_lock_all).
//
//   baseline   (fetch_then_compute) every get issued and completed, then every row summed
//   overlapped (pipelined) the gets issued in `chunks` pieces per owner, the local neighbours
//              summed while they travel, then each piece's edges summed as it completes
//              (MPI_Test on its request, and its emulated arrival passed)
// Emulated link: the fetching rank's inbound link (latency + bytes / bandwidth per get).
#include <algorithm>
#include <cmath>
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

enum { kPtr, kIdx, kH };

// The weight of the message from a node of degree len_c into one of degree len_r (and of the
// node's own term, GCN only), as gnn_aggregate's reference defines them.
double edge_weight(bool gcn, double len_r, double len_c) {
  return gcn ? 1 / std::sqrt((1 + len_r) * (1 + len_c)) : 1 / len_r;
}

class GnnRank {
 public:
  GnnRank(const Command& c, const Instance& in, int rank, int ranks)
      : c_(c), rank_(rank), ranks_(ranks), M_(in.sizes.at("M")), N_(in.sizes.at("N")),
        S_(c.form == 1 ? std::max(1, c.chunks) : 1), np_(overlap::part(M_, ranks, rank)),
        gcn_(in.scalars.at("kind") == 0), link_{c.link_latency_s, c.link_bytes_per_s} {
    // Setup, not timed: the structure, this rank's feature rows, the rows to fetch and, per
    // fetched row, the edges that use it.
    for (double v : in.tensors[kPtr]) rp_.push_back(static_cast<std::int64_t>(v));
    const auto& ci = in.tensors[kIdx];
    h_.assign(in.tensors[kH].begin() + np_.begin * N_, in.tensors[kH].begin() + (np_.begin + np_.size) * N_);
    need_.resize(static_cast<std::size_t>(ranks));
    std::vector<std::int64_t> pos(static_cast<std::size_t>(M_), -1);
    for (std::int64_t p = rp_[np_.begin]; p < rp_[np_.begin + np_.size]; ++p) {
      const auto col = static_cast<std::int64_t>(ci[p]);
      if (col >= np_.begin && col < np_.begin + np_.size) continue;
      if (pos[col] == -2) continue;
      pos[col] = -2;
      need_[multirank::owner_of(col, M_, ranks)].push_back(col);
    }
    for (auto& v : need_) std::sort(v.begin(), v.end());
    for (int o = 0; o < ranks; ++o) {
      first_.push_back(fetched_rows_);
      for (std::int64_t col : need_[o]) pos[col] = fetched_rows_++;
    }
    // Edges: local ones by row; remote ones grouped by the fetched row they read.
    std::vector<std::int64_t> per_pos(static_cast<std::size_t>(fetched_rows_ + 1), 0);
    for (std::int64_t r = 0; r < np_.size; ++r) {
      const std::int64_t g = np_.begin + r;
      const double len_r = static_cast<double>(rp_[g + 1] - rp_[g]);
      if (gcn_) local_.push_back({r, r, static_cast<float>(1 / (1 + len_r))});
      for (std::int64_t p = rp_[g]; p < rp_[g + 1]; ++p) {
        const auto col = static_cast<std::int64_t>(ci[p]);
        const auto w = static_cast<float>(edge_weight(gcn_, len_r, static_cast<double>(rp_[col + 1] - rp_[col])));
        if (pos[col] < 0) local_.push_back({r, col - np_.begin, w});
        else remote_.push_back({r, pos[col], w}), ++per_pos[pos[col] + 1];
      }
    }
    // Counting sort of the remote edges by fetched row: a piece's edges are then contiguous.
    for (std::int64_t q = 0; q < fetched_rows_; ++q) per_pos[q + 1] += per_pos[q];
    by_pos_ = per_pos;
    std::vector<Edge> sorted(remote_.size());
    for (const Edge& e : remote_) sorted[per_pos[e.src]++] = e;
    remote_ = std::move(sorted);
  }

  RankOutput run() {
    const bool windowed = ranks_ > 1;
    if (windowed) open_window();
    if (ranks_ > 1) MPI_Barrier(MPI_COMM_WORLD);
    t0_ = Clock::now();
    out_.assign(static_cast<std::size_t>(np_.size * N_), 0.0f);
    fetched_.resize(static_cast<std::size_t>(fetched_rows_ * N_));
    std::vector<Get> gets;
    for (int c = 0; c < S_; ++c)  // chunk-major: every owner's first piece goes out first
      for (int oo = 1; oo < ranks_; ++oo) {
        const int o = (rank_ + oo) % ranks_;
        const Part rows = overlap::chunk(Part{0, static_cast<std::int64_t>(need_[o].size())}, S_, c);
        if (rows.size > 0) gets.push_back(fetch(o, rows));
      }
    if (c_.form == 0) {
      for (Get& g : gets) MPI_Wait(&g.request, MPI_STATUS_IGNORE), multirank::wait_until(t0_, g.arrival);
      sum_local();
      for (Get& g : gets) sum_remote(g);
    } else {
      sum_local();
      std::size_t left = gets.size();
      multirank::Idle idle;
      bool skipped = false;
      while (left > 0) {
        bool progress = false;
        for (Get& g : gets) {
          if (g.done) continue;
          int flag = 0;
          MPI_Test(&g.request, &flag, MPI_STATUS_IGNORE);
          if (!flag || multirank::seconds(t0_) < g.arrival) continue;
          g.done = true, --left, progress = true;
          if (c_.fault && rank_ == 0 && !skipped) {  // tests: a lost piece must be caught
            skipped = true;
            continue;
          }
          sum_remote(g);
        }
        if (progress) idle.reset();
        else idle.wait();
      }
    }
    RankOutput r;
    r.total_s = multirank::seconds(t0_);
    r.compute_s = compute_s_;
    r.rows = std::move(out_);
    r.counts = {rows_fetched_, rows_fetched_ * N_ * 4};
    if (windowed) {
      MPI_Win_unlock_all(win_);
      MPI_Win_free(&win_);
    }
    return r;
  }

 private:
  struct Edge {
    std::int64_t dst;  // local row
    std::int64_t src;  // local row (local edges) or fetched row (remote edges)
    float w;
  };
  struct Get {
    MPI_Request request = MPI_REQUEST_NULL;
    std::int64_t first = 0, rows = 0;  // fetched rows [first, first + rows)
    double arrival = 0;
    bool done = false;
  };

  void open_window() {
    multirank::mpi_check(MPI_Win_allocate(static_cast<MPI_Aint>(h_.size() * 4), 4, MPI_INFO_NULL, MPI_COMM_WORLD,
                                          &base_, &win_),
                         "MPI_Win_allocate (gnn_dist's feature rows)");
    std::copy(h_.begin(), h_.end(), static_cast<float*>(base_));
    multirank::mpi_check(MPI_Win_lock_all(0, win_), "MPI_Win_lock_all");
    MPI_Win_sync(win_);
  }

  // One get of owner o's rows need_[o][rows] (an indexed datatype over its window) into their
  // places in fetched_.
  Get fetch(int o, Part rows) {
    const Part theirs = overlap::part(M_, ranks_, o);
    std::vector<int> at(static_cast<std::size_t>(rows.size));
    for (std::int64_t i = 0; i < rows.size; ++i) at[i] = static_cast<int>((need_[o][rows.begin + i] - theirs.begin) * N_);
    MPI_Datatype picked;
    MPI_Type_create_indexed_block(static_cast<int>(rows.size), static_cast<int>(N_), at.data(), MPI_FLOAT, &picked);
    MPI_Type_commit(&picked);
    Get g;
    g.first = first_[o] + rows.begin, g.rows = rows.size;
    multirank::mpi_check(MPI_Rget(fetched_.data() + g.first * N_, static_cast<int>(rows.size * N_), MPI_FLOAT, o, 0, 1,
                                  picked, win_, &g.request),
                         "MPI_Rget (gnn_dist)");
    MPI_Type_free(&picked);  // freed once the get completes
    g.arrival = link_.send(multirank::seconds(t0_), 4.0 * static_cast<double>(rows.size * N_));
    rows_fetched_ += rows.size;
    return g;
  }

  void add(const Edge& e, const float* src) {
    float* dst = out_.data() + e.dst * N_;
    for (std::int64_t j = 0; j < N_; ++j) dst[j] += e.w * src[j];
  }
  void sum_local() {
    const auto t = Clock::now();
    for (const Edge& e : local_) add(e, h_.data() + e.src * N_);
    compute_s_ += multirank::seconds(t);
  }
  void sum_remote(const Get& g) {
    const auto t = Clock::now();
    for (std::int64_t p = by_pos_[g.first]; p < by_pos_[g.first + g.rows]; ++p)
      add(remote_[p], fetched_.data() + remote_[p].src * N_);
    compute_s_ += multirank::seconds(t);
  }

  const Command& c_;
  int rank_, ranks_;
  std::int64_t M_, N_;
  int S_;
  Part np_;
  bool gcn_;
  overlap::Link link_;
  std::vector<std::int64_t> rp_;
  std::vector<float> h_, out_, fetched_;
  std::vector<std::vector<std::int64_t>> need_;  // per owner: the distinct remote rows, ascending
  std::vector<std::int64_t> first_;              // per owner: its first row in fetched_
  std::int64_t fetched_rows_ = 0, rows_fetched_ = 0;
  std::vector<Edge> local_, remote_;   // remote_ sorted by fetched row
  std::vector<std::int64_t> by_pos_;   // remote_[by_pos_[q] .. by_pos_[q+1]) read fetched row q
  MPI_Win win_ = MPI_WIN_NULL;
  void* base_ = nullptr;
  Clock::time_point t0_;
  double compute_s_ = 0;
};

class GnnDist final : public multirank::App {
 public:
  std::string name() const override { return "gnn_dist"; }
  std::shared_ptr<Problem> problem() const override { return find_problem("gnn_aggregate"); }
  std::string baseline_name() const override { return "fetch_then_compute"; }
  std::string overlapped_name() const override { return "pipelined"; }
  // Trials 0 and 1 use the power-law graph (GCN, mean); 2..4 the empty-rows, dense-row and
  // uniform patterns (sparse::Pattern).
  Scalars fixed_scalars(int trial) const override {
    static const double pattern[5] = {1, 1, 5, 6, 0};
    return {{"pattern", pattern[trial % 5]}, {"kind", trial % 2 == 0 ? 0.0 : 1.0}};
  }
  std::vector<int> trials() const override { return {0, 1, 2, 3, 4}; }
  int timed_trial() const override { return 0; }
  std::vector<Sizes> odd_shapes(int ranks) const override {
    return {{{"M", 37}, {"N", 5}, {"NNZ", 211}},
            {{"M", std::max(1, ranks - 1)}, {"N", 3}, {"NNZ", 2}},  // fewer nodes than ranks
            {{"M", 1}, {"N", 1}, {"NNZ", 1}}};
  }
  void check(const Sizes& s) const override {
    if (s.at("M") * s.at("N") >= (std::int64_t{1} << 29))
      throw UsageError(fmt::format("gnn_dist: M*N={} must stay below 2^29 (MPI counts of the feature rows)",
                                   s.at("M") * s.at("N")));
  }
  std::int64_t output_rows(const Sizes& s) const override { return s.at("M"); }
  std::int64_t output_cols(const Sizes& s) const override { return s.at("N"); }
  std::vector<std::string> count_names() const override { return {"rows_fetched", "bytes_fetched"}; }
  // Rank r fetches each distinct remote node its rows name, once.
  std::vector<std::vector<std::int64_t>> expected_counts(const Instance& in, int ranks) const override {
    const std::int64_t M = in.sizes.at("M"), N = in.sizes.at("N");
    std::vector<std::vector<std::int64_t>> n;
    for (int r = 0; r < ranks; ++r) {
      const Part p = overlap::part(M, ranks, r);
      std::vector<std::int64_t> cols;
      for (auto e = static_cast<std::int64_t>(in.tensors[kPtr][p.begin]); e < in.tensors[kPtr][p.begin + p.size]; ++e) {
        const auto col = static_cast<std::int64_t>(in.tensors[kIdx][e]);
        if (col < p.begin || col >= p.begin + p.size) cols.push_back(col);
      }
      std::sort(cols.begin(), cols.end());
      const auto distinct = static_cast<std::int64_t>(std::unique(cols.begin(), cols.end()) - cols.begin());
      n.push_back({distinct, distinct * N * 4});
    }
    return n;
  }
  nlohmann::json count_context(const Instance& in, int ranks) const override {
    const std::int64_t M = in.sizes.at("M");
    std::vector<std::int64_t> whole, edges;
    for (int r = 0; r < ranks; ++r) {
      const Part p = overlap::part(M, ranks, r);
      whole.push_back(M - p.size);
      std::int64_t remote = 0;
      for (auto e = static_cast<std::int64_t>(in.tensors[kPtr][p.begin]); e < in.tensors[kPtr][p.begin + p.size]; ++e) {
        const auto col = static_cast<std::int64_t>(in.tensors[kIdx][e]);
        remote += col < p.begin || col >= p.begin + p.size;
      }
      edges.push_back(remote);
    }
    return {{"remote_partition_rows_per_rank", whole},
            {"remote_edges_per_rank", edges},
            {"graph", "sparse::generate power_law (row lengths ~ 1/rank, rows shuffled); GCN normalized sum"}};
  }
  RankOutput run(const Command& c, const Instance& in, int rank, int ranks) const override {
    return GnnRank(c, in, rank, ranks).run();
  }
};

}  // namespace

const multirank::App& gnn_dist_app() {
  static const GnnDist app;
  return app;
}

}  // namespace kforge::dist
