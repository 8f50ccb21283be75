// How every wrapped class (Encoder, Trainer, Tokenizer) turns a failure into a JS error, in one
// place: the caller's mistakes are a TypeError (wrong argument type, typed arrays of the wrong
// element type) or a RangeError (std::invalid_argument / std::out_of_range from the core: bad ids,
// lengths, pair indices); anything else the core throws is an Error with its message, which
// src/errors.ts's callNative turns into SvcError('native_error').
#pragma once

#include <napi.h>

#include <stdexcept>
#include <string>

namespace svc_bindings {

template <typename Fn>
auto call_native(Napi::Env env, Fn&& fn) -> decltype(fn()) {
  try {
    return fn();
  } catch (const std::invalid_argument& e) {
    throw Napi::RangeError::New(env, e.what());
  } catch (const std::out_of_range& e) {
    throw Napi::RangeError::New(env, e.what());
  } catch (const std::exception& e) {
    throw Napi::Error::New(env, e.what());
  }
}

// The one message for a call on a disposed object: "the encoder has been disposed".
inline Napi::Error disposed(Napi::Env env, const char* what) {
  return Napi::Error::New(env, std::string("the ") + what + " has been disposed");
}

namespace detail {
template <typename Array>
struct ElementType;
template <>
struct ElementType<Napi::Int32Array> {
  static constexpr napi_typedarray_type kType = napi_int32_array;
  static constexpr const char* kName = "an Int32Array";
};
template <>
struct ElementType<Napi::Float32Array> {
  static constexpr napi_typedarray_type kType = napi_float32_array;
  static constexpr const char* kName = "a Float32Array";
};
}  // namespace detail

// Argument i as a typed array of exactly the element type Array holds, else a TypeError
// ("ids must be an Int32Array"): a Float64Array is never read as int32.
template <typename Array>
Array typed_array_arg(const Napi::CallbackInfo& info, size_t i, const char* name) {
  using T = detail::ElementType<Array>;
  if (info.Length() <= i || !info[i].IsTypedArray() || info[i].As<Napi::TypedArray>().TypedArrayType() != T::kType)
    throw Napi::TypeError::New(info.Env(), std::string(name) + " must be " + T::kName);
  return info[i].As<Array>();
}

// A number the caller must give (the TypeScript layer fills in every default).
inline double required_number(const Napi::Object& o, const char* key) {
  const Napi::Value v = o.Get(key);
  if (!v.IsNumber()) throw Napi::TypeError::New(o.Env(), std::string("options.") + key + " must be a number");
  return v.As<Napi::Number>().DoubleValue();
}

}  // namespace svc_bindings
