// _writ.Session: one writ::Sender session (a control connection, a fabric connection,
// registered staging) for Python. Bytes move with the GIL released; a buffer is sent from
// the caller's own memory, kept exported for the whole call, never copied here.
#include <pybind11/stl.h>

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <span>
#include <string>
#include <vector>

#include "bindings.h"
#include "completions.h"
#include "exported_buffer.h"
#include "writ/sender.h"
#include "writ/vocabulary.h"

namespace writ::python {
namespace {

std::chrono::milliseconds Milliseconds(double seconds) {
  return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000.0));
}

Status ParseSource(const std::string& name, SourcePath& source) {
  if (name == "auto")
    source = SourcePath::kAuto;
  else if (name == "zero-copy")
    source = SourcePath::kZeroCopy;
  else if (name == "staging")
    source = SourcePath::kStaging;
  else
    return Status::InvalidArgument("source: expected auto, zero-copy or staging");
  return Status::Ok();
}

// What Python's send(...) keywords ask for, checked here once: (code, message, options).
py::tuple MakeDeliveryOptions(const std::string& id, const std::string& until,
                              const std::string& retention, const std::string& rule,
                              uint64_t chunk_size, const std::string& level,
                              const std::string& source, uint32_t max_attempts,
                              double stall_timeout_s, const std::string& target,
                              uint64_t target_offset, std::vector<uint64_t> target_pages) {
  DeliveryOptions o;
  o.target = target;
  o.target_offset = target_offset;
  o.target_pages = std::move(target_pages);
  o.id = id;
  o.chunk_size = chunk_size;
  o.max_attempts = max_attempts;
  o.stall_timeout = Milliseconds(stall_timeout_s);
  auto parsed_rule = ParseRule(rule);
  if (!parsed_rule.ok()) return Answer(parsed_rule.status().Annotate("rule"));
  o.rule = *parsed_rule;
  auto parsed_until = ParseRung(until);
  if (!parsed_until.ok()) return Answer(parsed_until.status().Annotate("until"));
  o.until = *parsed_until;
  if (!retention.empty()) {
    auto parsed = ParseRetention(retention);
    if (!parsed.ok()) return Answer(parsed.status().Annotate("retention"));
    o.retention = *parsed;
  }
  auto parsed_level = ParseCompletionLevel(level);
  if (!parsed_level.ok()) return Answer(parsed_level.status().Annotate("level"));
  o.level = *parsed_level;
  if (Status s = ParseSource(source, o.source); !s.ok()) return Answer(s);
  return Answer(Status::Ok(), py::cast(std::move(o)));
}

// One session: concurrent send() calls on it are in flight together (writ::Sender takes
// deliveries from several threads); close() waits for the sends under way.
class Session {
 public:
  explicit Session(std::unique_ptr<Sender> sender)
      : completions_(std::make_unique<Completions>()), sender_(std::move(sender)) {}
  ~Session() {
    py::gil_scoped_release nogil;
    (void)CloseLocked();
    completions_.reset();  // its threads may take the GIL: joined without it
  }

  // (code, message, outcome JSON): the outcome is there on failure too, as far as it got.
  py::tuple SendBuffer(const py::object& obj, const DeliveryOptions& options) {
    ExportedBuffer buffer(obj, ExportedBuffer::Access::kRead);
    if (!buffer.ok()) {
      return Answer(Status::InvalidArgument("send: bytes, a path or " + buffer.error()));
    }
    return Finished(Deliver([&](Sender& s) { return s.SendBytes(buffer.bytes(), options); }),
                    options);
  }

  py::tuple SendPath(const std::string& path, const DeliveryOptions& options) {
    return Finished(Deliver([&](Sender& s) { return s.Send(path, options); }), options);
  }

  // (code, message, None): submits one buffer (SubmitBytes) or, given a list or tuple, the
  // buffers as the regions of one scatter-gather delivery (SubmitRegions); returns at once.
  // `on_done(code, message, outcome_json)` is called once the delivery ended, on another
  // thread; every buffer stays exported until then.
  py::tuple Submit(const py::object& objs, const DeliveryOptions& options, py::object on_done) {
    auto pending = std::make_unique<Pending>();
    pending->options = options;
    pending->on_done = std::move(on_done);
    const bool as_regions = py::isinstance<py::list>(objs) || py::isinstance<py::tuple>(objs);
    if (Status s = Export(objs, as_regions, *pending); !s.ok()) return Answer(s);
    {
      py::gil_scoped_release nogil;
      std::shared_lock lock(mutex_);
      if (!sender_) return Answer(Status::InvalidArgument("this Sender is closed"));
      pending->handle = as_regions ? sender_->SubmitRegions(pending->regions, options)
                                   : sender_->SubmitBytes(pending->buffers[0]->bytes(), options);
    }
    completions_->Add(std::move(pending));
    return Answer(Status::Ok());
  }

