// Per-environment addon state. Each Node environment (main thread or worker)
// that loads the addon gets its own instance, freed by Node with that
// environment, so the addon is safe in worker threads: no static JS handles.
#pragma once

#include <napi.h>

namespace svc_bindings {

struct AddonData {
  // The Adapter class of this environment: Encoder.embed checks that each segment's adapter is one.
  Napi::FunctionReference adapter_constructor;
};

inline AddonData& addon_data(Napi::Env env) { return *env.GetInstanceData<AddonData>(); }

}  // namespace svc_bindings
