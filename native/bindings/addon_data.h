// Per-environment addon state. Each Node environment (main thread or worker)
// that loads the addon gets its own instance, freed by Node with that
// environment, so the addon is safe in worker threads: no static JS handles.
#pragma once

#include <napi.h>

#include <string>
#include <unordered_map>

namespace svc_bindings {

struct AddonData {
  // Class constructors by export name, for wraps that create instances of other wraps.
  std::unordered_map<std::string, Napi::FunctionReference> constructors;
};

inline AddonData& addon_data(Napi::Env env) { return *env.GetInstanceData<AddonData>(); }

}  // namespace svc_bindings
