#include "controller/http_parser.h"

#include <cctype>

namespace berth::controller {

namespace {

constexpr std::string_view kCrlf = "\r\n";

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

int DecodeQuery(std::string_view raw, std::map<std::string, std::string>& out, std::string& message) {
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
    out.emplace(std::move(key), std::move(value));  // the first of repeated parameters counts
  }
  return 0;
}

}  // namespace

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

int ParseRequestHead(std::string_view head, HttpRequestView& out, std::string& message) {
  size_t eol = head.find(kCrlf);
  std::string_view line = head.substr(0, eol);
  std::string_view rest = eol == std::string_view::npos ? std::string_view() : head.substr(eol + 2);

  // Request line: exactly METHOD SP TARGET SP VERSION.
  size_t sp1 = line.find(' ');
  size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp1 == std::string_view::npos || sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos) {
    message = "malformed request line";
    return 400;
  }
  std::string_view method = line.substr(0, sp1);
  std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  std::string_view version = line.substr(sp2 + 1);
  if (!IsToken(method) || method.size() > 32) {
    message = "malformed method";
    return 400;
  }
  if (version != "HTTP/1.1" && version != "HTTP/1.0") {
    if (version.size() == 8 && version.substr(0, 5) == "HTTP/" && std::isdigit(static_cast<unsigned char>(version[5])) &&
        version[6] == '.' && std::isdigit(static_cast<unsigned char>(version[7]))) {
      message = "only HTTP/1.0 and HTTP/1.1 are served";
      return 505;
    }
    message = "malformed HTTP version";
    return 400;
  }
  if (target.empty() || target.front() != '/') {
    message = "the request target must be a path starting with '/'";
    return 400;
  }
  out.method = std::string(method);
  out.version = std::string(version);
  size_t qmark = target.find('?');
  if (int s = DecodePath(target.substr(0, qmark), out.path, message); s != 0) return s;
  if (qmark != std::string_view::npos) {
    std::string_view query = target.substr(qmark + 1);
    for (unsigned char c : query) {
      if (IsControl(c) || c == '#' || c == ' ') {
        message = "the query holds a character that must be escaped";
        return 400;
      }
    }
    if (int s = DecodeQuery(query, out.query, message); s != 0) return s;
  }

  // Header fields.
  while (!rest.empty()) {
    eol = rest.find(kCrlf);
    line = rest.substr(0, eol);
    rest = eol == std::string_view::npos ? std::string_view() : rest.substr(eol + 2);
    if (line.empty()) {
      message = "malformed header section";
      return 400;
    }
    if (line.front() == ' ' || line.front() == '\t') {
      message = "folded header lines are not accepted";
      return 400;
    }
    size_t colon = line.find(':');
    if (colon == std::string_view::npos || !IsToken(line.substr(0, colon))) {
      message = "malformed header field";
      return 400;
    }
    std::string name = Lower(line.substr(0, colon));
    std::string_view value = Trim(line.substr(colon + 1));
    for (unsigned char c : value) {
      if (IsControl(c) && c != '\t') {
        message = "a header value holds a control character";
        return 400;
      }
    }
    auto [it, inserted] = out.headers.emplace(name, std::string(value));
    if (!inserted) {
      if (name == "content-length" || name == "host") {
        if (it->second != value) {
          message = "conflicting " + name + " headers";
          return 400;
        }
      } else {
        it->second += ", ";
        it->second += value;
      }
    }
  }
  if (out.headers.count("transfer-encoding")) {
    message = "Transfer-Encoding is not supported: send the body with Content-Length";
    return 411;
  }
  if (auto it = out.headers.find("content-length"); it != out.headers.end()) {
    const std::string& v = it->second;
    if (v.empty() || v.size() > 15 || v.find_first_not_of("0123456789") != std::string::npos) {
      message = "malformed Content-Length";
      return 400;
    }
  }
  return 0;
}

RequestParser::RequestParser(HeadCheck check, size_t max_head_bytes) : check_(std::move(check)), max_head_(max_head_bytes) {}

