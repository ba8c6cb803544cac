# The addon's build, read by node-gyp run in this folder (scripts/native/
# build.js, `npm run build:native`); its output goes to src/native/build/.
# Not at the package root: npm 11 takes a binding.gyp there for an install
# script (`node-gyp rebuild`) whatever package.json's gypfile says, and the
# published package runs none (it carries prebuilt binaries).
{
  "variables": {
    "rxv_have_ibverbs%": "<!(sh ../../scripts/probe-ibverbs.sh)",
    "rxv_have_rdmacm%": "<!(sh ../../scripts/probe-rdmacm.sh)",
    "rxv_sanitize%": "<!(echo ${RXV_SANITIZE:-0})",
    # The benchmark baselines (bench/native) are an opt-in target:
    # RXV_BENCH=1 npx node-gyp -C src/native configure build (npm run bench
    # does it).
    "rxv_bench%": "<!(echo ${RXV_BENCH:-0})",
    # The providers and helpers, which know nothing of the JS wrappers: the
    # product addon and the bench addon both link them (rxv_providers).
    "rxv_provider_sources": [
      "cm/cm_address.cc",
      "cm/rdmacm/rdmacm_channel.cc",
      "cm/rdmacm/rdmacm_id.cc",
      "cm/rdmacm/rdmacm_loader.cc",
      "cm/soft/soft_cm_addresses.cc",
      "cm/soft/soft_cm_channel.cc",
      "cm/soft/soft_cm_id.cc",
      "cm/soft/soft_cm_timer.cc",
      "memory/pinned.cc",
      "provider/ibverbs/ibverbs_borrow.cc",
      "provider/ibverbs/ibverbs_channel.cc",
      "provider/ibverbs/ibverbs_context.cc",
      "provider/ibverbs/ibverbs_cq.cc",
      "provider/ibverbs/ibverbs_loader.cc",
      "provider/ibverbs/ibverbs_pd.cc",
      "provider/ibverbs/ibverbs_poll.cc",
      "provider/ibverbs/ibverbs_post.cc",
      "provider/ibverbs/ibverbs_provider.cc",
      "provider/ibverbs/ibverbs_qp.cc",
      "provider/ibverbs/ibverbs_srq.cc",
      "provider/ibverbs/ibverbs_state.cc",
      "provider/ibverbs/ibverbs_ud.cc",
      "provider/soft/soft_async.cc",
      "provider/soft/soft_atomic.cc",
      "provider/soft/soft_channel.cc",
      "provider/soft/soft_cm_bridge.cc",
      "provider/soft/soft_context.cc",
      "provider/soft/soft_cq.cc",
      "provider/soft/soft_engine.cc",
      "provider/soft/soft_eventfd.cc",
      "provider/soft/soft_execute.cc",
      "provider/soft/soft_fabric.cc",
      "provider/soft/soft_faults.cc",
      "provider/soft/soft_memory.cc",
      "provider/soft/soft_mr.cc",
      "provider/soft/soft_pd.cc",
      "provider/soft/soft_qp.cc",
      "provider/soft/soft_srq.cc",
      "provider/soft/soft_ah.cc",
      "provider/soft/soft_ud.cc",
      "rules/children.cc",
      "rules/datagrams.cc",
      "rules/refusals.cc",
      "rules/srq.cc",
      "rules/work_requests.cc",
      "util/batch_slab.cc",
      "util/deliver.cc",
      "util/errors.cc",
      "util/js_values.cc",
      "util/wrap_registry.cc"
    ]
  },
  # Compiler and sanitizer settings, written once for every target.
  "target_defaults": {
    "include_dirs": [
      "<!(node -p \"require('node-addon-api').include_dir\")",
      "."
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
        "wrap/addon.cc",
        "wrap/ah.cc",
        "wrap/channel.cc",
        "wrap/cm_channel.cc",
        "wrap/cm_id.cc",
        "wrap/cm_js.cc",
        "wrap/context.cc",
        "wrap/cq.cc",
        "wrap/faults.cc",
        "wrap/mr.cc",
        "wrap/pd.cc",
        "wrap/poller.cc",
        "wrap/qp.cc",
        "wrap/srq.cc",
        "wrap/ud_wrs.cc",
        "wrap/wr_codec.cc"
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
            # The bench's one door into the product's wrappers.
            "wrap/borrow.cc",
            "../../bench/native/common.cc",
            "../../bench/native/drain.cc",
            "../../bench/native/echo.cc",
            "../../bench/native/module.cc",
            "../../bench/native/loop_consumers.cc",
            "../../bench/native/machine_costs.cc",
            "../../bench/native/messages.cc",
            "../../bench/native/ping.cc",
            "../../bench/native/producer.cc"
          ]
        }
      ]
    }]
  ]
}
