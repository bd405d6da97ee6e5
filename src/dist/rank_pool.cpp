#include "dist/rank_pool.hpp"

#include <signal.h>

#include <fmt/format.h>

#include <cstdlib>
#include <string>

#include "kforge/error.hpp"

namespace kforge::dist {

double silence_seconds() {
  const char* s = std::getenv("KFORGE_RANK_SILENCE_S");
  if (!s || !*s) return 10;
  try {
    const double v = std::stod(s);
    if (v > 0) return v;
  } catch (const std::exception&) {
  }
  throw UsageError(std::string("KFORGE_RANK_SILENCE_S='") + s + "' is not a positive number of seconds");
}

RankPool::RankPool(int ranks, Backend* local, double silence_s)
    : local_(local), silence_s_(silence_s), slots_(static_cast<std::size_t>(ranks)) {
  for (int r = 1; r < ranks; ++r) slots_[r].lost = rank_lost(r);
}

RankPool::~RankPool() {
  if (local_future_.valid()) local_future_.wait();  // never leave the thread running
  out_.progress();
}

int RankPool::free_slots() const {
  int idle = 0;
  for (const Slot& s : slots_) idle += !s.busy && !s.lost;
  return std::max(0, idle - static_cast<int>(queue_.size()));
}

void RankPool::submit(Job job) {
  queue_.push_back(std::move(job));
  ++outstanding_;
  dispatch();
}

void RankPool::dispatch() {
  for (std::size_t r = 0; r < slots_.size() && !queue_.empty(); ++r) {
    Slot& s = slots_[r];
    if (s.busy || s.lost) continue;
    s.busy = true;
    s.job = std::move(queue_.front());
    queue_.pop_front();
    s.last_heard = Clock::now();
    if (r == 0) {
      local_started_ = Clock::now();
      local_future_ = std::async(std::launch::async, [this] { return run_job(slots_[0].job, local_); });
    } else {
      if (fault_due(0, ++handed_to_ranks_)) raise(SIGKILL);
      out_.post(static_cast<int>(r), kTagJob, s.job.to_json());
    }
  }
}

void RankPool::check_silence() {
  for (std::size_t r = 1; r < slots_.size(); ++r) {
    Slot& s = slots_[r];
    if (!s.busy || s.lost || seconds_since(s.last_heard) < silence_s_) continue;
    s.lost = true;
    s.busy = false;
    note_lost_rank(static_cast<int>(r));
    fmt::print(stderr, "kforge: rank {} sent nothing for {:g} s: taken for lost; its evaluation goes to another rank\n",
               r, silence_s_);
    queue_.push_front(std::move(s.job));
  }
}

std::optional<Completion> RankPool::receive() {
  while (std::optional<Message> m = try_receive()) {
    if (m->source <= 0 || m->source >= static_cast<int>(slots_.size())) continue;
    Slot& s = slots_[m->source];
    const std::uint64_t ticket = m->body.value("ticket", std::uint64_t{0});
    // A rank already taken for lost, or a message about another job: its job went elsewhere.
    if (s.lost || !s.busy || ticket != s.job.ticket) continue;
    s.last_heard = Clock::now();
    if (m->tag != kTagDone) continue;
    s.busy = false;
    if (m->body.contains("error")) rethrow_error(m->body, m->source);
    return Completion{ticket, EvalResult::from_json(m->body.at("result")), m->source,
                      m->body.value("seconds", 0.0)};
  }
  return std::nullopt;
}

Completion RankPool::next() {
  if (outstanding_ == 0) throw std::logic_error("RankPool::next with nothing submitted");
  Backoff wait;
  for (;;) {
    if (local_future_.valid() && local_future_.wait_for(std::chrono::seconds(0)) == std::future_status::ready) {
      slots_[0].busy = false;
      Completion c{slots_[0].job.ticket, {}, 0, seconds_since(local_started_)};
      c.result = local_future_.get();  // rethrows the evaluation's exception
      --outstanding_;
      dispatch();
      return c;
    }
    if (auto c = receive()) {
      --outstanding_;
      dispatch();
      return std::move(*c);
    }
    check_silence();
    dispatch();
    out_.progress();
    wait.idle();
  }
}

}  // namespace kforge::dist
