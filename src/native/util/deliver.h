// Calls from libuv callbacks into JS use raw Node-API with every status
// checked: a worker being terminated makes calls fail at any point, and the
// C++ wrapper would abort the process turning such a failure into an Error.
// Here a failed call just abandons the wakeup.
#pragma once

#include <node_api.h>

#include <cstddef>

namespace rxv {

// Invokes `fn` with `argc` values inside a callback scope (so microtasks and
// async hooks run), as the uv callback's one entry into JS. A JS exception
// is reported like any uncaught one. Returns false if JS could not run.
bool DeliverToJs(napi_env env, napi_async_context async, napi_value recv,
                 napi_value fn, size_t argc, const napi_value* argv);

// Whether this environment can still run JS (false while a worker is being
// terminated or the environment is torn down).
bool CanRunJs(napi_env env);

}  // namespace rxv
