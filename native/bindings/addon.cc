// The addon's export list, and nothing else: each *_wrap.cc registers its own exports.
#include <napi.h>

#include "addon_data.h"

namespace svc_bindings {
void InitSystem(Napi::Env env, Napi::Object exports);
void InitEncoder(Napi::Env env, Napi::Object exports);
void InitTokenizer(Napi::Env env, Napi::Object exports);
}  // namespace svc_bindings

static Napi::Object Init(Napi::Env env, Napi::Object exports) {
  env.SetInstanceData(new svc_bindings::AddonData());
  svc_bindings::InitSystem(env, exports);
  svc_bindings::InitEncoder(env, exports);
  svc_bindings::InitTokenizer(env, exports);
  return exports;
}

NODE_API_MODULE(svc_classify, Init)
