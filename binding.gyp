{
  # The same sources as CMakeLists.txt (cmake-js is the default build; this file is for node-gyp users).
  "target_defaults": {
    "cflags_cc!": ["-fno-exceptions", "-std=gnu++14", "-std=gnu++17"],
    "cflags_cc": ["-std=c++17", "-O3", "-fexceptions", "-fno-math-errno"],
    "include_dirs": ["native/core"],
    "defines": ["NAPI_VERSION=8", "NAPI_CPP_EXCEPTIONS", "NODE_ADDON_API_DISABLE_DEPRECATED"]
  },
  "targets": [
    {
      "target_name": "svc_core_avx512",
      "type": "static_library",
      "sources": ["<!@(node native/sources.cjs avx512)"],
      "cflags_cc": ["-mavx512f", "-mavx512bw", "-mavx512dq", "-mavx512vl", "-mavx512vnni", "-mfma", "-mf16c"]
    },
    {
      "target_name": "svc_core_avx2",
      "type": "static_library",
      "sources": ["<!@(node native/sources.cjs avx2)"],
      "cflags_cc": ["-mavx2", "-mfma", "-mf16c"]
    },
    {
      "target_name": "svc_classify",
      "sources": ["<!@(node native/sources.cjs core)", "<!@(node native/sources.cjs bindings)"],
      "include_dirs": ["<!(node -p \"require('node-addon-api').include_dir\")"],
      "dependencies": ["svc_core_avx512", "svc_core_avx2"],
      "libraries": ["-lpthread"]
    }
  ]
}
