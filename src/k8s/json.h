#pragma once
// Small RapidJSON helpers used by the codecs. Reading never throws: a missing or mistyped field
// reads as the given default.

#include <cstdint>
#include <string>
#include <string_view>

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "k8s/result.h"

namespace berth::k8s::json {

using Value = rapidjson::Value;
using Document = rapidjson::Document;

// How deep arrays and objects may nest in a parsed document. Kubernetes objects nest a few dozen
// levels at most; a deeper document (e.g. a megabyte of `[` sent to the dashboard or the webhook)
// is refused before RapidJSON sees it. Parsing is iterative (kParseIterativeFlag), and freeing a
// Document is not recursive (its MemoryPoolAllocator frees nothing per value), so no JSON text
// can exhaust the stack; the cap also keeps the recursive Serialize and deep copies safe.
inline constexpr int kMaxDepth = 128;

// No cap on nesting: for list pages and watch events from the API server, which hold objects
// other users wrote (a Run's template keeps unknown fields, and the API server stores a Run nested
// 200 levels deep). Each object is then checked with DeeperThan before anything recursive (a
// decoder's deep copy, Serialize) touches it: one object berth cannot read must not make the
// whole page or stream unreadable (issue 29).
inline constexpr int kNoDepthCap = 0;

// Parses `text`; a syntax error (or nesting deeper than `max_depth`, kNoDepthCap: no cap) becomes
// a Status naming the offset.
Result<Document> Parse(std::string_view text, int max_depth = kMaxDepth);
// Parses in place: `buffer` is modified and must outlive the document (no copies of strings).
Status ParseInSitu(std::string& buffer, Document& out, int max_depth = kMaxDepth);
// True when `v` nests arrays/objects more than `max_depth` levels deep (`v` itself is level 1
// when it is an array or object). Iterative (no recursion, whatever the depth); stops early.
bool DeeperThan(const Value& v, int max_depth = kMaxDepth);
// The offset at which `text` first nests deeper than `max_depth` arrays/objects (brackets inside
// strings do not count), or npos. Linear, no recursion; does not validate the rest.
size_t FindTooDeep(std::string_view text, int max_depth = kMaxDepth);

std::string Serialize(const Value& v);

// Member lookup by path of keys; nullptr when any step is missing or not an object.
const Value* Find(const Value& v, std::initializer_list<std::string_view> path);

std::string GetString(const Value& v, std::string_view key, std::string_view def = {});
// An integer, or a number with a fraction truncated toward zero; `def` when the number does not
// fit int64.
int64_t GetInt(const Value& v, std::string_view key, int64_t def = 0);
bool GetBool(const Value& v, std::string_view key, bool def = false);
std::string GetString(const Value* v, std::string_view def = {});

// Escapes `s` as a JSON string literal including the quotes.
std::string Quote(std::string_view s);

}  // namespace berth::k8s::json
