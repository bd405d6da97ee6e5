// kernel_kmeans_dist: one Lloyd step of the library's kernel_kmeans problem (kernels/kernel_kmeans:
// RBF kernel, DIST (N,K) and NEWL (N) from X (N,D) and labels L) over R ranks, with the N x N
// kernel matrix distributed two ways and never stored. Rank p owns block p of the points
// (overlap::part(N, R, p)): its points, its labels, its output rows. Every word a rank receives
// (one matrix or vector entry, sent as a double) is counted and checked against the
// communication analysis (docs/kernel-kmeans.md, "Over MPI ranks").
//   1d (baseline)   rank p computes S (the per-cluster kernel row sums) for its block against
//                   all N points: every block's points and labels are all-gathered.
//   2d (overlapped) a Pr x Pc grid, p = (r, c) = (p / Pc, p % Pc): rank p computes the kernel
//                   block rows I_r (blocks r Pc .. r Pc + Pc - 1) x columns J_c (blocks
//                   c Pr .. c Pr + Pr - 1), gets the points of I_r and J_c and the labels of
//                   J_c, and sends each row's partial sums to its owner, who adds them in grid
//                   column order: fewer points and labels per rank, S partials instead.
// Then both: 2K words from every rank (the cluster sums of S over its points, the cluster
// sizes), from which each rank finishes DIST and the argmin for its own points. The library's
// kernel_kmeans kernels compute all N rows against all N points in one launch (their last block
// runs the cluster pass), so a rank's block x block partial sums are computed here, in double,
// like the problem's reference. The emulated link delays each exchange by latency per message
// plus the bytes this rank received over its bandwidth.
#include <cfloat>
#include <cmath>
#include <functional>

#include <fmt/format.h>

#include "dist/moe_gnn.hpp"
#include "dist/multirank.hpp"
#include "kforge/alternative_answers.hpp"

namespace kforge::dist {
namespace {

using multirank::Command;
using multirank::RankOutput;

enum { kX, kL };
enum { kXWords, kLabelWords, kSWords, kClusterWords, kCounts };

struct Layout {
  std::int64_t n = 0;
  int ranks = 1, pr = 1, pc = 1;
  bool two_d = false;
  Layout(std::int64_t points, int r, bool grid) : n(points), ranks(r), pc(r), two_d(grid) {
    if (!grid) return;
    for (int a = 1; a * a <= r; ++a)  // the largest divisor up to the square root
      if (r % a == 0) pr = a;
    pc = r / pr;
  }
  [[nodiscard]] overlap::Part block(int b) const { return overlap::part(n, ranks, b); }
  // Whether rank q computes kernel rows of block b (1d: its own; 2d: its grid row's), and
  // columns of block b (1d: all; 2d: its grid column's).
  [[nodiscard]] bool row_block(int q, int b) const { return two_d ? b / pc == q / pc : b == q; }
  [[nodiscard]] bool col_block(int q, int b) const { return !two_d || b / pr == q % pc; }
};

// The words of X (D a point), labels and S partials (K a point) rank `rank` receives: what the
// counts must equal.
std::vector<std::int64_t> words_needed(const Layout& l, int rank, std::int64_t d, std::int64_t k) {
  std::vector<std::int64_t> w(kCounts, 0);
  for (int b = 0; b < l.ranks; ++b) {
    if (b == rank) continue;
    if (l.row_block(rank, b) || l.col_block(rank, b)) w[kXWords] += l.block(b).size * d;
    if (l.col_block(rank, b)) w[kLabelWords] += l.block(b).size;
  }
  if (l.two_d) w[kSWords] = (l.pc - 1) * l.block(rank).size * k;
  w[kClusterWords] = 2 * k * (l.ranks - 1);
  return w;
}

class KmeansRank {
 public:
  KmeansRank(const Command& c, const Instance& in, int rank, int ranks)
      : c_(c), in_(in), rank_(rank), l_(in.sizes.at("N"), ranks, c.form == 1), d_(in.sizes.at("D")),
        k_(in.sizes.at("K")), gamma_(in.scalars.at("gamma")), mine_(l_.block(rank)), counts_(kCounts, 0) {}

  RankOutput run() {
    t0_ = Clock::now();
    // This rank's own points and labels: all it starts from (the instance is everywhere only
    // because every rank builds it from the seed).
    const auto& X = in_.tensors[kX];
    const auto& L = in_.tensors[kL];
    std::vector<double> my_x(X.begin() + mine_.begin * d_, X.begin() + (mine_.begin + mine_.size) * d_);
    std::vector<double> my_l(L.begin() + mine_.begin, L.begin() + mine_.begin + mine_.size);
    const auto xb = share(my_x, d_, [&](int q, int b) { return l_.row_block(q, b) || l_.col_block(q, b); },
                          counts_[kXWords]);
    const auto lb = share(my_l, 1, [&](int q, int b) { return l_.col_block(q, b); }, counts_[kLabelWords]);
    const std::vector<double> S = row_sums(xb, lb);
    return finish(S, my_l);
  }

