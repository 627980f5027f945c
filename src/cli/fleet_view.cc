#include "cli/fleet_view.h"

#include "cli/format.h"

namespace berth::cli {

namespace json = k8s::json;

FleetSummary DecodeFleetSummary(const json::Value& fleet) {
  FleetSummary f;
  f.name = json::GetString(json::Find(fleet, {"metadata", "name"}));
  if (const json::Value* spec = json::Find(fleet, {"spec"}); spec != nullptr && spec->IsObject()) {
    f.placement = json::GetString(*spec, "placement");
    if (const json::Value* b = json::Find(*spec, {"blocks"}); b != nullptr) {
      if (b->IsString()) f.blocks = b->GetString();
      if (b->IsInt64()) f.blocks = std::to_string(b->GetInt64());
    }
    if (const json::Value* m = json::Find(*spec, {"maxRunsPerInstance"}); m != nullptr && m->IsInt64()) {
      f.max_runs = m->GetInt64();
    }
    f.instance_lifetime = json::GetString(*spec, "instanceLifetime");
  }
  const json::Value* status = json::Find(fleet, {"status"});
  if (status == nullptr || !status->IsObject()) return f;
  f.has_status = true;
  f.total_instances = json::GetInt(*status, "totalInstances");
  f.ready_instances = json::GetInt(*status, "readyInstances");
  f.total_blocks = json::GetInt(*status, "totalBlocks");
  f.busy_blocks = json::GetInt(*status, "busyBlocks");
  if (const json::Value* list = json::Find(*status, {"instances"}); list != nullptr && list->IsArray()) {
    for (const auto& v : list->GetArray()) {
      if (!v.IsObject()) continue;
      FleetInstance i;
      i.node = json::GetString(v, "node");
      i.total_blocks = json::GetInt(v, "totalBlocks");
      i.busy_blocks = json::GetInt(v, "busyBlocks");
      i.runs_started = json::GetInt(v, "runsStarted");
      i.expires_at = json::GetString(v, "expiresAt");
      i.state = json::GetString(v, "state");
      i.message = json::GetString(v, "message");
      i.held_by_others = json::GetString(v, "heldByOtherPods");
      f.instances.push_back(std::move(i));
    }
  }
  if (const json::Value* list = json::Find(*status, {"conditions"}); list != nullptr && list->IsArray()) {
    for (const auto& v : list->GetArray()) {
      if (!v.IsObject()) continue;
      f.conditions.push_back({json::GetString(v, "type"), json::GetString(v, "status"), json::GetString(v, "reason"),
                              json::GetString(v, "message")});
    }
  }
  return f;
}

namespace {

std::string Plural(int64_t n, const std::string& word) { return std::to_string(n) + " " + word + (n == 1 ? "" : "s"); }

std::string Title(const FleetSummary& f) {
  std::string t = f.name + "   ";
  if (!f.has_status) return t + "no status yet (is the berth controller running?)";
  t += Plural(f.total_instances, "instance") + " (" + std::to_string(f.ready_instances) + " ready), " +
       std::to_string(f.busy_blocks) + "/" + std::to_string(f.total_blocks) + " blocks busy";
  if (!f.placement.empty()) t += ", placement " + f.placement;
  if (f.max_runs) t += ", max " + Plural(*f.max_runs, "run") + " per instance";
  if (!f.instance_lifetime.empty()) t += ", lifetime " + f.instance_lifetime;
  return t;
}

bool Troubled(const FleetCondition& c) {
  if (c.type == "Ready") return c.status != "True";
  if (c.type == "Conflict") return c.status == "True";
  return false;
}

}  // namespace

std::string FormatFleets(const std::vector<FleetSummary>& fleets, k8s::TimePoint now, bool wide) {
  std::string out;
  for (size_t n = 0; n < fleets.size(); ++n) {
    const FleetSummary& f = fleets[n];
    if (n > 0) out += "\n";
    out += Title(f) + "\n";
    for (const auto& c : f.conditions) {
      if (!Troubled(c)) continue;
      out += "  ! " + c.type + "=" + c.status + (c.reason.empty() ? "" : " " + c.reason) +
             (c.message.empty() ? "" : ": " + c.message) + "\n";
    }
    if (!f.has_status) continue;
    if (f.instances.empty()) {
      out += "  (no instances: no Node matches the fleet's nodeSelector)\n";
      continue;
    }
    std::vector<std::string> header = {"INSTANCE", "BLOCKS", "RUNS", "EXPIRES", "STATE"};
    if (wide) header.insert(header.end(), {"OTHER PODS", "MESSAGE"});
    Table t(std::move(header));
    for (const auto& i : f.instances) {
      std::string runs = std::to_string(i.runs_started);
      if (f.max_runs) runs += "/" + std::to_string(*f.max_runs);
      std::vector<std::string> row = {i.node, BlockBar(i.busy_blocks, i.total_blocks), runs,
                                      RelativeExpiry(i.expires_at, now), i.state.empty() ? "-" : i.state};
      if (wide) {
        row.push_back(i.held_by_others.empty() ? "-" : i.held_by_others);
        row.push_back(i.message.empty() ? "-" : i.message);
      }
      t.AddRow(std::move(row));
    }
    out += t.Render("  ");
  }
  return out;
}

}  // namespace berth::cli
