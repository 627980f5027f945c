#pragma once
// A scripted k8s::Transport for the CLI's unit tests: records requests, answers from a queue.

#include <gtest/gtest.h>

#include <deque>
#include <string>
#include <utility>
#include <vector>

#include "k8s/json.h"
#include "k8s/transport.h"

namespace berth::cli::testing {

inline std::string StatusBody(int code, const std::string& reason, const std::string& message) {
  return R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":)" +
         k8s::json::Quote(message) + R"(,"reason":")" + reason + R"(","code":)" + std::to_string(code) + "}";
}

class FakeTransport : public k8s::Transport {
 public:
  std::vector<k8s::HttpRequest> requests;
  std::deque<k8s::Result<k8s::HttpResponse>> answers;

  void Push(int status, std::string body = {}) {
    k8s::HttpResponse r;
    r.status = status;
    r.body = std::move(body);
    answers.emplace_back(std::move(r));
  }
  void PushNoAnswer(const std::string& why) { answers.emplace_back(k8s::Status::Error(why)); }

  k8s::Result<k8s::HttpResponse> Send(const k8s::HttpRequest& req) override {
    requests.push_back(req);
    if (answers.empty()) {
      ADD_FAILURE() << "unscripted request " << req.method << " " << req.path;
      return k8s::Status::Error("unscripted request");
    }
    auto r = std::move(answers.front());
    answers.pop_front();
    return r;
  }

  k8s::Result<k8s::HttpResponse> Stream(const k8s::HttpRequest& req, const std::function<bool(std::string&)>&,
                                        k8s::Cancellation*, int) override {
    ADD_FAILURE() << "unexpected stream " << req.path;
    return k8s::Status::Error("no streams here");
  }
};

}  // namespace berth::cli::testing