 private:
  // Every rank sends its block (`width` words a point) to each rank q != itself with
  // needs(q, own block); returns the blocks this rank needs (its own included, others empty)
  // and adds the words received to `words`.
  std::vector<std::vector<double>> share(const std::vector<double>& own, std::int64_t width,
                                         const std::function<bool(int, int)>& needs, std::int64_t& words) {
    const int R = l_.ranks;
    std::vector<std::vector<double>> blocks(static_cast<std::size_t>(R));
    blocks[rank_] = own;
    if (R == 1) return blocks;
    std::vector<int> sc(R, 0), sd(R, 0), rc(R, 0), rd(R, 0);
    int total = 0, messages = 0;
    for (int q = 0; q < R; ++q) {
      if (q != rank_ && needs(q, rank_)) sc[q] = static_cast<int>(own.size());
      if (q != rank_ && needs(rank_, q)) rc[q] = static_cast<int>(l_.block(q).size * width);
      rd[q] = total, total += rc[q], messages += rc[q] > 0;
    }
    std::vector<double> in(static_cast<std::size_t>(total));
    exchange(own.data(), sc, sd, in.data(), rc, rd, messages);
    words += total;
    for (int q = 0; q < R; ++q)
      if (rc[q] > 0) blocks[q].assign(in.begin() + rd[q], in.begin() + rd[q] + rc[q]);
    return blocks;
  }

  // One MPI_Alltoallv, then the emulated link's delay for what this rank received.
  void exchange(const double* send, const std::vector<int>& sc, const std::vector<int>& sd, double* recv,
                const std::vector<int>& rc, const std::vector<int>& rd, int messages) {
    const auto start = Clock::now();
    multirank::mpi_check(MPI_Alltoallv(send, sc.data(), sd.data(), MPI_DOUBLE, recv, rc.data(), rd.data(),
                                       MPI_DOUBLE, MPI_COMM_WORLD),
                         "kernel_kmeans_dist: MPI_Alltoallv");
    std::int64_t bytes = 0;
    for (int v : rc) bytes += 8 * static_cast<std::int64_t>(v);
    if (c_.link_bytes_per_s > 0 && messages > 0)
      multirank::wait_until(start, messages * c_.link_latency_s + static_cast<double>(bytes) / c_.link_bytes_per_s);
  }

  // S (this rank's points x K): partial sums over its column blocks for each row block it
  // computes; 2d: the partials of its own rows from the rest of its grid row added in order.
  std::vector<double> row_sums(const std::vector<std::vector<double>>& xb, const std::vector<std::vector<double>>& lb) {
    const auto c0 = Clock::now();
    const int R = l_.ranks;
    std::vector<std::vector<double>> part(static_cast<std::size_t>(R));
    for (int rb = 0; rb < R; ++rb) {
      if (!l_.row_block(rank_, rb)) continue;
      const std::int64_t rows = l_.block(rb).size;
      part[rb].assign(static_cast<std::size_t>(rows * k_), 0.0);
      for (int cb = 0; cb < R; ++cb) {
        if (!l_.col_block(rank_, cb)) continue;
        // Tests (--fault drop_chunk): rank 0's 2d form leaves out its last column block.
        if (c_.fault && c_.form == 1 && rank_ == 0 && R > 1 && cb == last_col_block()) continue;
        const std::int64_t cols = l_.block(cb).size;
        for (std::int64_t i = 0; i < rows; ++i) {
          const double* xi = &xb[rb][i * d_];
          double* s = &part[rb][i * k_];
          for (std::int64_t j = 0; j < cols; ++j) {
            const double* xj = &xb[cb][j * d_];
            double d2 = 0;
            for (std::int64_t e = 0; e < d_; ++e) d2 += (xi[e] - xj[e]) * (xi[e] - xj[e]);
            s[label(lb[cb][j])] += std::exp(-gamma_ * d2);
          }
        }
      }
    }
    compute_s_ += multirank::seconds(c0);
    if (!l_.two_d) return part[rank_];
    // The partials of each row block to its owner (a reduce-scatter along the grid row).
    std::vector<int> sc(R, 0), sd(R, 0), rc(R, 0), rd(R, 0);
    std::vector<double> send;
    for (int rb = 0; rb < R; ++rb)
      if (rb != rank_ && !part[rb].empty())
        sd[rb] = static_cast<int>(send.size()), sc[rb] = static_cast<int>(part[rb].size()),
        send.insert(send.end(), part[rb].begin(), part[rb].end());
    int total = 0, messages = 0;
    for (int q = 0; q < R; ++q)
      if (q != rank_ && l_.row_block(q, rank_))
        rc[q] = static_cast<int>(mine_.size * k_), rd[q] = total, total += rc[q], messages += rc[q] > 0;
    std::vector<double> in(static_cast<std::size_t>(total));
    if (R > 1) exchange(send.data(), sc, sd, in.data(), rc, rd, messages);
    counts_[kSWords] += total;
    const auto c1 = Clock::now();
    std::vector<double> S(static_cast<std::size_t>(mine_.size * k_), 0.0);
    for (int q = 0; q < R; ++q) {  // q = (r, 0), (r, 1), ...: the grid row in order
      if (!l_.row_block(q, rank_)) continue;
      const double* p = q == rank_ ? part[rank_].data() : in.data() + rd[q];
      for (std::size_t e = 0; e < S.size(); ++e) S[e] += p[e];
    }
    compute_s_ += multirank::seconds(c1);
    return S;
  }

