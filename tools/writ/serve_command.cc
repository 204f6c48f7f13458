// writ serve: run a receiver until SIGTERM / SIGINT.
#include <signal.h>

#include <iostream>

#include "command.h"
#include "protocol/control_channel.h"
#include "writ/receiver.h"

namespace writ::cli {
namespace {

struct ServeFlags {
  std::string listen = "127.0.0.1:7233";
  std::string provider;
  std::string data;
  std::string window_pool = "256MiB";
  std::string window_size = "32MiB";
  std::string scratch = "/tmp";
  std::string identity;
};

int RunServe(const ServeFlags& flags) {
  auto host_port = protocol::ParseHostPort(flags.listen);
  if (!host_port.ok()) return ReportError(Status::InvalidArgument("--listen: " + host_port.status().message()));
  auto pool = ParseSize(flags.window_pool);
  if (!pool.ok()) return ReportError(pool.status().Annotate("--window-pool"));
  auto window = ParseSize(flags.window_size);
  if (!window.ok()) return ReportError(window.status().Annotate("--window-size"));

  // Block the stop signals in every thread; this one waits for them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  ReceiverOptions options;
  options.listen_host = host_port->first;
  options.listen_port = host_port->second;
  options.provider = flags.provider;
  options.data_dir = flags.data;
  options.window_pool_bytes = *pool;
  options.window_bytes = std::min(*window, *pool);
  options.scratch_dir = flags.scratch;
  options.identity_dir = flags.identity;
  auto receiver = Receiver::Start(options);
  if (!receiver.ok()) return ReportError(receiver.status());
  std::cout << "writ: listening on " << (*receiver)->listen_address() << " (provider "
            << (*receiver)->provider() << ")" << std::endl;
  std::cerr << "writ: receipts are signed with key " << (*receiver)->key_id() << " ("
            << (*receiver)->public_key_hex() << ")" << std::endl;
  if (flags.data.empty()) {
    std::cerr << "writ: no --data: only volatile retention is offered" << std::endl;
  }
  int signal_number = 0;
  sigwait(&stop_signals, &signal_number);
  Status stopped = (*receiver)->Stop();
  if (!stopped.ok()) return ReportError(stopped);
  return kExitOk;
}

void RegisterServe(CLI::App& app, CommandContext& ctx) {
  auto flags = std::make_shared<ServeFlags>();
  CLI::App* cmd = app.add_subcommand("serve", "Run a receiver until SIGTERM/SIGINT");
  cmd->add_option("--listen", flags->listen, "HOST:PORT for the control connection")
      ->capture_default_str();
  cmd->add_option("--provider", flags->provider,
                  "libfabric provider (tcp, tcp;ofi_rxm, shm, verbs, ...); default: best available");
  cmd->add_option("--data", flags->data, "data directory for durable retention");
  cmd->add_option("--window-pool", flags->window_pool, "memory for all windows together")
      ->capture_default_str();
  cmd->add_option("--window-size", flags->window_size, "one window; a chunk must fit in it")
      ->capture_default_str();
  cmd->add_option("--scratch", flags->scratch, "where volatile deliveries are held (unlinked files)")
      ->capture_default_str();
  cmd->add_option("--identity", flags->identity,
                  "directory of the key that signs receipts (default DATA/identity, else "
                  "~/.local/state/writ/receiver)");
  cmd->callback([flags, &ctx] { ctx.exit_code = RunServe(*flags); });
}

}  // namespace

WRIT_REGISTER_COMMAND(10, RegisterServe);

}  // namespace writ::cli
