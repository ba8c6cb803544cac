{
  "variables": {
    "rxv_have_ibverbs%": "<!(sh ./scripts/probe-ibverbs.sh)",
    "rxv_sanitize%": "<!(echo ${RXV_SANITIZE:-0})"
  },
  "targets": [
    {
      "target_name": "rx_verbs",
      "sources": [
        "<!@(sh ./scripts/native-sources.sh)"
      ],
      "include_dirs": [
        "<!(node -p \"require('node-addon-api').include_dir\")",
        "src/native"
      ],
      "defines": ["NAPI_VERSION=8", "NAPI_CPP_EXCEPTIONS", "NODE_ADDON_API_DISABLE_DEPRECATED", "NODE_API_SWALLOW_UNTHROWABLE_EXCEPTIONS"],
      "cflags!": ["-fno-exceptions"],
      "cflags_cc!": ["-fno-exceptions", "-fno-rtti"],
      "cflags_cc": ["-std=c++17", "-fexceptions", "-Wall", "-Wextra", "-Wno-unused-parameter", "-fvisibility=hidden"],
      "libraries": ["-ldl", "-lpthread"],
      "conditions": [
        ["rxv_have_ibverbs==1", { "defines": ["RXV_HAVE_IBVERBS=1"] }],
        ["rxv_sanitize==1", {
          # No vptr check: the addon holds V8 backing stores (shared_ptr
          # control blocks made inside node, which is built without RTTI),
          # and UBSan cannot type-check objects that carry no type info.
          "cflags_cc": ["-fsanitize=address,undefined", "-fno-sanitize=vptr", "-fno-omit-frame-pointer", "-O1", "-g"],
          "ldflags": ["-fsanitize=address,undefined"]
        }]
      ]
    }
  ]
}