  // The cluster sums and sizes from every rank, then DIST and the argmin for this rank's points.
  RankOutput finish(const std::vector<double>& S, const std::vector<double>& my_l) {
    const int R = l_.ranks;
    std::vector<double> own(static_cast<std::size_t>(2 * k_), 0.0), all(own.size() * R);
    for (std::int64_t i = 0; i < mine_.size; ++i) {
      const std::int64_t c = label(my_l[i]);
      own[c] += S[i * k_ + c], own[k_ + c] += 1;
    }
    if (R > 1) {
      std::vector<int> sc(R, static_cast<int>(own.size())), sd(R, 0), rc(R, static_cast<int>(own.size())), rd(R);
      sc[rank_] = rc[rank_] = 0;  // its own stays put
      for (int q = 0; q < R; ++q) rd[q] = q * static_cast<int>(own.size());
      exchange(own.data(), sc, sd, all.data(), rc, rd, R - 1);
      counts_[kClusterWords] += static_cast<std::int64_t>(own.size()) * (R - 1);
    }
    std::copy(own.begin(), own.end(), all.begin() + rank_ * static_cast<std::ptrdiff_t>(own.size()));
    const auto c0 = Clock::now();
    std::vector<double> z(static_cast<std::size_t>(k_), 0.0), n(z.size(), 0.0);
    for (int q = 0; q < R; ++q)  // in rank order on every rank: the same sums everywhere
      for (std::int64_t c = 0; c < k_; ++c) z[c] += all[q * own.size() + c], n[c] += all[q * own.size() + k_ + c];
    RankOutput out;
    out.rows.resize(static_cast<std::size_t>(mine_.size * (k_ + 1)));
    for (std::int64_t i = 0; i < mine_.size; ++i) {
      std::int64_t best = 0;
      double best_d = 0;
      for (std::int64_t c = 0; c < k_; ++c) {
        // k(x_i, x_i) = exp(0) = 1; an empty cluster is infinitely far (FLT_MAX, as the problem).
        const double dist = n[c] == 0 ? FLT_MAX : 1 - 2 * S[i * k_ + c] / n[c] + z[c] / (n[c] * n[c]);
        out.rows[i * (k_ + 1) + c] = static_cast<float>(dist);
        if (c == 0 || dist < best_d) best = c, best_d = dist;
      }
      out.rows[i * (k_ + 1) + k_] = static_cast<float>(best);
    }
    compute_s_ += multirank::seconds(c0);
    out.counts = counts_;
    out.total_s = multirank::seconds(t0_);
    out.compute_s = compute_s_;
    return out;
  }

  [[nodiscard]] std::int64_t label(double v) const {
    return std::clamp<std::int64_t>(static_cast<std::int64_t>(v), 0, k_ - 1);
  }
  [[nodiscard]] int last_col_block() const {
    int last = -1;
    for (int b = 0; b < l_.ranks; ++b)
      if (l_.col_block(rank_, b)) last = b;
    return last;
  }

