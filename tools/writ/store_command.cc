// `writ store ls|cat|check|rm|quarantine --data DIR`: offline access to a receiver's
// data directory, whether the receiver runs or not. ls, cat, check and
// `quarantine ls` open the index read-only, run no recovery, take no lock and
// write nothing (SQLite's WAL lets them read while a serve writes). `rm` and
// `quarantine purge` delete, so they take the directory's lock and refuse (exit 6)
// while a serve or another writing command holds it.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>

#include "command.h"
#include "common/hex.h"
#include "common/printable.h"
#include "receipt/identity.h"
#include "receiver/out_files.h"
#include "store/dir_lock.h"
#include "store/durable_store.h"
#include "store/quarantine.h"
#include "store/regions.h"
#include "vocabulary/digest.h"
#include "writ/receipt.h"
#include "writ/vocabulary.h"

namespace writ::cli {
namespace {

using json = nlohmann::json;

struct StoreFlags {
  std::string data;
  std::string id;
  std::string key;                 // check: the issuer's public key (hex) receipts must name
  std::vector<std::string> names;  // quarantine purge: which files; check: which deliveries
  bool json = false;
  bool force = false;   // rm: even before the time its receipt promised
  int64_t region = -1;  // cat: only this region of a scatter-gather delivery (-1: all)
  std::string out;      // rm: the serve's --out directory, whose files of ID go too
};

Result<std::unique_ptr<store::DurableStore>> OpenReadOnly(const std::string& dir) {
  store::DurableOptions options;
  options.read_only = true;
  auto opened = store::DurableStore::Open(dir, options);
  if (!opened.ok()) {
    return Status::InvalidArgument("cannot open the data directory " + dir + ": " +
                                   opened.status().message());
  }
  return std::move(opened).value();
}

json RowJson(const store::IndexRow& row) {
  return json{{"id", row.id},
              {"bytes", row.bytes},
              {"chunk_size", row.chunk_size},
              {"rule", writ::RuleName(row.rule)},
              {"digest", writ::ToHex(row.digest)},
              {"retention", writ::RetentionName(row.retention)},
              {"location", row.location},
              {"committed_at", row.committed_at},
              {"receipts", row.receipts.size()}};
}

// Adds the region count of a scatter-gather delivery to its `ls --json` entry.
json LsJson(const store::IndexRow& row) {
  json entry = RowJson(row);
  if (!row.region_lengths.empty()) entry["regions"] = row.region_lengths.size();
  return entry;
}

int RunLs(const StoreFlags& f) {
  auto store = OpenReadOnly(f.data);
  if (!store.ok()) return ReportError(store.status());
  auto rows = (*store)->List();
  if (!rows.ok()) return ReportError(rows.status());
  if (f.json) {
    json out{{"data", (*store)->dir()}, {"deliveries", json::array()}};
    for (const auto& row : *rows) out["deliveries"].push_back(LsJson(row));
    std::cout << out.dump(2) << std::endl;
    return kExitOk;
  }
  for (const auto& row : *rows) {
    std::cout << Printable(row.id) << "  " << row.bytes << " bytes  "
              << writ::RetentionName(row.retention) << "  " << writ::RuleName(row.rule) << " "
              << writ::ToHex(row.digest) << std::endl;
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
  // --region K: the whole payload is still streamed and re-hashed; only K's bytes go out.
  store::ByteRange out{0, (*row)->bytes};
  if (f.region >= 0) {
    auto range =
        store::RegionRange((*row)->region_lengths, (*row)->bytes, static_cast<uint64_t>(f.region));
    if (!range.ok()) return ReportError(range.status().Annotate("store cat " + f.id));
    out = *range;
  }
  bool sink_failed = false;
  uint64_t at = 0;  // offset of `bytes` in the payload
  Status streamed = (*store)->Stream(**row, [&](std::span<const uint8_t> bytes) {
    const uint64_t begin = std::max(at, out.offset);
    const uint64_t end = std::min(at + bytes.size(), out.offset + out.length);
    Status s = begin < end ? WriteAll(STDOUT_FILENO, bytes.subspan(begin - at, end - begin))
                           : Status::Ok();
    at += bytes.size();
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

// What is wrong between a row and its stored receipts: each receipt must parse, be about
// this delivery (id, bytes, rule, digest) and carry a signature that verifies (with `key`
// when given); one must be the retained receipt of the row's class. Each receipt's key id
// goes to `keys`.
std::vector<std::string> ReceiptProblems(const store::IndexRow& row, const std::string& key,
                                         std::set<std::string>& keys) {
  std::vector<std::string> problems;
  const std::string rule(writ::RuleName(row.rule));
  const std::string digest = writ::ToHex(row.digest);
  const std::string retention(writ::RetentionName(row.retention));
  bool retained = false;
  for (size_t i = 0; i < row.receipts.size(); ++i) {
    const std::string which = "stored receipt " + std::to_string(i + 1);
    auto r = ReceiptFromJson(row.receipts[i]);
    if (!r.ok()) {
      problems.push_back(which + " does not parse: " + r.status().message());
      continue;
    }
    const DeliveryRef& d = r->delivery;
    if (d.id != row.id) problems.push_back(which + " is about " + d.id + ", not " + row.id);
    if (d.bytes != row.bytes)
      problems.push_back(which + " says " + std::to_string(d.bytes) + " bytes, the index " +
                         std::to_string(row.bytes));
    if (d.rule != rule) problems.push_back(which + " says rule " + d.rule + ", the index " + rule);
    if (d.digest != digest)
      problems.push_back(which + " says digest " + d.digest + ", the index " + digest);
    Status signed_ok = VerifyReceipt(*r, key);
    if (!signed_ok.ok()) problems.push_back(which + ": " + signed_ok.message());
    if (r->signature) keys.insert(r->signature->key_id);
    if (r->rung == ReceiptRung::kRetained && r->retention && r->retention->retention == retention)
      retained = true;
  }
  if (!retained) problems.push_back("no stored " + retention + " retained receipt");
  return problems;
}

// The rows of `ids`, in the index's order; an id the index does not hold is a NotFound (exit 1,
// as for `cat`), so that a check never passes by checking nothing.
Result<std::vector<store::IndexRow>> OnlyNamed(std::vector<store::IndexRow> rows,
                                               const std::vector<std::string>& ids,
                                               const std::string& dir) {
  std::set<std::string> wanted(ids.begin(), ids.end());
  std::vector<store::IndexRow> out;
  for (auto& row : rows) {
    if (wanted.erase(row.id) > 0) out.push_back(std::move(row));
  }
  if (!wanted.empty())
    return Status::NotFound("store check: no retained delivery " + *wanted.begin() + " in " + dir);
  return out;
}

int RunCheck(const StoreFlags& f) {
  if (!f.key.empty()) {
    auto parsed = receipt::ParsePublicKeyHex(f.key);
    if (!parsed.ok())
      return ReportError(Status::InvalidArgument("--key: " + parsed.status().message()));
  }
  auto store = OpenReadOnly(f.data);
  if (!store.ok()) return ReportError(store.status());
  auto rows = (*store)->List();
  if (!rows.ok()) return ReportError(rows.status());
  if (!f.names.empty()) {
    auto chosen = OnlyNamed(std::move(*rows), f.names, (*store)->dir());
    if (!chosen.ok()) return ReportError(chosen.status());
    *rows = std::move(*chosen);
  }
  json mismatched = json::array();
  std::set<std::string> keys;
  for (const auto& row : *rows) {
    std::vector<std::string> problems = ReceiptProblems(row, f.key, keys);
    Status s = (*store)->Verify(row);
    if (!s.ok()) problems.insert(problems.begin(), s.message());
    std::string problem;
    for (const auto& p : problems) problem += (problem.empty() ? "" : "; ") + p;
    if (!problems.empty()) mismatched.push_back(json{{"id", row.id}, {"problem", problem}});
  }
  if (keys.size() > 1) {
    std::string all;
    for (const auto& k : keys) all += (all.empty() ? "" : ", ") + k;
    mismatched.push_back(
        json{{"id", "*"}, {"problem", "receipts are signed by more than one key: " + all}});
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
                << " is named by no retained delivery (the next start removes it if it is a "
                   ".tmp, never committed, and quarantines it otherwise)"
                << std::endl;
    }
    std::cout << "checked " << rows->size() << " retained deliveries in "
              << Printable((*store)->dir()) << ": " << ok
              << " match their digest and their signed receipts, " << mismatched.size() << " do not"
              << std::endl;
  }
  if (!mismatched.empty()) {
    std::cerr << "writ: " << mismatched.size()
              << " retained deliveries do not match their digest or their signed receipts"
              << std::endl;
    return kExitValidation;
  }
  return kExitOk;
}

// A --data that names no directory is a usage error (exit 2), as for ls, cat and check.
Status DataDirectoryExists(store::Env* env, const std::string& dir) {
  auto info = env->Stat(dir);
  if (!info.ok() || !info->is_dir)
    return Status::InvalidArgument("cannot open the data directory " + dir + ": not a directory");
  return Status::Ok();
}

int RunQuarantineLs(const StoreFlags& f) {
  if (Status s = DataDirectoryExists(store::Env::Default(), f.data); !s.ok()) return ReportError(s);
  auto files = store::ListQuarantine(store::Env::Default(), f.data);
  if (!files.ok()) return ReportError(files.status());
  if (f.json) {
    json out{{"data", f.data}, {"quarantined", json::array()}};
    for (const auto& q : *files)
      out["quarantined"].push_back(json{{"name", q.name}, {"bytes", q.bytes}, {"why", q.why}});
    std::cout << out.dump(2) << std::endl;
    return kExitOk;
  }
  for (const auto& q : *files)
    std::cout << q.name << "  " << q.bytes << " bytes  " << q.why << std::endl;
  std::cout << files->size() << " quarantined files in " << f.data << "/" << store::kQuarantineDir
            << std::endl;
  return kExitOk;
}

int RunQuarantinePurge(const StoreFlags& f) {
  store::Env* env = store::Env::Default();
  if (Status s = DataDirectoryExists(env, f.data); !s.ok()) return ReportError(s);
  auto lock = store::DirLock::Acquire(env, f.data);
  if (!lock.ok()) return ReportError(lock.status());
  auto before = store::ListQuarantine(env, f.data);
  if (!before.ok()) return ReportError(before.status());
  Status purged = store::PurgeQuarantine(env, f.data, f.names);
  if (!purged.ok()) return ReportError(purged);
  const size_t n = f.names.empty() ? before->size() : f.names.size();
  std::cout << "purged " << n << " quarantined files from " << f.data << "/"
            << store::kQuarantineDir << std::endl;
  return kExitOk;
}

// rm opens the directory to write (its lock, no recovery): only a data directory that
// exists, never one created by the attempt.
Result<std::unique_ptr<store::DurableStore>> OpenForRemoval(const std::string& dir) {
  auto index = store::Env::Default()->Stat(dir + "/" + store::kIndexFile);
  if (!index.ok()) {
    return Status::InvalidArgument("cannot open the data directory " + dir + ": it has no " +
                                   store::kIndexFile + " (not a writ data directory)");
  }
  store::DurableOptions options;
  options.recover = false;
  options.log = [](const std::string& line) { std::cerr << "writ: " << Printable(line) << '\n'; };
  auto opened = store::DurableStore::Open(dir, options);
  if (!opened.ok() &&
      opened.status().message().find("in use by another writ process") != std::string::npos) {
    return Status::Retention(opened.status().message() +
                             "; writ store rm does not go through a running serve: remove "
                             "through it with `writ rm ID --to HOST:PORT --identity DIR`, or "
                             "stop it first");
  }
  return opened;
}

int RunRm(const StoreFlags& f) {
  auto store = OpenForRemoval(f.data);
  if (!store.ok()) return ReportError(store.status());
  auto removal = (*store)->Remove(f.id, f.force, store::NowUnixMs());
  if (!removal.ok()) {
    if (removal.status().code() == ErrorCode::kNotFound) {
      return ReportError(Status::NotFound(f.id + " is not retained in " + (*store)->dir()));
    }
    return ReportError(removal.status());
  }
  // The log line (stderr, as a serve logs it), then the answer.
  std::cerr << "writ: "
            << Printable(store::RemovalLine(*removal, f.force ? "removed by writ store rm --force"
                                                              : "removed by writ store rm"))
            << std::endl;
  if (!f.out.empty()) {
    // The delivery is gone; its files in --out go too (the row and payload stay removed).
    auto out = receiver::RemoveOutFiles(f.out, removal->id);
    const std::string line = out.ok() ? *out : "out: " + out.status().message();
    if (!line.empty()) std::cerr << "writ: " << Printable(line) << std::endl;
  }
  if (f.json) {
    std::cout << json{{"removed", removal->id},
                      {"retention", writ::RetentionName(removal->retention)},
                      {"bytes", removal->bytes},
                      {"promise_broken", removal->promise_broken}}
                     .dump(2)
              << std::endl;
  } else {
    std::cout << "removed " << Printable(removal->id) << " (" << removal->bytes << " bytes, "
              << writ::RetentionName(removal->retention) << ") from " << Printable((*store)->dir())
              << std::endl;
  }
  return kExitOk;
}

void RegisterRm(CLI::App& store, CommandContext& ctx) {
  auto rm = std::make_shared<StoreFlags>();
  CLI::App* rm_cmd = store.add_subcommand(
      "rm",
      "Remove one retained delivery (row, then payload, synced); refused (exit 6) while a "
      "serve runs on the directory, and (exit 3) before the time its receipt promised");
  rm_cmd->add_option("ID", rm->id, "delivery id")->required();
  rm_cmd->add_option("--data", rm->data, "the receiver's data directory")->required();
  rm_cmd->add_flag("--force", rm->force,
                   "remove it even before the time its retained receipt promised (a TTL); the "
                   "log line says the promise was broken");
  rm_cmd->add_option("--out", rm->out,
                     "the serve's --out directory: its file of ID and the receipts file go too");
  rm_cmd->add_flag("--json", rm->json, "print one JSON document");
  rm_cmd->callback([rm, &ctx] { ctx.exit_code = RunRm(*rm); });
}

void RegisterQuarantine(CLI::App& store, CommandContext& ctx) {
  CLI::App* q = store.add_subcommand(
      "quarantine",
      "Payloads the store found corrupt or could not explain (never reported retained)");
  q->require_subcommand(1);
  auto ls = std::make_shared<StoreFlags>();
  CLI::App* ls_cmd = q->add_subcommand("ls", "List quarantined files and why each is there");
  ls_cmd->add_option("--data", ls->data, "the receiver's data directory")->required();
  ls_cmd->add_flag("--json", ls->json, "print one JSON document");
  ls_cmd->callback([ls, &ctx] { ctx.exit_code = RunQuarantineLs(*ls); });
  auto purge = std::make_shared<StoreFlags>();
  CLI::App* purge_cmd = q->add_subcommand(
      "purge",
      "Delete quarantined files (the named ones, else all); refused (exit 6) while a serve "
      "runs on the directory");
  purge_cmd->add_option("NAME", purge->names, "quarantined file names (default: all)");
  purge_cmd->add_option("--data", purge->data, "the receiver's data directory")->required();
  purge_cmd->callback([purge, &ctx] { ctx.exit_code = RunQuarantinePurge(*purge); });
}

void RegisterStore(CLI::App& app, CommandContext& ctx) {
  CLI::App* store = app.add_subcommand("store", "Offline access to a receiver's data directory");
  store->require_subcommand(1);

  auto ls = std::make_shared<StoreFlags>();
  CLI::App* ls_cmd =
      store->add_subcommand("ls", "List retained deliveries (id, bytes, digest, retention)");
  ls_cmd->add_option("--data", ls->data, "the receiver's data directory")->required();
  ls_cmd->add_flag("--json", ls->json, "print one JSON document");
  ls_cmd->callback([ls, &ctx] { ctx.exit_code = RunLs(*ls); });

  auto cat = std::make_shared<StoreFlags>();
  CLI::App* cat_cmd = store->add_subcommand(
      "cat",
      "Write one retained delivery's bytes to stdout (exit 5 if they do not match its digest)");
  cat_cmd->add_option("ID", cat->id, "delivery id")->required();
  cat_cmd->add_option("--data", cat->data, "the receiver's data directory")->required();
  cat_cmd
      ->add_option("--region", cat->region,
                   "only region K (from 0) of a scatter-gather delivery; the whole delivery "
                   "is still re-hashed")
      ->check(CLI::NonNegativeNumber);
  cat_cmd->callback([cat, &ctx] { ctx.exit_code = RunCat(*cat); });

  auto check = std::make_shared<StoreFlags>();
  CLI::App* check_cmd = store->add_subcommand(
      "check",
      "Re-hash every retained delivery (or only those named) and check its stored receipts "
      "(about this delivery, signatures verify); exit 5 on any mismatch");
  check_cmd->add_option("ID", check->names, "only these deliveries (each must be retained)");
  check_cmd->add_option("--data", check->data, "the receiver's data directory")->required();
  check_cmd->add_flag("--json", check->json, "print one JSON document");
  check_cmd->add_option("--key", check->key,
                        "the issuer's public key (hex): every stored receipt must be signed by it "
                        "(default: by the key it names, the same for all)");
  check_cmd->callback([check, &ctx] { ctx.exit_code = RunCheck(*check); });
  RegisterRm(*store, ctx);
  RegisterQuarantine(*store, ctx);
}

}  // namespace

WRIT_REGISTER_COMMAND(40, RegisterStore);

}  // namespace writ::cli
