// What every verbs ObjectWrap shares: registration with the environment's
// reaper, an idempotent close, the "closed" guard for methods, and the type
// tags that check every receiver and wrapped argument (TaggedWrap).
#pragma once

#include <napi.h>

#include <cerrno>
#include <exception>
#include <new>
#include <string>

#include "wrap/addon.h"
#include "util/closable.h"
#include "util/errors.h"
#include "util/wrap_registry.h"

namespace rxv {

class Lifetime : public Closable {
 public:
  explicit Lifetime(Napi::Env env) : addon_(Addon::Get(env)) {
    addon_->reaper.Add(this);
  }
  bool closed() const { return closed_; }

 protected:
  // Marks closed and deregisters; returns false if it already was closed.
  bool BeginClose() {
    if (closed_) return false;
    closed_ = true;
    addon_->reaper.Remove(this);
    return true;
  }
  void ThrowIfClosed(Napi::Env env, const char* what) const {
    if (closed_) {
      throw ErrnoError(env, EBADF, what, std::string("the ") + kind() +
                                             " is closed");
    }
  }
  virtual const char* kind() const = 0;
  Addon* addon_;

 private:
  bool closed_ = false;
};

// A child keeps its parents alive through hidden (non-enumerable, read-only)
// properties on its JS object, not persistent references: the GC then sees
// the edges and can still collect a whole unreachable family (persistent
// references would be roots and leak every cycle through JS).
inline void SetHidden(Napi::Object self, const char* key, Napi::Value v) {
  self.DefineProperty(Napi::PropertyDescriptor::Value(key, v, napi_default));
}
inline Napi::Value GetHidden(Napi::Object self, const char* key) {
  return self.Get(key);
}
constexpr const char* kParentKey = "__rxvParent";

// ---- Type tags: the receiver and argument rule, written once -------------
//
// napi_define_class checks the receiver of methods but not of accessors, and
// ObjectWrap::Unwrap casts whatever object it is given. So every verbs wrap
// derives from TaggedWrap<T> instead of Napi::ObjectWrap<T>:
// - its constructor tags the new JS object with T::kTypeTag (one distinct
//   128-bit napi_type_tag per class, declared next to T::kClassName) and
//   registers the native object with the same tag in the wrap registry,
//   which its destructor leaves;
// - InstanceMethod / InstanceAccessor below hide ObjectWrap's of the same
//   names, so every method, getter and setter a class lists in Init checks
//   its receiver before using it (a wrong receiver is a TypeError);
// - Unwrap (hiding ObjectWrap's too) and UnwrapArg accept only objects whose
//   wrapped pointer is a live object registered with T's tag; no JS runs
//   during the check (unlike instanceof, which walks prototypes through
//   Proxy traps and Symbol.hasInstance), and it costs one private-symbol
//   lookup (the wrap), where reading the JS object's tag would cost a second;
// - MakeToken / TakeToken carry the provider object from New() to the
//   constructor in an External tagged for T only, so `new binding.Cq(x)`
//   with any other External is a TypeError, not a cast.
// Every callback also turns a stray C++ exception into a JS error: nothing
// thrown natively may reach Node-API's noexcept boundary.

// The tag of the construction token of a class with tag `t`.
inline napi_type_tag TokenTag(const napi_type_tag& t) {
  return napi_type_tag{t.lower ^ 0x746f6b656e746f6bull, t.upper};
}

inline bool HasTag(napi_env env, napi_value v, const napi_type_tag& tag) {
  napi_valuetype type;
  if (napi_typeof(env, v, &type) != napi_ok) return false;
  if (type != napi_object && type != napi_function && type != napi_external) return false;
  bool ok = false;
  return napi_check_object_type_tag(env, v, &tag, &ok) == napi_ok && ok;
}

// Runs a native callback body, converting anything C++ throws into a JS
// exception (returns nullptr then).
template <typename F>
napi_value CallbackBody(napi_env env, F&& body) {
  try {
    return body();
  } catch (const Napi::Error& e) {
    e.ThrowAsJavaScriptException();
  } catch (const VerbsError& e) {
    FromVerbsError(env, e).ThrowAsJavaScriptException();
  } catch (const rules::OverAck& e) {
    Napi::RangeError::New(env, e.what()).ThrowAsJavaScriptException();
  } catch (const std::bad_alloc&) {
    ErrnoError(env, ENOMEM, "malloc", "out of memory").ThrowAsJavaScriptException();
  } catch (const std::exception& e) {
    Napi::Error::New(env, std::string("rx-verbs: internal error: ") + e.what())
        .ThrowAsJavaScriptException();
  }
  return nullptr;
}

template <typename T>
class TaggedWrap : public Napi::ObjectWrap<T> {
 public:
  using Method = Napi::Value (T::*)(const Napi::CallbackInfo&);
  using Setter = void (T::*)(const Napi::CallbackInfo&, const Napi::Value&);

