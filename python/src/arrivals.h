// Deliveries the receiver retained, as they end, for Python's Receiver.deliveries() and
// on_delivery: the receiver's threads push (ReceiverOptions::on_event, no GIL), Python pops.
// Bounded: when `capacity` arrivals wait unread, the oldest is dropped and counted.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>

#include "writ/receiver.h"

namespace writ::python {

struct Arrival {
  std::string id;
  uint64_t bytes = 0;
  std::string rung;       // the highest receipt issued
  std::string retention;  // the class it was retained at
};

class Arrivals {
 public:
  explicit Arrivals(size_t capacity) : capacity_(capacity == 0 ? 1 : capacity) {}

  // A "delivery" event whose outcome is "retained" becomes an arrival; others are ignored.
  void OnEvent(const LogEvent& event) {
    if (event.event != "delivery" || Field(event, "outcome") != "retained") return;
    Arrival a{Field(event, "id"), 0, Field(event, "rung"), Field(event, "class")};
    for (const LogField& f : event.fields) {
      if (f.name == "bytes" && std::holds_alternative<uint64_t>(f.value)) {
        a.bytes = std::get<uint64_t>(f.value);
      }
    }
    {
      std::lock_guard lock(mu_);
      if (queue_.size() >= capacity_) {
        queue_.pop_front();
        ++dropped_;
      }
      queue_.push_back(std::move(a));
    }
    cv_.notify_one();
  }

  // The next arrival, waiting up to `timeout`; nothing when none came or on Close.
  std::optional<Arrival> Next(std::chrono::milliseconds timeout) {
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, timeout, [this] { return closed_ || !queue_.empty(); });
    if (queue_.empty()) return std::nullopt;
    Arrival a = std::move(queue_.front());
    queue_.pop_front();
    return a;
  }

  void Close() {
    {
      std::lock_guard lock(mu_);
      closed_ = true;
    }
    cv_.notify_all();
  }

  uint64_t dropped() {
    std::lock_guard lock(mu_);
    return dropped_;
  }

 private:
  static std::string Field(const LogEvent& event, const std::string& name) {
    for (const LogField& f : event.fields) {
      if (f.name == name && std::holds_alternative<std::string>(f.value)) {
        return std::get<std::string>(f.value);
      }
    }
    return "";
  }

  const size_t capacity_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Arrival> queue_;
  uint64_t dropped_ = 0;
  bool closed_ = false;
};

}  // namespace writ::python
