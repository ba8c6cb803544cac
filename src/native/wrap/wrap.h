// What every verbs and CM ObjectWrap shares: the type tags that check every
// receiver and wrapped argument (TaggedWrap), and the life of a wrapper
// around one provider object (ProviderWrap): registration with the
// environment's reaper, the factory, an idempotent close and the "closed"
// guard for methods.
#pragma once

#include <napi.h>

#include <cerrno>
#include <cstddef>
#include <exception>
#include <memory>
#include <new>
#include <string>
#include <type_traits>

#include "rules/children.h"
#include "util/closable.h"
#include "util/errors.h"
#include "util/wrap_registry.h"
#include "wrap/addon.h"

namespace rxv {

// Registration with the reaper, under the object's kind (its teardown rank),
// and the closed flag.
class Lifetime : public Closable {
 public:
  Lifetime(Napi::Env env, rules::Kind kind) : addon_(Addon::Get(env)), kind_(kind) {
    addon_->reaper.Add(kind_, this);
  }
  bool closed() const { return closed_; }

 protected:
  // Marks closed and deregisters; returns false if it already was closed.
  bool BeginClose() {
    if (closed_) return false;
    closed_ = true;
    addon_->reaper.Remove(kind_, this);
    return true;
  }
  Addon* addon_;

 private:
  const rules::Kind kind_;
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
  // M: a method of T or of a base of T (ProviderWrap's close, for one).
  template <auto M>
  static Napi::ClassPropertyDescriptor<T> InstanceMethod(
      const char* name, napi_property_attributes attributes = napi_default) {
    napi_property_descriptor d = {};
    d.utf8name = name;
    d.method = &Call<M>;
    d.attributes = attributes;
    d.data = const_cast<char*>(name);
    return Napi::ClassPropertyDescriptor<T>(d);
  }

  template <auto G, auto S = nullptr>
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

  template <auto M>
  static napi_value Call(napi_env env, napi_callback_info cb) {
    return CallbackBody(env, [&]() -> napi_value {
      Napi::CallbackInfo info(env, cb);
      return (Receiver(info)->*M)(info);
    });
  }

  template <auto S>
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

// ---- ProviderWrap: a wrapper's life, written once --------------------------
//
// Every verbs and CM wrapper owns one provider object (P: a Context, Pd, ...,
// cm::Id) and derives from ProviderWrap<Self, P>. Self declares what differs:
//   kClassName, kTypeTag  (TaggedWrap)
//   kKind                 its rules::Kind: the reaper's teardown rank
//   kWhat                 how messages name it ("the queue pair is closed")
//   kMadeBy               what makes one ("pd.createQp()"), for a TypeError
//                         when JS calls the constructor itself
//   kCtor                 the Addon member holding its JS constructor
// and, where it needs them, hooks that hide the defaults below (Self then
// says `friend ProviderWrap;`): Discard, BeforeDestroy, Destroy, watcher,
// Released. Self's constructor is this one (`using ProviderWrap::ProviderWrap;`),
// and its destructor calls CloseQuietly(): only there is all of Self alive.
template <typename Self, typename P>
class ProviderWrap : public TaggedWrap<Self>, public Lifetime {
 public:
  // Takes the provider object from New()'s token and points its `user` at
  // the wrapper (what events carry back).
  explicit ProviderWrap(const Napi::CallbackInfo& info)
      : TaggedWrap<Self>(info), Lifetime(info.Env(), Self::kKind) {
    P* raw = TaggedWrap<Self>::template TakeToken<P>(info);
    if (!raw) {
      BeginClose();
      throw Napi::TypeError::New(info.Env(), std::string(Self::kClassName) +
                                                 " cannot be constructed directly: use " +
                                                 Self::kMadeBy);
    }
    obj_.reset(raw);
    obj_->user = static_cast<Self*>(this);
  }
  ProviderWrap(const ProviderWrap&) = delete;
  ProviderWrap& operator=(const ProviderWrap&) = delete;

  // The provider object, unchecked: nullptr once closed.
  P* native() const { return obj_.get(); }

  // The provider object for `verb`, or EBADF once closed.
  P* Checked(Napi::Env env, const char* verb) const {
    ThrowIfClosed(env, verb);
    return obj_.get();
  }

  // Idempotent. Hooks in order: BeforeDestroy(force) (refusals the provider
  // cannot see; they throw unless forced), then the provider's destroy
  // (Destroy) with the watcher of its descriptor paused, since the
  // descriptor dies with it (resumed if the destroy is refused and not
  // forced). Once closed: the watcher is closed, the provider object
  // released, then Released() unhooks Self from its peers.
  void Close(bool force) final {
    if (closed()) return;
    Self& self = static_cast<Self&>(*this);
    self.BeforeDestroy(force);
    auto watcher = self.watcher();
    constexpr bool kWatched = !std::is_same_v<decltype(watcher), std::nullptr_t>;
    bool was_reading = false;
    if constexpr (kWatched) was_reading = watcher->Pause();
    try {
      self.Destroy(force);
    } catch (const VerbsError&) {
      if (!force) {
        if constexpr (kWatched) {
          if (was_reading) watcher->Resume();
        }
        throw;
      }
    }
    BeginClose();
    if constexpr (kWatched) watcher->Close();
    obj_->user = nullptr;
    obj_.reset();
    self.Released();
  }

 protected:
  // The JS object of a new Self around `obj`, which keeps `parent` (when
  // given) alive. If the object cannot be made, `obj` is released
  // (Self::Discard), so a failure leaks nothing.
  static Napi::Object Wrap(Napi::Env env, std::unique_ptr<P> obj, Napi::Object parent = Napi::Object()) {
    P* raw = obj.release();
    Napi::Object o;
    try {
      o = (Addon::Get(env)->*Self::kCtor).New({TaggedWrap<Self>::MakeToken(env, raw)});
    } catch (...) {
      Self::Discard(raw);
      throw;
    }
    if (!parent.IsEmpty()) SetHidden(o, kParentKey, parent);
    return o;
  }

  // ---- the hooks' defaults
  // Releases an object no wrapper took.
  static void Discard(P* raw) {
    try {
      raw->destroy();
    } catch (...) {
    }
    delete raw;
  }
  void BeforeDestroy(bool force) {}
  void Destroy(bool force) { obj_->destroy(); }
  // The Poller* watching the object's descriptor, if it has one.
  std::nullptr_t watcher() { return nullptr; }
  void Released() {}

  void ThrowIfClosed(Napi::Env env, const char* verb) const {
    if (closed()) {
      throw ErrnoError(env, EBADF, verb, std::string("the ") + Self::kWhat + " is closed");
    }
  }

  // close() and the closed getter, as every wrapper lists them in Init.
  Napi::Value CloseJs(const Napi::CallbackInfo& info) {
    Guard(info.Env(), [&] { Close(false); });
    return info.Env().Undefined();
  }
  Napi::Value Closed(const Napi::CallbackInfo& info) {
    return Napi::Boolean::New(info.Env(), closed());
  }

 private:
  std::unique_ptr<P> obj_;
};

}  // namespace rxv
