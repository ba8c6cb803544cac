#include "util/deliver.h"

namespace rxv {

bool CanRunJs(napi_env env) {
  // Node-API calls that may run JS refuse (napi_pending_exception) exactly
  // when the environment cannot call into JS. napi_coerce_to_bool is one,
  // and on undefined it runs no JS and allocates nothing: cheap enough to
  // ask on every wakeup.
  napi_handle_scope scope;
  if (napi_open_handle_scope(env, &scope) != napi_ok) return false;
  napi_value undef, falsy;
  bool ok = napi_get_undefined(env, &undef) == napi_ok &&
            napi_coerce_to_bool(env, undef, &falsy) == napi_ok;
  napi_close_handle_scope(env, scope);
  return ok;
}

bool DeliverToJs(napi_env env, napi_async_context async, napi_value recv,
                 napi_value fn, size_t argc, const napi_value* argv) {
  napi_value result;
  napi_status s = napi_make_callback(env, async, recv, fn, argc, argv, &result);
  if (s == napi_ok) return true;
  if (s == napi_pending_exception) {
    napi_value exc;
    if (napi_get_and_clear_last_exception(env, &exc) == napi_ok && CanRunJs(env)) {
      napi_fatal_exception(env, exc);
    }
  }
  return false;
}

}  // namespace rxv
