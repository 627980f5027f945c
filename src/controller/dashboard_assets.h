#pragma once
// The dashboard's files (src/controller/dashboard/*), embedded at build time: name -> content.

#include <map>
#include <string>

namespace berth::controller {

const std::map<std::string, std::string>& DashboardAssets();

}  // namespace berth::controller
