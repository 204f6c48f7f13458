#include "send_many.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iostream>

#include "command.h"
#include "common/printable.h"
#include "outcome_text.h"
#include "sender/test_seams.h"

namespace writ::cli {
namespace {

namespace fs = std::filesystem;

std::string Line(const DeliveryOutcome& o) {
  std::string reached = o.reached_rung ? std::string(ReceiptRungName(*o.reached_rung)) : "none";
  if (o.reached_retention)
    reached += ", retained " + std::string(RetentionName(*o.reached_retention));
  std::string line = fmt::format("{}  {} bytes  {}  ", Printable(o.delivery.id),
                                 WithThousands(o.delivery.bytes), reached);
  line += o.status.ok() ? "ok" : "failed: " + Printable(o.status.ToString());
  return line;
}

}  // namespace

Result<std::vector<std::string>> ExpandSendPaths(const std::vector<std::string>& args) {
  std::vector<std::string> paths;
  for (const auto& arg : args) {
    std::error_code ec;
    if (arg == "-" || !fs::is_directory(arg, ec)) {
      paths.push_back(arg);
      continue;
    }
    std::vector<std::string> files;
    for (const auto& entry : fs::directory_iterator(arg, ec)) {
      if (entry.is_regular_file(ec)) files.push_back(entry.path().string());
    }
    if (ec) return Status::Io("cannot list directory " + arg + ": " + ec.message());
    std::sort(files.begin(), files.end());
    paths.insert(paths.end(), files.begin(), files.end());
  }
  return paths;
}

int RunSendMany(const SendManyRequest& request) {
  SessionOptions session = SessionOptionsOf(request.options);
  session.max_in_flight = request.in_flight;
  auto sender = Sender::Connect(session);
  if (!sender.ok()) return ReportError(sender.status());
  if (request.corrupt_chunk >= 0) {
    sender::TestSeams::CorruptChunk(**sender, static_cast<uint64_t>(request.corrupt_chunk));
  }
  DeliveryOptions delivery = DeliveryOptionsOf(request.options);
  delivery.id.clear();  // each file is named by itself
  delivery.progress = nullptr;
  delivery.on_receipt = nullptr;
  const auto started = std::chrono::steady_clock::now();
  std::vector<DeliveryHandle> handles;
  handles.reserve(request.paths.size());
  for (const auto& path : request.paths) handles.push_back((*sender)->Submit(path, delivery));
  int worst = kExitOk;
  uint64_t ok = 0, bytes = 0;
  if (request.json) std::cout << "[\n";
  for (size_t i = 0; i < handles.size(); ++i) {
    const DeliveryOutcome& o = handles[i].Wait();
    if (request.json) {
      std::cout << OutcomeToJson(o, delivery) << (i + 1 < handles.size() ? ",\n" : "\n");
    } else {
      std::cout << Line(o) << '\n';
    }
    if (o.status.ok()) {
      ++ok;
      bytes += o.delivery.bytes;
    } else {
      worst = std::max(worst, ExitCodeFor(o.status));
    }
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  if (request.json) std::cout << "]\n";
  std::cout.flush();
  (void)(*sender)->Close();
  // The total goes to stderr under --json, so stdout stays one JSON array.
  (request.json ? std::cerr : std::cout) << fmt::format(
      "total: {} deliveries, {} ok, {} failed, {} bytes in {:.3f} s ({:.0f} "
      "deliveries/s)\n",
      handles.size(), ok, handles.size() - ok, WithThousands(bytes), seconds,
      seconds > 0 ? static_cast<double>(handles.size()) / seconds : 0.0);
  return worst;
}

}  // namespace writ::cli