RequestParser::Step RequestParser::Reject(int status, std::string message, std::map<std::string, std::string> headers) {
  phase_ = Phase::kRejected;
  keep_alive_ = false;
  Step step;
  step.kind = Step::kReject;
  step.reject = HttpReply{status, "text/plain; charset=utf-8", std::move(message) + "\n", std::move(headers)};
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
    // Empty lines before a request line are ignored (RFC 9112 section 2.2).
    size_t skip = 0;
    while (skip + 1 < buffer_.size() && buffer_[skip] == '\r' && buffer_[skip + 1] == '\n') skip += 2;
    if (skip > 0) {
      buffer_.erase(0, skip);
      scanned_ = 0;
    }
    size_t end = buffer_.find("\r\n\r\n", scanned_);
    if (end == std::string::npos) {
      if (buffer_.size() > max_head_) return Reject(431, "the request head is larger than " + std::to_string(max_head_) + " bytes");
      scanned_ = buffer_.size() >= 3 ? buffer_.size() - 3 : 0;
      return step;
    }
    if (end + 4 > max_head_) return Reject(431, "the request head is larger than " + std::to_string(max_head_) + " bytes");
    current_ = HttpRequestView();
    std::string message;
    if (int status = ParseRequestHead(std::string_view(buffer_).substr(0, end), current_, message); status != 0) {
      return Reject(status, message);
    }
    head_end_ = end + 4;
    scanned_ = 0;
    keep_alive_ = current_.version == "HTTP/1.1" && !HasToken(current_.Header("connection"), "close");
    HeadDecision decision = check_ ? check_(current_) : HeadDecision{};
    if (decision.status != 0) return Reject(decision.status, decision.message, decision.headers);
    std::string cl = current_.Header("content-length");
    body_length_ = cl.empty() ? 0 : static_cast<size_t>(std::stoull(cl));
    if (body_length_ > decision.max_body) {
      return Reject(413, "the request body is larger than " + std::to_string(decision.max_body) + " bytes");
    }
    continue_sent_ = false;
    phase_ = Phase::kBody;
  }
  // Phase::kBody
  if (buffer_.size() - head_end_ < body_length_) {
    if (!continue_sent_ && HasToken(current_.Header("expect"), "100-continue") && current_.version == "HTTP/1.1") {
      continue_sent_ = true;
      step.send_continue = true;
    }
    return step;
  }
  current_.body = buffer_.substr(head_end_, body_length_);
  buffer_.erase(0, head_end_ + body_length_);
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

const char* ReasonPhrase(int status) {
  switch (status) {
    case 100: return "Continue";
    case 200: return "OK";
    case 201: return "Created";
    case 204: return "No Content";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 411: return "Length Required";
    case 413: return "Content Too Large";
    case 422: return "Unprocessable Content";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    case 505: return "HTTP Version Not Supported";
    default: return "Status";
  }
}

std::string SerializeReply(const HttpReply& reply, bool head_only, bool close) {
  int status = reply.status >= 100 && reply.status <= 999 ? reply.status : 500;
  std::string out = "HTTP/1.1 " + std::to_string(status) + " " + ReasonPhrase(status) + "\r\n";
  auto safe = [](std::string_view s) {
    for (unsigned char c : s) {
      if (IsControl(c) && c != '\t') return false;
    }
    return true;
  };
  out += "Content-Type: " + (safe(reply.content_type) ? reply.content_type : std::string("application/octet-stream")) + "\r\n";
  out += "Content-Length: " + std::to_string(reply.body.size()) + "\r\n";
  for (const auto& [name, value] : reply.headers) {
    std::string lower = Lower(name);
    if (!IsToken(name) || !safe(value) || lower == "content-length" || lower == "content-type" || lower == "connection" ||
        lower == "transfer-encoding") {
      continue;
    }
    out += name + ": " + value + "\r\n";
  }
  if (close) out += "Connection: close\r\n";
  out += "\r\n";
  if (!head_only) out += reply.body;
  return out;
}

}  // namespace berth::controller
