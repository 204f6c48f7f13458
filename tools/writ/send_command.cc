// writ send: one logical delivery, waiting for the requested rung and retention; several
// files (or a directory) as separate deliveries over one session (send_many.h).
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "command.h"
#include "common/hex.h"
#include "outcome_text.h"
#include "progress_bar.h"
#include "replicated_send.h"
#include "send_many.h"
#include "sender/test_seams.h"
#include "writ/sender.h"
#include "writ/vocabulary.h"

namespace writ::cli {
namespace {

struct SendFlags {
  std::vector<std::string> files;
  uint32_t in_flight = 16;
  std::string to;
  std::string provider;
  std::string id;
  std::string chunk_size = "8MiB";
  std::string rule = "xxh3-128";
  std::string until = "validated";
  std::string retention;
  std::string level = "delivery";
  uint32_t depth = 4;
  uint32_t attempts = 1;
  bool json = false;
  std::string evidence;
  int64_t corrupt_chunk = -1;
  std::string identity;
  std::string source = "auto";
  std::string digest;
  std::string poll = "block";
  bool no_ring = false;
  std::string target;         // --target: an embedded receiver's exposed buffer
  std::string target_offset;  // --target-offset SIZE
  std::string target_pages;   // --target-pages 3,7,9
  bool verbose = false;
  bool progress = false;     // --progress: draw the bar even when stderr is not a terminal
  bool no_progress = false;  // --no-progress: never draw it
  // replicated:K (replicated_send.h)
  std::string cluster;
  std::string replica_retention = "power-loss";
  std::string certificate;
  uint32_t replica_stall_seconds = 10;
};

// "3,7,9": page indices, in delivery order.
Result<std::vector<uint64_t>> ParsePageList(const std::string& text) {
  std::vector<uint64_t> pages;
  size_t at = 0;
  while (at <= text.size()) {
    const size_t comma = std::min(text.find(',', at), text.size());
    const std::string word = text.substr(at, comma - at);
    if (word.empty() || word.find_first_not_of("0123456789") != std::string::npos ||
        word.size() > 19) {
      return Status::InvalidArgument("--target-pages: '" + word +
                                     "' is not a page index (expected e.g. 3,7,9)");
    }
    pages.push_back(std::stoull(word));
    at = comma + 1;
  }
  return pages;
}

// --target, --target-offset, --target-pages (docs/cli.md, "Addressed sends").
Status BuildTarget(const SendFlags& f, SendOptions& o) {
  if (f.target.empty()) {
    if (!f.target_offset.empty() || !f.target_pages.empty()) {
      return Status::InvalidArgument("--target-offset and --target-pages need --target NAME");
    }
    return Status::Ok();
  }
  if (!f.target_offset.empty() && !f.target_pages.empty()) {
    return Status::InvalidArgument("--target-offset and --target-pages: give one, not both");
  }
  o.target = f.target;
  if (!f.target_offset.empty()) {
    auto offset = ParseSize(f.target_offset);
    if (!offset.ok()) return offset.status().Annotate("--target-offset");
    o.target_offset = *offset;
  }
  if (!f.target_pages.empty()) {
    WRIT_ASSIGN_OR_RETURN(o.target_pages, ParsePageList(f.target_pages));
  }
  return Status::Ok();
}

Status BuildOptions(const SendFlags& f, SendOptions& o) {
  if (f.files.size() == 1 && f.files.front() == "-" && f.id.empty())
    return Status::InvalidArgument("sending standard input (-) needs --id");
  if (f.progress && f.no_progress)
    return Status::InvalidArgument("--progress and --no-progress contradict each other");
  o.to = f.to;
  o.provider = f.provider;
  o.id = f.id;
  auto chunk = ParseSize(f.chunk_size);
  if (!chunk.ok()) return chunk.status().Annotate("--chunk-size");
  o.chunk_size = *chunk;
  auto rule = writ::ParseRule(f.rule);
  if (!rule.ok()) return Status::InvalidArgument("--rule: " + rule.status().message());
  o.rule = *rule;
  // `retained`: validated, then retained in the --retention class (volatile by default).
  auto until = writ::ParseRung(f.until == "retained" ? "validated" : f.until);
  if (!until.ok()) {
    return Status::InvalidArgument("--until: " + until.status().message() +
                                   " or retained (validated + the --retention class)");
  }
  o.until = *until;
  if (f.until == "retained") o.retention = RetentionClass::kVolatile;
  if (!f.retention.empty()) {
    auto retention = writ::ParseRetention(f.retention);
    if (!retention.ok())
      return Status::InvalidArgument("--retention: " + retention.status().message());
    o.retention = *retention;
  }
  auto level = ParseCompletionLevel(f.level);
  if (!level.ok()) return Status::InvalidArgument("--level: " + level.status().message());
  o.level = *level;
  if (!f.digest.empty()) {
    auto digest = writ::FromHex(f.digest);
    if (!digest.ok()) return Status::InvalidArgument("--digest: " + digest.status().message());
    if (digest->size() != writ::DigestSize(o.rule)) {
      return Status::InvalidArgument("--digest: " + std::to_string(digest->size()) + " bytes, " +
                                     f.rule + " needs " + std::to_string(writ::DigestSize(o.rule)));
    }
    o.digest = std::move(digest).value();
  }
  o.depth = f.depth;
  o.busy_poll = f.poll == "busy";
  o.ring = !f.no_ring;
  o.identity_dir = f.identity;
  o.max_attempts = f.attempts;
  WRIT_RETURN_IF_ERROR(BuildTarget(f, o));
  if (f.source == "zero-copy") {
    o.source = SourcePath::kZeroCopy;
  } else if (f.source == "staging") {
    o.source = SourcePath::kStaging;
  } else if (f.source != "auto") {
    return Status::InvalidArgument("--source: expected auto, zero-copy or staging");
  }
  return Status::Ok();
}

// How long the send took and how fast the bytes that moved went (WriteRate: over the
// time to the last chunk, the bar's rate too).
struct Timing {
  double elapsed_s = 0;        // start to the last receipt awaited
  double write_s = 0;          // start to the last chunk write's completion
  uint64_t bytes_written = 0;  // by chunk writes that completed
  double rate() const { return WriteRate(bytes_written, write_s); }
};

std::string TimingText(const Timing& t) {
  char seconds[32];
  std::snprintf(seconds, sizeof seconds, "%.3f s", t.elapsed_s);
  if (t.bytes_written == 0) return std::string("no bytes written, ") + seconds + "\n";
  char written[32];
  std::snprintf(written, sizeof written, "%.3f s", t.write_s);
  return "wrote " + HumanBytes(static_cast<double>(t.bytes_written)) + " in " + written + " (" +
         HumanBytes(t.rate()) + "/s); done in " + seconds + "\n";
}

// cli.md's document with the timing added ("fields may be added").
std::string JsonWithTiming(const DeliveryOutcome& outcome, const SendOptions& options,
                           const Timing& t) {
  auto doc = nlohmann::json::parse(OutcomeToJson(outcome, options));
  doc["timing"] = {{"elapsed_s", t.elapsed_s},
                   {"write_s", t.write_s},
                   {"bytes_written", t.bytes_written},
                   {"bytes_per_second", static_cast<uint64_t>(t.rate())}};
  return doc.dump(2);
}

// Nothing happened on the wire and the line (or a file it names) was wrong: stderr only.
bool PrintsNothing(const DeliveryOutcome& o) {
  return ExitCodeFor(o.status) == kExitUsage && o.work_completions.empty() && o.receipts.empty();
}

DeliveryOutcome SendTimed(const SendFlags& flags, const std::string& file, SendOptions& options,
                          Timing& timing) {
  const auto start = ProgressBar::Clock::now();
  auto bar = std::make_shared<ProgressBar>(start);
  const bool draw = !flags.no_progress && (flags.progress || isatty(STDERR_FILENO));
  options.progress = [bar, draw, start, &timing](uint64_t done, uint64_t total) {
    timing.bytes_written = done;
    timing.write_s = std::chrono::duration<double>(ProgressBar::Clock::now() - start).count();
    if (draw) bar->Update(done, total);
  };
  // After the last chunk the bar names what the send waits for, receipt by receipt.
  options.on_receipt = [bar, draw, until = options.until,
                        retention = options.retention](ReceiptRung rung) {
    // `retained` ends the wait (Finish draws "done"); transport and received come before.
    if (draw && (rung == ReceiptRung::kValidated || rung == ReceiptRung::kProcessed)) {
      bar->Phase(PhaseAfterLastChunk(rung, until, retention));
    }
  };
  DeliveryOutcome outcome = flags.corrupt_chunk >= 0
                                ? sender::TestSeams::SendCorrupting(
                                      file, options, static_cast<uint64_t>(flags.corrupt_chunk))
                                : Send(file, options);
  bar->Finish();
  timing.elapsed_s = std::chrono::duration<double>(ProgressBar::Clock::now() - start).count();
  return outcome;
}

// --retention replicated:K: the replica path, with the other flags as for one receiver.
int RunSendReplicated(SendFlags flags) {
  ReplicatedSendRequest req;
  req.retention = flags.retention;
  flags.retention.clear();
  if (Status built = BuildOptions(flags, req.options); !built.ok()) return ReportError(built);
  if (flags.files.size() != 1)
    return ReportError(Status::InvalidArgument(req.retention + " sends one FILE"));
  req.file = flags.files.front();
  req.replica_retention = flags.replica_retention;
  req.cluster = flags.cluster;
  req.to = flags.to;
  req.certificate = flags.certificate;
  req.evidence = flags.evidence;
  req.stall_seconds = flags.replica_stall_seconds;
  req.json = flags.json;
  return RunReplicatedSend(req);
}

int RunSend(const SendFlags& flags) {
  if (!flags.target.empty() &&
      (IsReplicatedRetention(flags.retention) || flags.files.size() != 1)) {
    return ReportError(Status::InvalidArgument(
        "--target names one place in one receiver's buffer: one FILE, not replicated:K"));
  }
  if (IsReplicatedRetention(flags.retention)) return RunSendReplicated(flags);
  if (!flags.cluster.empty())
    return ReportError(Status::InvalidArgument("--cluster needs --retention replicated:K"));
  if (flags.to.empty()) return ReportError(Status::InvalidArgument("--to is required"));
  SendOptions options;
  if (Status built = BuildOptions(flags, options); !built.ok()) return ReportError(built);
  auto paths = ExpandSendPaths(flags.files);
  if (!paths.ok()) return ReportError(paths.status());
  if (flags.files.size() > 1 || paths->size() != 1 || *paths != flags.files) {
    if (!flags.target.empty()) {
      return ReportError(Status::InvalidArgument("--target: a directory is several deliveries"));
    }
    if (!flags.id.empty() || !flags.evidence.empty()) {
      return ReportError(Status::InvalidArgument(
          "--id and --evidence name one delivery; with several files each is named by its file"));
    }
    if (flags.in_flight == 0)
      return ReportError(Status::InvalidArgument("--in-flight: at least 1"));
    return RunSendMany(
        SendManyRequest{*paths, options, flags.in_flight, flags.json, flags.corrupt_chunk});
  }
  Timing timing;
  DeliveryOutcome outcome = SendTimed(flags, flags.files.front(), options, timing);
  if (!outcome.status.ok() && !flags.provider.empty() && outcome.receipts.empty()) {
    if (Status offered = CheckProviderOffered(flags.provider); !offered.ok())
      outcome.status = offered;
  }
  if (PrintsNothing(outcome)) return ReportError(outcome.status);
  if (!flags.evidence.empty()) {
    std::ofstream out(flags.evidence);
    out << OutcomeToEvidenceBundle(outcome) << '\n';
    if (!out) return ReportError(Status::Io("cannot write evidence to " + flags.evidence));
  }
  std::cerr << UnsignedResendNote(outcome, !flags.identity.empty());
  if (flags.json) {
    std::cout << JsonWithTiming(outcome, options, timing) << std::endl;
  } else if (!outcome.delivery.id.empty()) {
    std::cout << OutcomeToText(outcome, flags.verbose) << TimingText(timing);
  }
  if (!outcome.status.ok()) return ReportError(outcome.status);
  return kExitOk;
}

void AddTargetOptions(CLI::App& cmd, SendFlags& f) {
  cmd.add_option("--target", f.target,
                 "deliver into this buffer exposed by an embedded receiver (writ::Receiver::"
                 "Expose); writ serve exposes none");
  cmd.add_option("--target-offset", f.target_offset, "with --target: byte offset in it");
  cmd.add_option("--target-pages", f.target_pages,
                 "with --target: page indices of a paged target, e.g. 3,7,9");
}

void RegisterSend(CLI::App& app, CommandContext& ctx) {
  auto f = std::make_shared<SendFlags>();
  CLI::App* cmd = app.add_subcommand(
      "send",
      "Send FILE (- for stdin) as one logical delivery; several FILEs or a directory as one "
      "delivery each over one session");
  cmd->add_option("FILE", f->files,
                  "file to send, - for standard input; several, or a directory (its regular "
                  "files), are sent as separate deliveries")
      ->required();
  cmd->add_option("--in-flight", f->in_flight,
                  "with several files: deliveries in flight at once (also bounded by the "
                  "receiver)")
      ->capture_default_str();
  cmd->add_option("--to", f->to,
                  "receiver HOST:PORT (with --retention replicated:K: A,B,C, tried in order)");
  cmd->add_option("--cluster", f->cluster,
                  "with --retention replicated:K: etcd client URL; the copies go to the live "
                  "members placed for this delivery id")
      ->group("Replication");
  cmd->add_option("--replica-retention", f->replica_retention,
                  "with replicated:K: the class each copy is retained in")
      ->capture_default_str()
      ->group("Replication");
  cmd->add_option("--certificate", f->certificate,
                  "with replicated:K: write the certificate (K member receipts) to this file")
      ->group("Replication");
  cmd->add_option("--replica-stall-timeout", f->replica_stall_seconds,
                  "with replicated:K: seconds without progress before a replica is replaced")
      ->capture_default_str()
      ->group("Replication");
  cmd->add_option("--provider", f->provider, "libfabric provider; default: the receiver's");
  cmd->add_option("--id", f->id, "delivery id; default: the file's name (required for -)");
  cmd->add_option("--chunk-size", f->chunk_size, "bytes per write")->capture_default_str();
  cmd->add_option("--rule", f->rule,
                  "xxh3-128 | crc32c | sha256 | xxh3-128-tree-1MiB | sha256-tree-1MiB (only the "
                  "sha256 rules resist a hostile sender)")
      ->capture_default_str();
  cmd->add_option("--until", f->until,
                  "transport | received | validated | processed | retained (validated, then "
                  "the --retention class)")
      ->capture_default_str();
  cmd->add_option("--retention", f->retention,
                  "volatile | process-restart | power-loss (default volatile) | replicated:K "
                  "(K copies, with --cluster or --to A,B,C)");
  cmd->add_option("--level", f->level, "completion level: default | inject | transmit | delivery")
      ->capture_default_str();
  cmd->add_option("--depth", f->depth, "chunk writes in flight")->capture_default_str();
  cmd->add_option("--attempts", f->attempts, "attempts per chunk")->capture_default_str();
  cmd->add_option("--poll", f->poll,
                  "block | busy: busy polls completions and the receiver in a loop instead of "
                  "sleeping (lower latency, a core kept busy)")
      ->check(CLI::IsMember({"block", "busy"}))
      ->capture_default_str();
  AddTargetOptions(*cmd, *f);
  cmd->add_flag("--no-ring", f->no_ring,
                "never write into the receiver's standing window: every delivery is announced "
                "and granted");
  cmd->add_flag("--json", f->json, "print one JSON document");
  cmd->add_flag("--verbose", f->verbose, "one line per work completion record");
  cmd->add_flag("--progress", f->progress,
                "draw the progress bar on stderr even when it is not a terminal");
  cmd->add_flag("--no-progress", f->no_progress, "never draw the progress bar");
  cmd->add_option("--evidence", f->evidence, "write a writ.evidence/1 bundle to this file");
  cmd->add_option("--identity", f->identity,
                  "sender identity directory: signs the announce and the transport receipt");
  cmd->add_option("--digest", f->digest,
                  "the file's digest under --rule (hex), when known: announced, and the file is "
                  "not digested again");
  cmd->add_option("--source", f->source,
                  "where writes read from: auto (a file: staging over tcp and shm, its mapping "
                  "where a NIC reads memory) | zero-copy (the file's mapping) | staging (a copy "
                  "per chunk)")
      ->capture_default_str();
  cmd->add_option("--test-corrupt-chunk", f->corrupt_chunk,
                  "fault injection: flip a byte of this chunk after digesting it")
      ->group("");  // hidden: for tests
  cmd->callback([f, &ctx] { ctx.exit_code = RunSend(*f); });
}

}  // namespace

WRIT_REGISTER_COMMAND(20, RegisterSend);

}  // namespace writ::cli
