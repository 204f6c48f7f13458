// `writ store ls|cat|check --data DIR`: offline access to a receiver's data
// directory, whether the receiver runs or not. Opens the index read-only,
// runs no recovery and writes nothing.
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "command.h"
#include "common/printable.h"
#include "protocol/digest.h"
#include "protocol/messages.h"
#include "store/durable_store.h"

namespace writ::cli {
namespace {

using json = nlohmann::json;

struct StoreFlags {
  std::string data;
  std::string id;
  bool json = false;
};

Result<std::unique_ptr<store::DurableStore>> OpenReadOnly(const std::string& dir) {
  store::DurableOptions options;
  options.read_only = true;
  auto opened = store::DurableStore::Open(dir, options);
  if (!opened.ok()) {
    return Status::InvalidArgument("cannot open the data directory " + dir + ": " + opened.status().message());
  }
  return std::move(opened).value();
}

json RowJson(const store::IndexRow& row) {
  return json{{"id", row.id},
              {"bytes", row.bytes},
              {"chunk_size", row.chunk_size},
              {"rule", protocol::RuleName(row.rule)},
              {"digest", protocol::ToHex(row.digest)},
              {"retention", protocol::RetentionName(row.retention)},
              {"location", row.location},
              {"committed_at", row.committed_at},
              {"receipts", row.receipts.size()}};
}

int RunLs(const StoreFlags& f) {
  auto store = OpenReadOnly(f.data);
  if (!store.ok()) return ReportError(store.status());
  auto rows = (*store)->List();
  if (!rows.ok()) return ReportError(rows.status());
  if (f.json) {
    json out{{"data", (*store)->dir()}, {"deliveries", json::array()}};
    for (const auto& row : *rows) out["deliveries"].push_back(RowJson(row));
    std::cout << out.dump(2) << std::endl;
    return kExitOk;
  }
  for (const auto& row : *rows) {
    std::cout << Printable(row.id) << "  " << row.bytes << " bytes  "
              << protocol::RetentionName(row.retention) << "  " << protocol::RuleName(row.rule)
              << " " << protocol::ToHex(row.digest) << std::endl;
  }
  std::cout << rows->size() << " retained deliveries in " << Printable((*store)->dir())
            << std::endl;
  return kExitOk;
}

Status WriteAll(int fd, std::span<const uint8_t> bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Status::Io(std::string("writing to stdout: ") + std::strerror(errno), errno);
    done += static_cast<size_t>(n);
  }
  return Status::Ok();
}

int RunCat(const StoreFlags& f) {
  auto store = OpenReadOnly(f.data);
  if (!store.ok()) return ReportError(store.status());
  auto row = (*store)->Find(f.id);
  if (!row.ok()) return ReportError(row.status());
  if (!*row) return ReportError(Status::NotFound(f.id + " is not retained in " + (*store)->dir()));
  bool sink_failed = false;
  Status streamed = (*store)->Stream(**row, [&](std::span<const uint8_t> bytes) {
    Status s = WriteAll(STDOUT_FILENO, bytes);
    sink_failed = !s.ok();
    return s;
  });
  if (!streamed.ok()) {
    if (sink_failed) return ReportError(streamed);
    // The bytes (or part of them) went out, but they are not the retained delivery.
    return ReportError(Status::Validation("store cat " + f.id + ": " + streamed.message()));
  }
  return kExitOk;
}

int RunCheck(const StoreFlags& f) {
  auto store = OpenReadOnly(f.data);
  if (!store.ok()) return ReportError(store.status());
  auto rows = (*store)->List();
  if (!rows.ok()) return ReportError(rows.status());
  json mismatched = json::array();
  for (const auto& row : *rows) {
    Status s = (*store)->Verify(row);
    if (!s.ok()) mismatched.push_back(json{{"id", row.id}, {"problem", s.message()}});
  }
  auto unreferenced = (*store)->UnreferencedFiles();
  json extra = json::array();
  if (unreferenced.ok()) {
    for (const auto& name : *unreferenced) extra.push_back(name);
  }
  const size_t ok = rows->size() - mismatched.size();
  if (f.json) {
    std::cout << json{{"data", (*store)->dir()},
                      {"checked", rows->size()},
                      {"ok", ok},
                      {"mismatched", mismatched},
                      {"unreferenced_files", extra}}
                     .dump(2)
              << std::endl;
  } else {
    for (const auto& m : mismatched) {
      std::cout << Printable(m["id"].get<std::string>())
                << ": MISMATCH: " << Printable(m["problem"].get<std::string>()) << std::endl;
    }
    for (const auto& name : extra) {
      std::cout << "note: " << Printable(name.get<std::string>())
                << " is named by no retained delivery (recovery removes it at the next start)"
                << std::endl;
    }
    std::cout << "checked " << rows->size() << " retained deliveries in "
              << Printable((*store)->dir()) << ": " << ok << " match their digest, "
              << mismatched.size() << " do not" << std::endl;
  }
  if (!mismatched.empty()) {
    std::cerr << "writ: " << mismatched.size() << " retained deliveries do not match their digest" << std::endl;
    return kExitValidation;
  }
  return kExitOk;
}

void RegisterStore(CLI::App& app, CommandContext& ctx) {
  CLI::App* store = app.add_subcommand("store", "Offline access to a receiver's data directory");
  store->require_subcommand(1);

  auto ls = std::make_shared<StoreFlags>();
  CLI::App* ls_cmd = store->add_subcommand("ls", "List retained deliveries (id, bytes, digest, retention)");
  ls_cmd->add_option("--data", ls->data, "the receiver's data directory")->required();
  ls_cmd->add_flag("--json", ls->json, "print one JSON document");
  ls_cmd->callback([ls, &ctx] { ctx.exit_code = RunLs(*ls); });

  auto cat = std::make_shared<StoreFlags>();
  CLI::App* cat_cmd = store->add_subcommand(
      "cat", "Write one retained delivery's bytes to stdout (exit 5 if they do not match its digest)");
  cat_cmd->add_option("ID", cat->id, "delivery id")->required();
  cat_cmd->add_option("--data", cat->data, "the receiver's data directory")->required();
  cat_cmd->callback([cat, &ctx] { ctx.exit_code = RunCat(*cat); });

  auto check = std::make_shared<StoreFlags>();
  CLI::App* check_cmd = store->add_subcommand(
      "check", "Re-hash every retained delivery; exit 5 on any mismatch");
  check_cmd->add_option("--data", check->data, "the receiver's data directory")->required();
  check_cmd->add_flag("--json", check->json, "print one JSON document");
  check_cmd->callback([check, &ctx] { ctx.exit_code = RunCheck(*check); });
}

}  // namespace

WRIT_REGISTER_COMMAND(40, RegisterStore);

}  // namespace writ::cli
