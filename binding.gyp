{
  # The same sources as CMakeLists.txt (cmake-js builds a clone; prebuildify and users without a
  # prebuilt addon build with node-gyp from this file). x86-64 kernels (*_avx512.cc, *_avx2.cc) and
  # aarch64 kernels (*_neon.cc, *_dotprod.cc) are static libraries with their own flags, built only
  # for their target_arch; everything else is portable C++.
  "target_defaults": {
    "cflags_cc!": ["-fno-exceptions", "-std=gnu++14", "-std=gnu++17"],
    "cflags_cc": ["-std=c++17", "-O3", "-fexceptions", "-fno-math-errno"],
    "include_dirs": ["native/core"],
    "defines": ["NAPI_VERSION=8", "NAPI_CPP_EXCEPTIONS", "NODE_ADDON_API_DISABLE_DEPRECATED"]
  },
  "targets": [
    {
      "target_name": "svc_classify",
      "sources": ["<!@(node native/sources.cjs core)", "<!@(node native/sources.cjs bindings)"],
      "include_dirs": ["<!(node -p \"require('node-addon-api').include_dir\")"],
      "libraries": ["-lpthread"],
      "conditions": [
        ["target_arch=='x64'", {"dependencies": ["svc_core_avx512", "svc_core_avx2"]}],
        ["target_arch=='arm64'", {"dependencies": ["svc_core_neon", "svc_core_dotprod"]}]
      ]
    }
  ],
  "conditions": [
    ["target_arch=='x64'", {
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
        }
      ]
    }],
    ["target_arch=='arm64'", {
      "targets": [
        {
          "target_name": "svc_core_neon",
          "type": "static_library",
          "sources": ["<!@(node native/sources.cjs neon)"]
        },
        {
          "target_name": "svc_core_dotprod",
          "type": "static_library",
          "sources": ["<!@(node native/sources.cjs dotprod)"],
          "cflags_cc": ["-march=armv8.2-a+dotprod"]
        }
      ]
    }]
  ]
}
