#include "cli/manifests.h"

#include <cctype>
#include <cstdio>

namespace berth::cli {
namespace {

using k8s::Status;

bool IsPlain(const YAML::Node& n) { return n.Tag() == "?"; }

// A plain scalar that can be written back as is in block context.
bool SafePlain(const std::string& s) {
  if (s.empty() || s.front() == ' ' || s.back() == ' ') return false;
  for (char c : s) {
    if (c == '\n' || c == '\r' || c == '\t') return false;
  }
  return s.find(": ") == std::string::npos && s.find(" #") == std::string::npos && s.back() != ':';
}

std::string DoubleQuoted(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (c < 0x20 || c == 0x7f) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\x%02x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

// A string that every YAML reader (1.1 or 1.2) resolves to the same string when written plain:
// starts with a letter, has only letters, digits, '_', '-', '.', and is no boolean or null word.
bool PlainIsString(const std::string& s) {
  if (s.empty() || !std::isalpha(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.') return false;
  }
  static const char* const kWords[] = {"y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO",
                                       "true", "True", "TRUE", "false", "False", "FALSE", "on", "On", "ON",
                                       "off", "Off", "OFF", "null", "Null", "NULL"};
  for (const char* w : kWords) {
    if (s == w) return false;
  }
  return true;
}

std::string TagText(const std::string& tag) {
  static const std::string kCore = "tag:yaml.org,2002:";
  if (tag.rfind(kCore, 0) == 0) return "!!" + tag.substr(kCore.size());
  if (!tag.empty() && tag[0] == '!') return tag;
  return "!<" + tag + ">";
}

// A scalar or null as one line of YAML.
std::string ScalarText(const YAML::Node& n) {
  if (n.IsNull()) return "null";
  const std::string& v = n.Scalar();
  const std::string& tag = n.Tag();
  if (tag == "?") return SafePlain(v) ? v : DoubleQuoted(v);
  if (tag.empty() || tag == "!") return PlainIsString(v) ? v : DoubleQuoted(v);
  return TagText(tag) + " " + (SafePlain(v) ? v : DoubleQuoted(v));
}

bool IsEmptyCollection(const YAML::Node& n) { return (n.IsMap() || n.IsSequence()) && n.size() == 0; }

bool MeaningfulTag(const YAML::Node& n) {
  const std::string& t = n.Tag();
  return !t.empty() && t != "?" && t != "!";
}

Status EmitBlock(const YAML::Node& n, int indent, std::string& out);

// The value after "key:" or "-": inline for scalars and empty collections, else on its own lines.
Status EmitValue(const YAML::Node& v, int indent, const std::string& lead, bool dash, std::string& out) {
  if (!v.IsDefined() || v.IsNull() || v.IsScalar()) {
    out += lead + " " + (v.IsDefined() ? ScalarText(v) : "null") + "\n";
    return Status();
  }
  if (MeaningfulTag(v)) return Status::Error("tagged mappings and sequences (" + v.Tag() + ") are not supported");
  if (IsEmptyCollection(v)) {
    out += lead + (v.IsMap() ? " {}\n" : " []\n");
    return Status();
  }
  if (!dash) {
    out += lead + "\n";
    return EmitBlock(v, indent + 2, out);
  }
  // "- " followed by the first line of the nested block, the rest indented under it.
  std::string nested;
  Status s = EmitBlock(v, indent + 2, nested);
  if (!s.ok()) return s;
  out += lead + " " + nested.substr(static_cast<size_t>(indent + 2));
  return Status();
}

Status EmitBlock(const YAML::Node& n, int indent, std::string& out) {
  const std::string pad(static_cast<size_t>(indent), ' ');
  if (n.IsMap()) {
    for (const auto& kv : n) {
      const YAML::Node k = kv.first;
      const YAML::Node v = kv.second;
      if (!(k.IsScalar() || k.IsNull())) return Status::Error("mapping keys that are not scalars are not supported");
      Status s = EmitValue(v, indent, pad + ScalarText(k) + ":", false, out);
      if (!s.ok()) return s;
    }
    return Status();
  }
  if (n.IsSequence()) {
    for (const auto& item : n) {
      Status s = EmitValue(item, indent, pad + "-", true, out);
      if (!s.ok()) return s;
    }
    return Status();
  }
  out += pad + ScalarText(n) + "\n";
  return Status();
}

// Read-only lookup that never inserts: an undefined node when `n` is not a mapping or has no `key`.
YAML::Node Child(const YAML::Node& n, const char* key) {
  if (!n.IsDefined() || !n.IsMap()) return YAML::Node(YAML::NodeType::Undefined);
  const YAML::Node v = n[key];  // const lookup
  if (!v.IsDefined()) return YAML::Node(YAML::NodeType::Undefined);
  return v;
}

std::string Str(const YAML::Node& n) { return n.IsDefined() && n.IsScalar() ? n.Scalar() : std::string(); }

bool IsRun(const YAML::Node& obj) {
  return Str(Child(obj, "kind")) == "Run" && Str(Child(obj, "apiVersion")).rfind("berth.dev/", 0) == 0;
}

YAML::Node QuotedString(const std::string& value) {
  YAML::Node n(value);
  n.SetTag("!");
  return n;
}

// maxDuration / retry.duration written as a bare off reach kubectl as false: send "off".
void DefuseOff(const YAML::Node& parent, const char* key) {
  YAML::Node v = Child(parent, key);
  if (v.IsDefined() && v.IsScalar() && IsPlain(v) && IsYaml11False(v.Scalar())) {
    v = std::string("off");
    v.SetTag("!");
  }
}

bool Missing(const YAML::Node& n) { return !n.IsDefined() || n.IsNull(); }

RunQueueing TurnOnQueueing(YAML::Node run) {
  RunQueueing q;
  const YAML::Node meta = Child(run, "metadata");
  q.name = Str(Child(meta, "name"));
  if (q.name.empty()) q.name = Str(Child(meta, "generateName")) + "*";
  if (Missing(Child(run, "spec"))) run["spec"] = YAML::Node(YAML::NodeType::Map);
  YAML::Node spec = Child(run, "spec");
  if (!spec.IsMap()) return q;
  if (Missing(Child(spec, "retry"))) spec["retry"] = YAML::Node(YAML::NodeType::Map);
  YAML::Node retry = Child(spec, "retry");
  if (!retry.IsMap()) return q;
  if (Missing(Child(retry, "onEvents"))) {
    YAML::Node events(YAML::NodeType::Sequence);
    events.push_back(QuotedString("no-capacity"));
    retry["onEvents"] = events;
  }
  if (Missing(Child(retry, "duration"))) retry["duration"] = QuotedString("off");
  const YAML::Node events = Child(retry, "onEvents");
  if (events.IsSequence()) {
    for (const auto& e : events) {
      const std::string ev = Str(e);
      q.on_events += (q.on_events.empty() ? "" : ", ") + ev;
      if (ev == "no-capacity") q.queued = true;
    }
  }
  q.duration = Str(Child(retry, "duration"));
  return q;
}

Status Prepare(const YAML::Node& obj, bool queueing, PreparedManifests& out) {
  const YAML::Node items = Child(obj, "items");
  if (Str(Child(obj, "kind")) == "List" && items.IsSequence()) {
    for (const auto& item : items) {
      if (!item.IsMap()) return Status::Error("an item of a List is not a mapping");
      Status s = Prepare(item, queueing, out);
      if (!s.ok()) return s;
    }
    return Status();
  }
  if (!IsRun(obj)) return Status();
  const YAML::Node spec = Child(obj, "spec");
  DefuseOff(spec, "maxDuration");
  DefuseOff(Child(spec, "retry"), "duration");
  const YAML::Node meta = Child(obj, "metadata");
  if (const std::string name = Str(Child(meta, "name")); !name.empty()) {
    out.named_runs.push_back({Str(Child(meta, "namespace")), name});
  }
  if (queueing) out.runs.push_back(TurnOnQueueing(obj));
  return Status();
}

}  // namespace

bool IsYaml11False(const std::string& plain) {
  static const char* const kFalse[] = {"n", "N", "no", "No", "NO", "off", "Off", "OFF", "false", "False", "FALSE"};
  for (const char* f : kFalse) {
    if (plain == f) return true;
  }
  return false;
}

k8s::Result<std::string> EmitYaml(const YAML::Node& doc) {
  std::string out;
  Status s = EmitBlock(doc, 0, out);
  if (!s.ok()) return s;
  return out;
}

k8s::Result<PreparedManifests> PrepareManifests(std::string_view text, const std::string& source, bool queueing) {
  std::vector<YAML::Node> docs;
  try {
    docs = YAML::LoadAll(std::string(text));
  } catch (const YAML::Exception& e) {
    std::string where = source;
    if (!e.mark.is_null()) {
      where += ": line " + std::to_string(e.mark.line + 1) + ", column " + std::to_string(e.mark.column + 1);
    }
    return Status::Error(where + ": invalid YAML: " + e.msg);
  }
  PreparedManifests out;
  int index = 0;
  for (auto& doc : docs) {
    ++index;
    if (doc.IsNull()) continue;
    if (!doc.IsMap()) {
      return Status::Error(source + ": document " + std::to_string(index) +
                           " is not a mapping (a manifest is an object with apiVersion and kind)");
    }
    Status s = Prepare(doc, queueing, out);
    if (!s.ok()) return Status::Error(source + ": document " + std::to_string(index) + ": " + s.message());
    auto text_doc = EmitYaml(doc);
    if (!text_doc.ok()) {
      return Status::Error(source + ": document " + std::to_string(index) + ": " + text_doc.status().message());
    }
    if (out.documents > 0) out.yaml += "---\n";
    out.yaml += *text_doc;
    ++out.documents;
  }
  return out;
}

}  // namespace berth::cli