  py::tuple SubmitPath(const std::string& path, const DeliveryOptions& options,
                       py::object on_done) {
    auto pending = std::make_unique<Pending>();
    pending->options = options;
    pending->on_done = std::move(on_done);
    {
      py::gil_scoped_release nogil;
      std::shared_lock lock(mutex_);
      if (!sender_) return Answer(Status::InvalidArgument("this Sender is closed"));
      pending->handle = sender_->Submit(path, options);
    }
    completions_->Add(std::move(pending));
    return Answer(Status::Ok());
  }

  uint32_t max_in_flight() {
    py::gil_scoped_release nogil;
    std::shared_lock lock(mutex_);
    return sender_ ? sender_->max_in_flight() : 0;
  }

  py::tuple Close() {
    Status closed;
    {
      py::gil_scoped_release nogil;
      closed = CloseLocked();
    }
    return Answer(closed);
  }

  bool usable() {
    py::gil_scoped_release nogil;  // a send on another thread may hold the session
    std::shared_lock lock(mutex_);
    return sender_ && sender_->usable();
  }

 private:
  DeliveryOutcome Deliver(const std::function<DeliveryOutcome(Sender&)>& send) {
    py::gil_scoped_release nogil;
    std::shared_lock lock(mutex_);
    if (!sender_) {
      DeliveryOutcome closed;
      closed.status = Status::InvalidArgument("this Sender is closed");
      return closed;
    }
    return send(*sender_);
  }

  // Exports `objs` (one buffer, or each item of a list) into `pending`, read-only.
  static Status Export(const py::object& objs, bool as_regions, Pending& pending) {
    const auto items =
        as_regions ? objs.cast<py::sequence>() : py::make_tuple(objs).cast<py::sequence>();
    pending.buffers.reserve(items.size());
    for (size_t i = 0; i < items.size(); ++i) {
      auto buffer = std::make_unique<ExportedBuffer>(items[i], ExportedBuffer::Access::kRead);
      if (!buffer->ok()) {
        return Status::InvalidArgument(
            (as_regions ? "send: block " + std::to_string(i) + ": " : std::string("send: ")) +
            "bytes or " + buffer->error());
      }
      pending.regions.push_back(Region{buffer->bytes().data(), buffer->bytes().size()});
      pending.buffers.push_back(std::move(buffer));
    }
    return Status::Ok();
  }

  static py::tuple Finished(const DeliveryOutcome& outcome, const DeliveryOptions& options) {
    return py::make_tuple(std::string(ErrorCodeName(outcome.status.code())),
                          outcome.status.message(), OutcomeToCompactJson(outcome, options));
  }

  // Without the GIL: every delivery in flight fails, and Python is told of each.
  Status CloseLocked() {
    Status closed;
    {
      std::unique_lock lock(mutex_);
      if (sender_) closed = sender_->Close();
      sender_.reset();
    }
    completions_->Close();
    return closed;
  }

  std::unique_ptr<Completions> completions_;  // closed after the sender
  std::shared_mutex mutex_;                   // sends share it; close takes it alone
  std::unique_ptr<Sender> sender_;            // null once closed
};

py::tuple Connect(const std::string& to, const std::string& provider, const std::string& identity,
                  uint32_t depth, double connect_timeout_s, uint32_t in_flight, bool ring) {
  SessionOptions options;
  options.max_in_flight = in_flight;
  options.ring = ring;
  options.to = to;
  options.provider = provider;
  options.identity_dir = identity;
  options.depth = depth;
  options.connect_timeout = Milliseconds(connect_timeout_s);
  Result<std::unique_ptr<Sender>> sender = [&] {
    py::gil_scoped_release nogil;
    return Sender::Connect(options);
  }();
  if (!sender.ok()) return Answer(sender.status());
  return Answer(Status::Ok(), py::cast(std::make_unique<Session>(std::move(*sender))));
}

}  // namespace

void BindSender(py::module_& m) {
  py::class_<DeliveryOptions>(m, "DeliveryOptions");
  m.def("delivery_options", &MakeDeliveryOptions, py::arg("id"), py::arg("until"),
        py::arg("retention"), py::arg("rule"), py::arg("chunk_size"), py::arg("level"),
        py::arg("source"), py::arg("max_attempts"), py::arg("stall_timeout"),
        py::arg("target") = "", py::arg("target_offset") = 0,
        py::arg("target_pages") = std::vector<uint64_t>{});
  py::class_<Session>(m, "Session")
      .def("send_buffer", &Session::SendBuffer)
      .def("send_path", &Session::SendPath)
      .def("submit", &Session::Submit, py::arg("objs"), py::arg("options"), py::arg("on_done"))
      .def("submit_path", &Session::SubmitPath, py::arg("path"), py::arg("options"),
           py::arg("on_done"))
      .def_property_readonly("max_in_flight", &Session::max_in_flight)
      .def("close", &Session::Close)
      .def_property_readonly("usable", &Session::usable);
  m.def("connect", &Connect, py::arg("to"), py::arg("provider"), py::arg("identity"),
        py::arg("depth"), py::arg("connect_timeout"), py::arg("in_flight"), py::arg("ring"));
}

}  // namespace writ::python
