#include "dist/wire.hpp"

#include <thread>

#include "kforge/error.hpp"

namespace kforge::dist {

void Outbox::post(int dest, Tag tag, const nlohmann::json& body) {
  auto* p = new Pending{MPI_REQUEST_NULL, dest, body.dump()};
  MPI_Isend(p->text.data(), static_cast<int>(p->text.size()), MPI_CHAR, dest, tag, MPI_COMM_WORLD, &p->request);
  pending_.push_back(p);
}

bool Outbox::progress() {
  std::erase_if(pending_, [](Pending* p) {
    int done = 0;
    MPI_Test(&p->request, &done, MPI_STATUS_IGNORE);
    if (done) delete p;
    return done != 0;
  });
  return pending_.empty();
}

bool Outbox::drain(double timeout_s, int dest) {
  const auto t0 = Clock::now();
  Backoff wait;
  for (;;) {
    progress();
    bool left = false;
    for (const Pending* p : pending_) left |= dest < 0 || p->dest == dest;
    if (!left) return true;
    if (seconds_since(t0) > timeout_s) return false;
    wait.idle();
  }
}

Outbox::~Outbox() {
  // A send that never completed went to a rank that is gone: MPI may still touch its buffer,
  // so the buffer is left allocated (a few kilobytes, once per lost rank).
  for (Pending* p : pending_) MPI_Request_free(&p->request);
}

std::optional<Message> try_receive(int source) {
  int flag = 0;
  MPI_Status st;
  MPI_Iprobe(source, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st);
  if (!flag) return std::nullopt;
  int count = 0;
  MPI_Get_count(&st, MPI_CHAR, &count);
  std::string text(static_cast<std::size_t>(count), '\0');
  MPI_Recv(text.data(), count, MPI_CHAR, st.MPI_SOURCE, st.MPI_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  Message m{st.MPI_SOURCE, st.MPI_TAG, {}};
  try {
    m.body = nlohmann::json::parse(text);
  } catch (const std::exception& e) {
    throw std::runtime_error("rank " + std::to_string(m.source) + " sent an unreadable message: " + e.what());
  }
  return m;
}

void Backoff::idle() {
  std::this_thread::sleep_for(std::chrono::microseconds(wait_us_));
  wait_us_ = std::min(wait_us_ * 2, 5000);
}

}  // namespace kforge::dist
