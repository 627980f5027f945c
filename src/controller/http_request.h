#pragma once
// HTTP/1.1 requests from bytes, with no socket in sight: the request path behind HttpServer,
// separate so that it can be unit tested and fuzzed (fuzz/http_fuzz.cc). Boost.Beast's request
// parser does the HTTP framing (request line, header fields, Content-Length body); this file adds
// berth's rules on top. It is strict: anything it does not understand is refused with a 4xx/5xx
// reply and the connection is closed, never guessed at.
//
//   - the head (request line + headers) must fit in `max_head_bytes` (431 otherwise);
//   - request line `METHOD SP /origin-form SP HTTP/1.0|HTTP/1.1` (400; 505 for another version);
//   - the path is percent-decoded; a bad escape, an escaped '/', '?', '#' or control character, a
//     raw control character, or a "." / ".." segment is a 400 (so a decoded path never holds a
//     query or a segment separator its sender hid from routing);
//   - query parameters are split on '&' and '=', '+' is a space, then percent-decoded (400 on a
//     bad escape or control character); the first of repeated parameters counts (their names
//     in `repeated_query`: a route may refuse them);
//   - header names are tokens, values have no control characters, no obsolete line folding (400;
//     Beast would unfold it, berth refuses it as before);
//     names are lower-cased, repeated headers joined with ", "; Content-Length must be one
//     decimal number (400), Transfer-Encoding is not supported (411: send Content-Length);
//   - once the head is read, `HeadCheck` (the router) may answer at once (404, 405) and says how
//     large a body the route takes: a larger Content-Length is a 413 without reading the body;
//   - `Expect: 100-continue` asks the caller to send "100 Continue" before the body arrives;
//   - pipelined requests are kept in the buffer and parsed one after the other;
//   - HTTP/1.0, or `Connection: close`, ends the connection after the reply.

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace berth::controller {

struct HttpRequestView {
  std::string method;
  std::string path;                           // decoded path, no query
  std::map<std::string, std::string> query;   // decoded query parameters
  std::map<std::string, std::string> headers; // lower-case names
  std::string body;
  std::string version = "HTTP/1.1";           // HTTP/1.0 or HTTP/1.1
  // Every header field as sent, in order (lower-case names; repeated fields stay apart, where
  // `headers` joins them with ", "): a front proxy's X-Remote-Group holds one group per field.
  std::vector<std::pair<std::string, std::string>> fields;
  // Set by HttpServer on a port that verifies client certificates (HttpServer::SetClientCa): the
  // client presented a certificate that verified against that CA, and its subject's common name.
  bool client_verified = false;
  std::string client_cn;
  // The query parameters given more than once (each name once, in order).
  std::vector<std::string> repeated_query;

  // The values of every field named `lower_name`, in order.
  std::vector<std::string> Values(const std::string& lower_name) const {
    std::vector<std::string> out;
    for (const auto& [n, v] : fields) {
      if (n == lower_name) out.push_back(v);
    }
    return out;
  }

  std::string Header(const std::string& lower_name) const {
    auto it = headers.find(lower_name);
    return it == headers.end() ? std::string() : it->second;
  }
};

struct HttpReply {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
  std::map<std::string, std::string> headers;
};

// What the router says about a request whose head has been read.
struct HeadDecision {
  int status = 0;        // non-zero: answer this at once (and close), e.g. 404 or 405
  std::string message;   // the reply's body for `status`
  std::map<std::string, std::string> headers;  // e.g. Allow for a 405
  size_t max_body = 0;   // the largest body the route reads (a larger one is a 413)
};

using HeadCheck = std::function<HeadDecision(const HttpRequestView& head)>;

class RequestParser {
 public:
  static constexpr size_t kDefaultMaxHead = 16 * 1024;

  struct Step {
    enum Kind {
      kNeedMore,  // read more bytes, then call Next() again
      kRequest,   // a whole request: TakeRequest()
      kReject,    // answer `reject` and close the connection (the stream cannot be trusted further)
    } kind = kNeedMore;
    bool send_continue = false;  // with kNeedMore: write "HTTP/1.1 100 Continue" now
    HttpReply reject;
  };

  explicit RequestParser(HeadCheck check, size_t max_head_bytes = kDefaultMaxHead);
  ~RequestParser();

  void Append(std::string_view bytes) { buffer_.append(bytes.data(), bytes.size()); }
  // Parses as far as the buffered bytes allow. After kReject the parser stays rejected.
  Step Next();
  // The request Next() reported as kRequest; parsing then starts on the bytes after it.
  HttpRequestView TakeRequest();
  // Whether the connection stays open after answering the last request taken.
  bool keep_alive() const { return keep_alive_; }
  // Bytes received and not yet part of a taken request.
  size_t buffered() const { return buffer_.size(); }
  // Whether a request has begun arriving (some bytes of its head are in).
  bool mid_request() const { return !buffer_.empty() || phase_ != Phase::kHead; }

 private:
  enum class Phase { kHead, kBody, kDone, kRejected };
  struct Beast;  // Beast's parser of the current request (kept out of this header: it is large)
  Step Reject(int status, std::string message, std::map<std::string, std::string> headers = {});
  Step Head();

  HeadCheck check_;
  size_t max_head_;
  std::string buffer_;  // bytes not yet consumed by Beast's parser
  Phase phase_ = Phase::kHead;
  size_t scanned_ = 0;  // with kHead: where to resume looking for the end of the head
  bool continue_sent_ = false;
  bool keep_alive_ = true;
  std::unique_ptr<Beast> beast_;
  HttpRequestView current_;
};

// The bytes of `reply` on the wire, written by Beast's serializer: status line, Content-Type,
// Content-Length, the reply's own headers (a header whose name or value could split the response
// is dropped), Connection: close when `close`; the body unless `head_only` (a HEAD request).
std::string SerializeReply(const HttpReply& reply, bool head_only, bool close);

}  // namespace berth::controller