  explicit TaggedWrap(const Napi::CallbackInfo& info) : Napi::ObjectWrap<T>(info) {
    napi_status st = napi_type_tag_object(info.Env(), info.This(), &T::kTypeTag);
    if (st != napi_ok) {
      throw Napi::TypeError::New(info.Env(), std::string(T::kClassName) +
                                                 " cannot be constructed on this object");
    }
    wrap_registry::Add(registered_, T::kTypeTag);
  }
  ~TaggedWrap() { wrap_registry::Remove(registered_); }

  // The native object behind `v`, or nullptr when `v` is not a live T's wrapper.
  static T* FromValue(napi_env env, napi_value v) {
    void* p = nullptr;
    if (napi_unwrap(env, v, &p) != napi_ok || !wrap_registry::Holds(p, T::kTypeTag)) return nullptr;
    return static_cast<T*>(p);
  }

  // Checked unwrap (hides ObjectWrap::Unwrap, a plain cast).
  static T* Unwrap(Napi::Object o) {
    T* w = FromValue(o.Env(), o);
    if (!w) {
      throw Napi::TypeError::New(o.Env(), std::string("not a ") + T::kClassName + " object");
    }
    return w;
  }

  // `name` must be a string literal: the callback keeps it for its messages.
  template <Method M>
  static Napi::ClassPropertyDescriptor<T> InstanceMethod(
      const char* name, napi_property_attributes attributes = napi_default) {
    napi_property_descriptor d = {};
    d.utf8name = name;
    d.method = &Call<M>;
    d.attributes = attributes;
    d.data = const_cast<char*>(name);
    return Napi::ClassPropertyDescriptor<T>(d);
  }

  template <Method G, Setter S = nullptr>
  static Napi::ClassPropertyDescriptor<T> InstanceAccessor(
      const char* name, napi_property_attributes attributes = napi_default) {
    napi_property_descriptor d = {};
    d.utf8name = name;
    d.getter = &Call<G>;
    if constexpr (S != nullptr) d.setter = &CallSetter<S>;
    d.attributes = attributes;
    d.data = const_cast<char*>(name);
    return Napi::ClassPropertyDescriptor<T>(d);
  }

  // The token New() passes to the constructor (see TakeToken).
  template <typename P>
  static Napi::External<P> MakeToken(Napi::Env env, P* raw) {
    Napi::External<P> ext = Napi::External<P>::New(env, raw);
    napi_type_tag tag = TokenTag(T::kTypeTag);
    if (napi_type_tag_object(env, ext, &tag) != napi_ok) {
      throw Napi::Error::New(env, "rx-verbs: could not tag a construction token");
    }
    return ext;
  }

  // The provider object New() handed the constructor, or nullptr when the
  // constructor was called from JS (with anything at all).
  template <typename P>
  static P* TakeToken(const Napi::CallbackInfo& info) {
    if (info.Length() != 1) return nullptr;
    napi_type_tag tag = TokenTag(T::kTypeTag);
    if (!HasTag(info.Env(), info[0], tag)) return nullptr;
    return info[0].As<Napi::External<P>>().Data();
  }

 private:
  // ObjectWrap wrapped this object's address as a T* (what napi_unwrap gives).
  const void* const registered_ = static_cast<T*>(this);

  static T* Receiver(const Napi::CallbackInfo& info) {
    T* self = FromValue(info.Env(), info.This());
    if (!self) {
      throw Napi::TypeError::New(
          info.Env(), std::string(T::kClassName) + "." + static_cast<const char*>(info.Data()) +
                          " called on an object that is not a " + T::kClassName);
    }
    return self;
  }

  template <Method M>
  static napi_value Call(napi_env env, napi_callback_info cb) {
    return CallbackBody(env, [&]() -> napi_value {
      Napi::CallbackInfo info(env, cb);
      return (Receiver(info)->*M)(info);
    });
  }

  template <Setter S>
  static napi_value CallSetter(napi_env env, napi_callback_info cb) {
    return CallbackBody(env, [&]() -> napi_value {
      Napi::CallbackInfo info(env, cb);
      (Receiver(info)->*S)(info, info[0]);
      return nullptr;
    });
  }
};

// A wrap passed as an argument (`what` names it in the TypeError). The
// returned wrapper lives as long as the call (its JS object is an argument),
// but the provider object behind it may be closed by any JS that runs later:
// take that (Checked) only after every argument has been read.
template <typename W>
W* UnwrapArg(Napi::Env env, Napi::Value v, const char* what) {
  W* w = W::FromValue(env, v);
  if (!w) {
    throw Napi::TypeError::New(env, std::string(what) + " must be a " +
                                        W::kClassName + " object");
  }
  return w;
}
// The older form (the constructor is no longer needed: the tag decides).
template <typename W>
W* UnwrapArg(Napi::Env env, Napi::Value v, const Napi::FunctionReference&,
             const char* what) {
  return UnwrapArg<W>(env, v, what);
}

}  // namespace rxv
