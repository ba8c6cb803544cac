// The one rule for code that native callers enter from outside any JS call:
// libuv callbacks (fd readiness, handle close), Node's environment cleanup
// hooks, GC finalizers and destructors. Nothing may escape them: a C++
// exception there has no JS frame to turn into and ends in std::terminate
// (abort), and a JS exception left pending makes every later Node-API call
// of the wakeup fail. Every such entry runs its body through NoEscape.
#pragma once

#include <node_api.h>

#include <cstdio>
#include <exception>

namespace rxv {

// What escaped is reported on stderr: it is a bug in rx-verbs or a failing
// environment, and there is no caller left to hand it to.
inline void ReportEscaped(const char* where, const char* what) noexcept {
  fprintf(stderr, "rx-verbs: %s: %s (dropped)\n", where, what ? what : "?");
}

// Clears a JS exception left pending (a failed Node-API call inside the
// body). User code's exceptions never get here: DeliverToJs reports those
// as uncaught exceptions the normal way.
inline void ClearPendingException(napi_env env, const char* where) noexcept {
  bool pending = false;
  if (napi_is_exception_pending(env, &pending) != napi_ok || !pending) return;
  napi_value exc;
  napi_get_and_clear_last_exception(env, &exc);
  ReportEscaped(where, "a JavaScript exception was left pending");
}

// Runs `body` so that nothing escapes. `env` may be null (no JS involved);
// with it, a handle scope is open around the body and its handlers (the
// message of a Napi::Error is read from JS), and a pending JS exception is
// cleared afterwards.
template <typename F>
void NoEscape(napi_env env, const char* where, F&& body) noexcept {
  napi_handle_scope scope = nullptr;
  if (env && napi_open_handle_scope(env, &scope) != napi_ok) scope = nullptr;
  try {
    body();
  } catch (const std::exception& e) {
    ReportEscaped(where, e.what());
  } catch (...) {
    ReportEscaped(where, "an unknown C++ exception");
  }
  if (env) ClearPendingException(env, where);
  if (scope) napi_close_handle_scope(env, scope);
}

}  // namespace rxv
