#include "controller/http_request.h"

#include <boost/beast/core/buffers_range.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/serializer.hpp>
#include <boost/beast/http/string_body.hpp>

#include <algorithm>
#include <cctype>
#include <limits>
#include <optional>

namespace berth::controller {

namespace {

namespace beast = boost::beast;
namespace http = boost::beast::http;

bool IsTokenChar(unsigned char c) {
  if (std::isalnum(c)) return true;
  switch (c) {
    case '!': case '#': case '$': case '%': case '&': case '\'': case '*': case '+': case '-': case '.':
    case '^': case '_': case '`': case '|': case '~':
      return true;
    default:
      return false;
  }
}

bool IsToken(std::string_view s) {
  if (s.empty()) return false;
  for (unsigned char c : s) {
    if (!IsTokenChar(c)) return false;
  }
  return true;
}

bool IsControl(unsigned char c) { return c < 0x20 || c == 0x7f; }

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Whether a comma-separated header value holds `token` (case-insensitive).
bool HasToken(const std::string& value, std::string_view token) {
  std::string_view rest = value;
  while (!rest.empty()) {
    size_t comma = rest.find(',');
    std::string_view part = Trim(rest.substr(0, comma));
    if (Lower(part) == token) return true;
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return false;
}

bool PercentDecode(std::string_view in, std::string& out, bool plus_is_space);

int DecodePath(std::string_view raw, std::string& out, std::string& message) {
  out.clear();
  for (size_t i = 0; i < raw.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(raw[i]);
    if (c == '%') {
      if (raw.size() - i < 3) {
        message = "malformed percent-escape in the path";
        return 400;
      }
      int hi = HexValue(raw[i + 1]), lo = HexValue(raw[i + 2]);
      if (hi < 0 || lo < 0) {
        message = "malformed percent-escape in the path";
        return 400;
      }
      auto d = static_cast<unsigned char>(hi * 16 + lo);
      if (d == '/' || d == '?' || d == '#' || d == '\\' || IsControl(d)) {
        message = "the path holds an escaped '/', '?', '#', '\\' or control character";
        return 400;
      }
      out += static_cast<char>(d);
      i += 2;
    } else if (IsControl(c) || c == '#' || c == '\\' || c == ' ') {
      message = "the path holds a character that must be escaped";
      return 400;
    } else {
      out += static_cast<char>(c);
    }
  }
  // No "." or ".." segments (raw or escaped): a path means what it says.
  size_t start = 0;
  while (start <= out.size()) {
    size_t slash = out.find('/', start);
    std::string_view seg = std::string_view(out).substr(start, slash == std::string::npos ? std::string::npos : slash - start);
    if (seg == "." || seg == "..") {
      message = "the path holds a \".\" or \"..\" segment";
      return 400;
    }
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  return 0;
}

int DecodeQuery(std::string_view raw, std::map<std::string, std::string>& out, std::vector<std::string>& repeated,
                std::string& message) {
  while (!raw.empty()) {
    size_t amp = raw.find('&');
    std::string_view part = raw.substr(0, amp);
    raw = amp == std::string_view::npos ? std::string_view() : raw.substr(amp + 1);
    if (part.empty()) continue;
    size_t eq = part.find('=');
    std::string key, value;
    if (!PercentDecode(part.substr(0, eq), key, true) ||
        (eq != std::string_view::npos && !PercentDecode(part.substr(eq + 1), value, true))) {
      message = "malformed percent-escape in the query";
      return 400;
    }
    for (unsigned char c : key + value) {
      if (IsControl(c)) {
        message = "the query holds a control character";
        return 400;
      }
    }
    auto [it, added] = out.emplace(std::move(key), std::move(value));  // the first of repeated parameters counts
    if (!added && std::find(repeated.begin(), repeated.end(), it->first) == repeated.end()) repeated.push_back(it->first);
  }
  return 0;
}

bool PercentDecode(std::string_view in, std::string& out, bool plus_is_space) {
  out.clear();
  out.reserve(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    char c = in[i];
    if (c == '%') {
      if (in.size() - i < 3) return false;
      int hi = HexValue(in[i + 1]), lo = HexValue(in[i + 2]);
      if (hi < 0 || lo < 0) return false;
      out += static_cast<char>(hi * 16 + lo);
      i += 2;
    } else if (c == '+' && plus_is_space) {
      out += ' ';
    } else {
      out += c;
    }
  }
  return true;
}


// The status for a request line Beast refused: 505 for a well-formed version other than 1.0/1.1
// (Beast refuses those as it does garbage), 400 for the rest.
int RequestLineStatus(std::string_view buffered) {
  std::string_view line = buffered.substr(0, buffered.find("\r\n"));
  std::string_view version = line.substr(line.rfind(' ') + 1);
  bool versioned = version.size() == 8 && version.substr(0, 5) == "HTTP/" && std::isdigit(static_cast<unsigned char>(version[5])) &&
                   version[6] == '.' && std::isdigit(static_cast<unsigned char>(version[7]));
  return versioned && line.find(' ') != std::string_view::npos ? 505 : 400;
}

// Fills `out` from the head Beast parsed: berth's rules for the target and the fields. Returns 0,
// or the status to refuse the request with and a sentence in `message`.
int TakeHead(const http::request_parser<http::string_body>& parser, HttpRequestView& out, std::string& message) {
  const auto& req = parser.get();
  out.method = std::string(req.method_string());
  out.version = req.version() == 10 ? "HTTP/1.0" : "HTTP/1.1";
  std::string_view target(req.target().data(), req.target().size());
  if (target.empty() || target.front() != '/') {
    message = "the request target must be a path starting with '/'";
    return 400;
  }
  size_t qmark = target.find('?');
  if (int s = DecodePath(target.substr(0, qmark), out.path, message); s != 0) return s;
  if (qmark != std::string_view::npos) {
    std::string_view query = target.substr(qmark + 1);
    if (query.find('#') != std::string_view::npos) {
      message = "the query holds a character that must be escaped";
      return 400;
    }
    if (int s = DecodeQuery(query, out.query, out.repeated_query, message); s != 0) return s;
  }
  for (const auto& field : req) {
    std::string name = Lower(std::string_view(field.name_string().data(), field.name_string().size()));
    std::string value(field.value().data(), field.value().size());
    out.fields.emplace_back(name, value);
    auto [it, inserted] = out.headers.emplace(name, value);
    if (!inserted) {
      if (name == "host" && it->second != value) {
        message = "conflicting host headers";
        return 400;
      }
      if (name != "host" && name != "content-length") it->second += ", " + value;
    }
  }
  if (out.headers.count("transfer-encoding")) {
    message = "Transfer-Encoding is not supported: send the body with Content-Length";
    return 411;
  }
  return 0;
}

}  // namespace

struct RequestParser::Beast {
  http::request_parser<http::string_body> parser;
};

RequestParser::RequestParser(HeadCheck check, size_t max_head_bytes) : check_(std::move(check)), max_head_(max_head_bytes) {}

RequestParser::~RequestParser() = default;

RequestParser::Step RequestParser::Reject(int status, std::string message, std::map<std::string, std::string> headers) {
  phase_ = Phase::kRejected;
  keep_alive_ = false;
  Step step;
  step.kind = Step::kReject;
  step.reject = HttpReply{status, "text/plain; charset=utf-8", std::move(message) + "\n", std::move(headers)};
  return step;
}

RequestParser::Step RequestParser::Head() {
  Step step;
  // Empty lines before a request line are ignored (RFC 9112 section 2.2).
  size_t skip = 0;
  while (skip + 1 < buffer_.size() && buffer_[skip] == '\r' && buffer_[skip + 1] == '\n') skip += 2;
  if (skip > 0) {
    buffer_.erase(0, skip);
    scanned_ = 0;
  }
  // Beast is handed the head whole: fed in pieces, it judges what it has at once but then waits
  // for the end of the head before it looks again, so its verdict would depend on how the bytes
  // were split across reads.
  size_t end = buffer_.find("\r\n\r\n", scanned_);
  if (end == std::string::npos) {
    if (buffer_.size() > max_head_) return Reject(431, "the request head is larger than " + std::to_string(max_head_) + " bytes");
    scanned_ = buffer_.size() >= 3 ? buffer_.size() - 3 : 0;
    return step;
  }
  scanned_ = 0;
  if (end + 4 > max_head_) return Reject(431, "the request head is larger than " + std::to_string(max_head_) + " bytes");
  std::string_view head(buffer_.data(), end + 4);
  // Beast unfolds obs-fold; berth refuses it.
  if (head.find("\r\n ") != std::string_view::npos || head.find("\r\n\t") != std::string_view::npos) {
    return Reject(400, "folded header lines are not accepted");
  }
  beast_ = std::make_unique<Beast>();
  auto& parser = beast_->parser;
  parser.header_limit(static_cast<std::uint32_t>(head.size()));
  // The route's limit is applied once the head is known; until then Beast must not refuse.
  parser.body_limit(std::numeric_limits<std::uint64_t>::max());
  beast::error_code ec;
  size_t used = parser.put(boost::asio::buffer(head.data(), head.size()), ec);
  if (ec || !parser.is_header_done()) {
    if (ec == http::error::bad_version && RequestLineStatus(head) == 505) {
      return Reject(505, "only HTTP/1.0 and HTTP/1.1 are served");
    }
    return Reject(400, "malformed request: " + (ec ? ec.message() : std::string("incomplete head")));
  }
  buffer_.erase(0, used);

  current_ = HttpRequestView();
  std::string message;
  if (int status = TakeHead(parser, current_, message); status != 0) return Reject(status, message);
  keep_alive_ = current_.version == "HTTP/1.1" && parser.keep_alive();
  HeadDecision decision = check_ ? check_(current_) : HeadDecision{};
  if (decision.status != 0) return Reject(decision.status, decision.message, decision.headers);
  uint64_t length = parser.content_length().value_or(0);
  if (length > decision.max_body) {
    return Reject(413, "the request body is larger than " + std::to_string(decision.max_body) + " bytes");
  }
  parser.body_limit(decision.max_body);
  continue_sent_ = false;
  phase_ = Phase::kBody;
  step.kind = Step::kRequest;  // the caller goes on to the body
  return step;
}

RequestParser::Step RequestParser::Next() {
  Step step;
  if (phase_ == Phase::kRejected) return Reject(400, "the connection was refused");
  if (phase_ == Phase::kDone) {
    step.kind = Step::kRequest;
    return step;
  }
  if (phase_ == Phase::kHead) {
    step = Head();
    if (step.kind != Step::kRequest) return step;
    step = Step();
  }
  // Phase::kBody
  auto& parser = beast_->parser;
  if (!parser.is_done() && !buffer_.empty()) {
    beast::error_code ec;
    size_t used = parser.put(boost::asio::buffer(buffer_), ec);
    if (ec && ec != http::error::need_more) return Reject(400, "malformed request body: " + ec.message());
    buffer_.erase(0, used);
  }
  if (!parser.is_done()) {
    if (!continue_sent_ && HasToken(current_.Header("expect"), "100-continue") && current_.version == "HTTP/1.1") {
      continue_sent_ = true;
      step.send_continue = true;
    }
    return step;
  }
  current_.body = std::move(parser.get().body());
  beast_.reset();
  phase_ = Phase::kDone;
  step.kind = Step::kRequest;
  return step;
}

HttpRequestView RequestParser::TakeRequest() {
  HttpRequestView r = std::move(current_);
  current_ = HttpRequestView();
  if (phase_ == Phase::kDone) phase_ = Phase::kHead;
  return r;
}

std::string SerializeReply(const HttpReply& reply, bool head_only, bool close) {
  auto safe = [](std::string_view s) {
    for (unsigned char c : s) {
      if (IsControl(c) && c != '\t') return false;
    }
    return true;
  };
  http::response<http::string_body> res;
  res.version(11);
  res.result(reply.status >= 100 && reply.status <= 999 ? static_cast<unsigned>(reply.status) : 500u);
  res.set(http::field::content_type, safe(reply.content_type) ? reply.content_type : std::string("application/octet-stream"));
  res.content_length(reply.body.size());
  for (const auto& [name, value] : reply.headers) {
    std::string lower = Lower(name);
    if (!IsToken(name) || !safe(value) || lower == "content-length" || lower == "content-type" || lower == "connection" ||
        lower == "transfer-encoding") {
      continue;
    }
    res.insert(name, value);
  }
  if (close) res.set(http::field::connection, "close");
  res.body() = reply.body;

  http::response_serializer<http::string_body> serializer(res);
  serializer.split(head_only);  // HEAD: the header (with the body's length) and no body
  std::string out;
  beast::error_code ec;
  while (!ec && !(head_only ? serializer.is_header_done() : serializer.is_done())) {
    serializer.next(ec, [&](beast::error_code&, const auto& buffers) {
      size_t n = 0;
      for (auto b : beast::buffers_range_ref(buffers)) {
        out.append(static_cast<const char*>(b.data()), b.size());
        n += b.size();
      }
      serializer.consume(n);
    });
  }
  return out;
}

}  // namespace berth::controller
