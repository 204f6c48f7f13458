// Starting a thread without letting std::thread's exception cross a layer: under load
// (EAGAIN: no thread to be had) the caller gets a Status naming what could not start.
#pragma once

#include <string>
#include <system_error>
#include <thread>
#include <utility>

#include "writ/status.h"

namespace writ {

template <typename Body>
[[nodiscard]] Status StartThread(std::thread& out, const std::string& what, Body&& body) {
  try {
    out = std::thread(std::forward<Body>(body));
  } catch (const std::system_error& e) {
    return Status::Internal("cannot start " + what + ": " + e.what());
  }
  return Status::Ok();
}

}  // namespace writ
