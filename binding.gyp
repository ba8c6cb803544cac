{
  "variables": {
    "rxv_have_ibverbs%": "<!(sh ./scripts/probe-ibverbs.sh)",
    "rxv_have_rdmacm%": "<!(sh ./scripts/probe-rdmacm.sh)",
    "rxv_sanitize%": "<!(echo ${RXV_SANITIZE:-0})",
    # The benchmark baselines (bench/native) are an opt-in target:
    # RXV_BENCH=1 node-gyp configure build (npm run bench does it).
    "rxv_bench%": "<!(echo ${RXV_BENCH:-0})",
    # The providers and helpers, which know nothing of the JS wrappers: the
    # product addon and the bench addon both link them (rxv_providers).
    "rxv_provider_sources": [
      "src/native/cm/cm_address.cc",
      "src/native/cm/rdmacm/rdmacm_channel.cc",
      "src/native/cm/rdmacm/rdmacm_id.cc",
      "src/native/cm/rdmacm/rdmacm_loader.cc",
      "src/native/cm/soft/soft_cm_addresses.cc",
      "src/native/cm/soft/soft_cm_channel.cc",
      "src/native/cm/soft/soft_cm_id.cc",
      "src/native/cm/soft/soft_cm_timer.cc",
      "src/native/memory/pinned.cc",
      "src/native/provider/ibverbs/ibverbs_borrow.cc",
      "src/native/provider/ibverbs/ibverbs_context.cc",
      "src/native/provider/ibverbs/ibverbs_loader.cc",
      "src/native/provider/ibverbs/ibverbs_objects.cc",
      "src/native/provider/ibverbs/ibverbs_provider.cc",
      "src/native/provider/ibverbs/ibverbs_srq.cc",
      "src/native/provider/ibverbs/ibverbs_ud.cc",
      "src/native/provider/soft/soft_async.cc",
      "src/native/provider/soft/soft_atomic.cc",
      "src/native/provider/soft/soft_channel.cc",
      "src/native/provider/soft/soft_cm_bridge.cc",
      "src/native/provider/soft/soft_context.cc",
      "src/native/provider/soft/soft_cq.cc",
      "src/native/provider/soft/soft_engine.cc",
      "src/native/provider/soft/soft_eventfd.cc",
      "src/native/provider/soft/soft_fabric.cc",
      "src/native/provider/soft/soft_faults.cc",
      "src/native/provider/soft/soft_mr.cc",
      "src/native/provider/soft/soft_pd.cc",
      "src/native/provider/soft/soft_qp.cc",
      "src/native/provider/soft/soft_srq.cc",
      "src/native/provider/soft/soft_ah.cc",
      "src/native/provider/soft/soft_ud.cc",
      "src/native/rules/children.cc",
      "src/native/rules/datagrams.cc",
      "src/native/rules/refusals.cc",
      "src/native/rules/srq.cc",
      "src/native/rules/work_requests.cc",
      "src/native/util/batch_slab.cc",
      "src/native/util/deliver.cc",
      "src/native/util/errors.cc",
      "src/native/util/js_values.cc",
      "src/native/util/wrap_registry.cc"
    ]
  },
  # Compiler and sanitizer settings, written once for every target.
  "target_defaults": {
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
      ["rxv_have_rdmacm==1", { "defines": ["RXV_HAVE_RDMACM=1"] }],
      ["rxv_sanitize==1", {
        # No vptr check: the addon holds V8 backing stores (shared_ptr
        # control blocks made inside node, which is built without RTTI),
        # and UBSan cannot type-check objects that carry no type info.
        "cflags_cc": ["-fsanitize=address,undefined", "-fno-sanitize=vptr", "-fno-omit-frame-pointer", "-O1", "-g"],
        "ldflags": ["-fsanitize=address,undefined"]
      }]
    ]
  },
  "targets": [
    {
      # Compiled once, linked into each addon: each still gets its own copy
      # of the providers' state (a static library is copied in), as the
      # bench baselines need, and a build with the bench compiles the
      # providers once, not twice.
      "target_name": "rxv_providers",
      "type": "static_library",
      "cflags": ["-fPIC"],
      "sources": ["<@(rxv_provider_sources)"]
    },
    {
      "target_name": "rx_verbs",
      "dependencies": ["rxv_providers"],
      "sources": [
        "src/native/addon.cc",
        "src/native/channel.cc",
        "src/native/cm/cm_channel.cc",
        "src/native/cm/cm_id.cc",
        "src/native/cm/cm_js.cc",
        "src/native/context.cc",
        "src/native/cq.cc",
        "src/native/faults.cc",
        "src/native/mr.cc",
        "src/native/pd.cc",
        "src/native/poller.cc",
        "src/native/qp.cc",
        "src/native/srq.cc",
        "src/native/ah.cc",
        "src/native/ud_wrs.cc",
        "src/native/wr_codec.cc"
      ]
    }
  ],
  "conditions": [
    ["rxv_bench==1", {
      "targets": [
        {
          # Its own copy of the providers: the drain, naive and ping
          # baselines open their own soft device; the producer and echo
          # reach the product's objects through their JS wrappers.
          "target_name": "rx_verbs_bench",
          "dependencies": ["rxv_providers"],
          "sources": [
            "bench/native/common.cc",
            "bench/native/drain.cc",
            "bench/native/echo.cc",
            "bench/native/module.cc",
            "bench/native/loop_consumers.cc",
            "bench/native/machine_costs.cc",
            "bench/native/messages.cc",
            "bench/native/ping.cc",
            "bench/native/producer.cc"
          ]
        }
      ]
    }]
  ]
}
