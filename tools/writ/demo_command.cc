// writ demo: RC-233 end to end on loopback with an embedded receiver.
#include <fcntl.h>
#include <unistd.h>

#include <iostream>
#include <vector>

#include "command.h"
#include "common/pattern.h"
#include "outcome_text.h"
#include "writ/receiver.h"
#include "writ/sender.h"

namespace writ::cli {
namespace {

constexpr uint64_t kChunk = 8ull << 20;

// RC-233's three distinct 8 MiB chunks, in an unlinked-on-exit temporary file.
Result<std::string> WriteRc233(std::string& dir) {
  char tmpl[] = "/tmp/writ-demo-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) return Status::Io("mkdtemp", errno);
  dir = tmpl;
  const std::string path = dir + "/RC-233";
  const int fd = open(path.c_str(), O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return Status::Io("create " + path, errno);
  std::vector<uint8_t> chunk(kChunk);
  for (uint64_t c = 0; c < 3; ++c) {
    FillPattern(233, c * kChunk, chunk.data(), chunk.size());
    if (write(fd, chunk.data(), chunk.size()) != static_cast<ssize_t>(chunk.size())) {
      close(fd);
      return Status::Io("write " + path, errno);
    }
  }
  close(fd);
  return path;
}

int RunDemo(bool json, const std::string& provider) {
  ReceiverOptions receiver_options;
  receiver_options.provider = provider;
  auto receiver = Receiver::Start(receiver_options);
  if (!receiver.ok()) {
    Status offered = provider.empty() ? Status::Ok() : CheckProviderOffered(provider);
    return ReportError(offered.ok() ? receiver.status().Annotate("embedded receiver") : offered);
  }
  std::string dir;
  auto path = WriteRc233(dir);
  if (!path.ok()) return ReportError(path.status());

  SendOptions options;
  options.to = (*receiver)->listen_address();
  options.id = "RC-233";
  options.chunk_size = kChunk;
  options.until = Rung::kValidated;
  DeliveryOutcome outcome = Send(*path, options);
  unlink(path->c_str());
  rmdir(dir.c_str());
  Status stopped = (*receiver)->Stop();

  if (json) {
    std::cout << OutcomeToJson(outcome, options) << std::endl;
  } else {
    std::cout << "writ demo: RC-233 on loopback, embedded receiver at " << options.to
              << " (provider " << (*receiver)->provider() << ")\n\n"
              << OutcomeToText(outcome, true) << "\n";
    uint64_t ok = 0;
    for (const auto& wc : outcome.work_completions) ok += wc.ok ? 1 : 0;
    std::cout << "reading: " << outcome.work_completions.size() << " work requests, " << ok
              << " successes, 1 logical delivery of " << WithThousands(outcome.delivery.bytes)
              << " bytes. Processing: unknown (no processing step is registered). Retention: "
              << "volatile only (held while the receiver runs; survives no failure).\n";
  }
  if (!outcome.status.ok()) return ReportError(outcome.status);
  if (!stopped.ok()) return ReportError(stopped);
  return kExitOk;
}

void RegisterDemo(CLI::App& app, CommandContext& ctx) {
  auto json = std::make_shared<bool>(false);
  auto provider = std::make_shared<std::string>();
  CLI::App* cmd =
      app.add_subcommand("demo", "RC-233 end to end on loopback with an embedded receiver");
  cmd->add_flag("--json", *json, "print one JSON document");
  cmd->add_option("--provider", *provider, "libfabric provider; default: best available");
  cmd->callback([json, provider, &ctx] { ctx.exit_code = RunDemo(*json, *provider); });
}

}  // namespace

WRIT_REGISTER_COMMAND(60, RegisterDemo);

}  // namespace writ::cli
