#include "cli/usage_view.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <vector>

#include "cli/format.h"
#include "k8s/json.h"

namespace berth::cli {

namespace json = k8s::json;

namespace {

std::string Hours(double h) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", h);
  return buf;
}

double Number(const json::Value& v, std::string_view key) {
  const json::Value* n = json::Find(v, {key});
  return n != nullptr && n->IsNumber() ? n->GetDouble() : 0;
}

}  // namespace

k8s::Result<std::string> FormatUsage(const std::string& body) {
  auto doc = json::Parse(body);
  if (!doc.ok() || !doc->IsObject() || json::GetString(json::Find(*doc, {"kind"})) != "Usage") {
    return k8s::Status::Error("the queue API's usage answer is not a Usage object");
  }
  const json::Value* rows = json::Find(*doc, {"rows"});
  if (rows == nullptr || !rows->IsArray()) return k8s::Status::Error("the queue API's usage answer has no rows");
  bool weighted = false;
  for (const auto& r : rows->GetArray()) {
    weighted = weighted || std::abs(Number(r, "weightedGpuHours") - Number(r, "gpuHours")) >= 0.05;
  }
  std::string key = json::GetString(json::Find(*doc, {"by"}));
  std::transform(key.begin(), key.end(), key.begin(), [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  std::vector<std::string> header = {key.empty() ? std::string("NAME") : key, "GPU-HOURS"};
  if (weighted) header.push_back("WEIGHTED");
  for (const char* h : {"SHARE", "CPU-HOURS", "MEMORY-GIB-HOURS"}) header.push_back(h);
  Table table(header);
  for (const auto& r : rows->GetArray()) {
    char share[16];
    std::snprintf(share, sizeof share, "%.1f%%", 100 * Number(r, "share"));
    std::vector<std::string> row = {json::GetString(json::Find(r, {"name"})), Hours(Number(r, "gpuHours"))};
    if (weighted) row.push_back(Hours(Number(r, "weightedGpuHours")));
    row.push_back(share);
    row.push_back(Hours(Number(r, "cpuHours")));
    row.push_back(Hours(Number(r, "memoryGiBHours")));
    table.AddRow(std::move(row));
  }
  const std::string window = json::GetString(json::Find(*doc, {"from"})) + " to " + json::GetString(json::Find(*doc, {"to"}));
  if (table.rows() == 0) return "No usage recorded from " + window + " (UTC days).\n";
  return table.Render() + "(UTC days " + window + ")\n";
}

}  // namespace berth::cli