  const Command& c_;
  const Instance& in_;
  int rank_;
  Layout l_;
  std::int64_t d_, k_;
  double gamma_;
  overlap::Part mine_;
  std::vector<std::int64_t> counts_;
  Clock::time_point t0_;
  double compute_s_ = 0;
};

class KernelKmeansDist final : public multirank::App {
 public:
  std::string name() const override { return "kernel_kmeans_dist"; }
  std::shared_ptr<Problem> problem() const override { return find_problem("kernel_kmeans"); }
  std::string baseline_name() const override { return "1d"; }
  std::string overlapped_name() const override { return "2d"; }
  // The problem's own trials: a wide kernel (gamma 0.1) and a narrow one (gamma 2).
  std::vector<int> trials() const override { return {0, 1}; }
  int timed_trial() const override { return 0; }
  std::vector<Sizes> odd_shapes(int ranks) const override {
    return {{{"N", 37}, {"D", 5}, {"K", 3}},                           // blocks of uneven size
            {{"N", std::max(2, ranks + 1)}, {"D", 1}, {"K", 2}},       // about one point a rank
            {{"N", 50}, {"D", 2}, {"K", std::min(7, 50)}}};
  }
  void check(const Sizes& s) const override {
    if (s.at("N") * std::max<std::int64_t>(s.at("D"), s.at("K")) >= (std::int64_t{1} << 31))
      throw UsageError(fmt::format("kernel_kmeans_dist: N*max(D,K)={} must stay below 2^31 (MPI counts)",
                                   s.at("N") * std::max<std::int64_t>(s.at("D"), s.at("K"))));
  }
  std::int64_t output_rows(const Sizes& s) const override { return s.at("N"); }
  std::int64_t output_cols(const Sizes& s) const override { return s.at("K") + 1; }  // DIST row, NEWL
  std::vector<std::string> count_names() const override {
    return {"x_words", "label_words", "s_words", "cluster_words"};
  }
  // The analysis (words_needed): the 1d and 2d forms receive different words.
  std::vector<std::vector<std::int64_t>> expected_counts(const Instance& in, int ranks) const override {
    return expected_for(in, ranks, 0);
  }
  std::vector<std::vector<std::int64_t>> expected_counts_of_form(const Instance& in, int ranks,
                                                                 int form) const override {
    return expected_for(in, ranks, form);
  }
  nlohmann::json count_context(const Instance& in, int ranks) const override {
    const Layout two(in.sizes.at("N"), ranks, true);
    return {{"word", "one matrix or vector entry, sent as a double"},
            {"grid_2d", {two.pr, two.pc}},
            {"per_rank_2d", expected_for(in, ranks, 1)},
            {"per_rank_1d", expected_for(in, ranks, 0)}};
  }
  RankOutput run(const Command& c, const Instance& in, int rank, int ranks) const override {
    // The distributed step computes the RBF kernel only (its trials 0 and 1 are RBF); every
    // rank holds the same instance, so all refuse alike.
    if (in.scalars.count("kind") && in.scalars.at("kind") != 0)
      throw UsageError("kernel_kmeans_dist: scalar kind=" + std::to_string(in.scalars.at("kind")) +
                       " is not supported: the distributed step is RBF only (kind=0); drop --scalar kind");
    return KmeansRank(c, in, rank, ranks).run();
  }
  void outputs(const Instance& in, const std::vector<float>& rows, KernelOutput& got,
               std::vector<std::vector<double>>& ref) const override {
    const std::int64_t N = in.sizes.at("N"), K = in.sizes.at("K");
    std::vector<double> dist(static_cast<std::size_t>(N * K)), newl(static_cast<std::size_t>(N));
    for (std::int64_t i = 0; i < N; ++i) {
      for (std::int64_t c = 0; c < K; ++c) dist[i * K + c] = rows[i * (K + 1) + c];
      newl[i] = rows[i * (K + 1) + K];
    }
    got.tensors = {std::move(dist), std::move(newl), std::vector<double>{0.0}};  // SYNC: none used
    got.unwritten.clear();
    for (const auto& t : got.tensors) got.unwritten.emplace_back(t.size(), false);
    // A true near-tie may pick either cluster, as for the library's kernels.
    if (const auto* alt = dynamic_cast<const AlternativeAnswers*>(problem_.get()))
      alt->accept_alternatives(in, got.tensors, ref);
  }

 private:
  static std::vector<std::vector<std::int64_t>> expected_for(const Instance& in, int ranks, int form) {
    const Layout l(in.sizes.at("N"), ranks, form == 1);
    std::vector<std::vector<std::int64_t>> w;
    for (int r = 0; r < ranks; ++r) w.push_back(words_needed(l, r, in.sizes.at("D"), in.sizes.at("K")));
    return w;
  }
  std::shared_ptr<Problem> problem_ = find_problem("kernel_kmeans");
};

}  // namespace

const multirank::App& kernel_kmeans_dist_app() {
  static const KernelKmeansDist app;
  return app;
}

}  // namespace kforge::dist
