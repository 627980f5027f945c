// berth-controller's HTTP request handling without a network: arbitrary bytes go through the
// request parser (src/controller/http_request.h) as one connection would deliver them (all at once,
// and again in chunks whose sizes come from the input), and every request it yields is routed by
// an HttpServer (not started) carrying the probe routes, the dashboard's run API checks
// (src/controller/dashboard_request.h) and the admission webhook (src/controller/admission.h).
// Properties: the chunked and the whole parse yield the same requests and the same refusal; a
// parsed path never holds a '?', '#', '\\', control character or dot segment; a body is never
// larger than its route takes; a refusal is a 4xx/5xx that closes the connection; the dashboard
// lets only Kubernetes names through and only priorities 0-100; an allowed admission review is a
// JSON AdmissionReview answering the request's uid.

#include <cstdint>
#include <string>
#include <vector>

#include "controller/admission.h"
#include "controller/dashboard_request.h"
#include "controller/http_request.h"
#include "controller/http_server.h"
#include "fuzz/fuzz_check.h"
#include "k8s/json.h"

namespace {

using namespace berth::controller;
namespace json = berth::k8s::json;

const HttpServer& Router() {
  static HttpServer* server = [] {
    auto* s = new HttpServer("0");
    auto ok = [](const HttpRequestView&) { return HttpReply{200, "text/plain", "ok\n", {}}; };
    s->Handle("/healthz", ok);
    s->Handle("/readyz", ok);
    s->Handle(
        "/api/runs/",
        [](const HttpRequestView& req) {
          RunRequest run;
          std::string message;
          if (int status = ParseRunRequest(req, run, message); status != 0) {
            FUZZ_CHECK(status >= 400 && status < 500, "run path refused with %d", status);
            return HttpReply{status, "application/json", message, {}};
          }
          FUZZ_CHECK(IsDnsLabel(run.ns) && IsDnsSubdomain(run.name), "invalid names passed: %s/%s", run.ns.c_str(),
                     run.name.c_str());
          FUZZ_CHECK(run.ns.find_first_of("/?#%") == std::string::npos &&
                         run.name.find_first_of("/?#%") == std::string::npos,
                     "a name could change an API path: %s/%s", run.ns.c_str(), run.name.c_str());
          if (run.action == "priority") {
            int64_t priority = -1;
            std::string message2;
            int status = CheckPriorityWrite(req, priority, message2);
            if (status == 0) {
              FUZZ_CHECK(priority >= 0 && priority <= 100, "priority %lld accepted", static_cast<long long>(priority));
              FUZZ_CHECK(req.Header("x-berth-csrf") == "1", "a write without X-Berth-CSRF passed");
            }
            return HttpReply{status == 0 ? 200 : status, "application/json", message2, {}};
          }
          if (run.action == "stop" || run.action == "suspend" || run.action == "resume") {
            std::string message2;
            int status = CheckControlWrite(req, message2);
            if (status == 0) {
              FUZZ_CHECK(req.method == "POST", "a %s by %s passed", run.action.c_str(), req.method.c_str());
              FUZZ_CHECK(req.Header("x-berth-csrf") == "1", "a write without X-Berth-CSRF passed");
            }
            return HttpReply{status == 0 ? 200 : status, "application/json", message2, {}};
          }
          if (run.action == "logs") {
            LogsQuery q;
            std::string message2;
            int status = ParseLogsQuery(req, q, message2);
            if (status == 0) {
              FUZZ_CHECK(q.tail_lines >= 1 && q.tail_lines <= kMaxLogTailLines, "tailLines %d accepted", q.tail_lines);
              FUZZ_CHECK(q.rank >= -1 && q.rank < 10000, "rank %d accepted", q.rank);
            }
            return HttpReply{status == 0 ? 200 : status, "application/json", message2, {}};
          }
          return HttpReply{200, "application/json", "{}", {}};
        },
        RouteOptions{{"GET", "HEAD", "POST"}, kMaxDashboardBodyBytes});
    s->Handle(
        "/mutate-runs",
        [](const HttpRequestView& req) {
          auto review = ReviewRun(req.body);
          if (!review.ok()) return HttpReply{400, "text/plain", review.status().message(), {}};
          auto doc = json::Parse(*review);
          FUZZ_CHECK(doc.ok(), "the review answer is not JSON: %s", review->c_str());
          auto in = json::Parse(req.body);
          FUZZ_CHECK(in.ok(), "a body that is not JSON was reviewed");
          FUZZ_CHECK(json::GetString(json::Find(*doc, {"response", "uid"})) ==
                         json::GetString(json::Find(*in, {"request", "uid"})),
                     "the answer's uid differs from the request's");
          return HttpReply{200, "application/json", *review, {}};
        },
        RouteOptions{{"POST"}, kMaxAdmissionReviewBytes});
    return s;
  }();
  return *server;
}

struct Outcome {
  std::vector<std::string> requests;  // method + path + body of each request
  int refused = 0;                    // the refusal's status, 0 when none
};

void CheckPath(const std::string& path) {
  FUZZ_CHECK(!path.empty() && path[0] == '/', "path without a leading '/'");
  for (unsigned char c : path) {
    FUZZ_CHECK(c >= 0x20 && c != 0x7f && c != '?' && c != '#' && c != '\\', "path holds byte 0x%02x", c);
  }
  FUZZ_CHECK(path.find("/../") == std::string::npos && path.find("/./") == std::string::npos &&
                 !(path.size() >= 3 && path.compare(path.size() - 3, 3, "/..") == 0) &&
                 !(path.size() >= 2 && path.compare(path.size() - 2, 2, "/.") == 0),
             "dot segment in %s", path.c_str());
}

Outcome Drive(std::string_view input, const std::vector<size_t>& chunks) {
  const HttpServer& router = Router();
  RequestParser parser([&router](const HttpRequestView& head) { return router.CheckHead(head); }, 4096);
  Outcome out;
  size_t pos = 0, next_chunk = 0;
  while (true) {
    RequestParser::Step step = parser.Next();
    if (step.kind == RequestParser::Step::kReject) {
      FUZZ_CHECK(step.reject.status >= 400 && step.reject.status < 600, "refused with %d", step.reject.status);
      FUZZ_CHECK(!parser.keep_alive(), "a refusal keeps the connection");
      SerializeReply(step.reject, false, true);
      out.refused = step.reject.status;
      return out;
    }
    if (step.kind == RequestParser::Step::kRequest) {
      HttpRequestView req = parser.TakeRequest();
      CheckPath(req.path);
      FUZZ_CHECK(req.body.size() <= router.CheckHead(req).max_body, "a body above the route's limit was read");
      HttpReply reply = router.Dispatch(req);
      std::string wire = SerializeReply(reply, req.method == "HEAD", !parser.keep_alive());
      FUZZ_CHECK(wire.rfind("HTTP/1.1 ", 0) == 0, "a reply without a status line");
      out.requests.push_back(req.method + " " + req.path + " " + req.body);
      if (!parser.keep_alive()) return out;
      continue;
    }
    if (pos >= input.size()) return out;
    size_t n = chunks.empty() ? input.size() : chunks[next_chunk++ % chunks.size()];
    n = std::min(std::max<size_t>(n, 1), input.size() - pos);
    parser.Append(input.substr(pos, n));
    pos += n;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input = berth::fuzz::AsText(data, size);
  // The first bytes, when present, choose chunk sizes for the second pass.
  std::vector<size_t> chunks;
  for (size_t i = 0; i < std::min<size_t>(size, 4); ++i) chunks.push_back(data[i] % 16 + 1);
  Outcome whole = Drive(input, {});
  Outcome chunked = Drive(input, chunks);
  FUZZ_CHECK(whole.requests == chunked.requests, "chunked parsing yields other requests");
  FUZZ_CHECK(whole.refused == chunked.refused, "chunked parsing refuses with %d, whole with %d", chunked.refused,
             whole.refused);
  return 0;
}
