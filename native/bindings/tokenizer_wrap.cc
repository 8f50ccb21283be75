// Exposes svc::tok::Tokenizer as the addon's `Tokenizer` class. Argument
// checks are the facade's job (src/native/tokenizer.ts); the checks here only
// keep bad calls from crashing the process.
#include <napi.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "errors.h"
#include "tokenizer/tokenizer.h"

namespace svc_bindings {

namespace {

class TokenizerWrap : public Napi::ObjectWrap<TokenizerWrap> {
 public:
  static Napi::Function Define(Napi::Env env) {
    return DefineClass(env, "Tokenizer",
                       {
                           InstanceMethod<&TokenizerWrap::Encode>("encode"),
                           InstanceMethod<&TokenizerWrap::EncodeBatch>("encodeBatch"),
                           InstanceMethod<&TokenizerWrap::TokenId>("tokenId"),
                           InstanceAccessor<&TokenizerWrap::SpecialTokenCount>("specialTokenCount"),
                           InstanceAccessor<&TokenizerWrap::FileMaxLength>("fileMaxLength"),
                       });
  }

  // new Tokenizer(pathToTokenizerJson)
  explicit TokenizerWrap(const Napi::CallbackInfo& info) : Napi::ObjectWrap<TokenizerWrap>(info) {
    if (info.Length() < 1 || !info[0].IsString()) throw Napi::TypeError::New(info.Env(), "path must be a string");
    const std::string path = info[0].As<Napi::String>().Utf8Value();
    tokenizer_ = call_native(info.Env(), [&] { return svc::tok::Tokenizer::from_file(path); });
  }

 private:
  // Reads a JS string as UTF-8 into the reused buffer (lone surrogates become
  // U+FFFD, as in every UTF-8 conversion V8 does).
  std::string_view ReadUtf8(Napi::Env env, napi_value value) {
    if (utf8_.size() < 4096) utf8_.resize(4096);
    size_t copied = 0;
    napi_status status = napi_get_value_string_utf8(env, value, utf8_.data(), utf8_.size(), &copied);
    if (status != napi_ok) throw Napi::Error::New(env, "cannot read a string");
    // A full buffer may mean a cut: V8 stops before a character that does not fit.
    if (copied + 4 >= utf8_.size()) {
      size_t needed = 0;
      napi_get_value_string_utf8(env, value, nullptr, 0, &needed);
      utf8_.resize(needed + 1);
      napi_get_value_string_utf8(env, value, utf8_.data(), utf8_.size(), &copied);
    }
    return std::string_view(utf8_.data(), copied);
  }

  static size_t MaxLength(const Napi::Env& env, const Napi::Value& value) {
    if (!value.IsNumber()) throw Napi::TypeError::New(env, "maxLength must be a number");
    const double v = value.As<Napi::Number>().DoubleValue();
    if (!(v >= 0 && v <= 2147483647.0)) throw Napi::RangeError::New(env, "maxLength is out of range");
    return static_cast<size_t>(v);
  }

  // 'end' (or absent) keeps a long text's first tokens, 'start' its last ones.
  static svc::tok::TruncationSide Side(const Napi::Env& env, const Napi::Value& value) {
    if (value.IsUndefined()) return svc::tok::TruncationSide::kEnd;
    if (value.IsString()) {
      const std::string side = value.As<Napi::String>().Utf8Value();
      if (side == "end") return svc::tok::TruncationSide::kEnd;
      if (side == "start") return svc::tok::TruncationSide::kStart;
    }
    throw Napi::TypeError::New(env, "truncate must be 'end' or 'start'");
  }

  static Napi::Int32Array ToInt32Array(Napi::Env env, const std::vector<int32_t>& values) {
    Napi::Int32Array out = Napi::Int32Array::New(env, values.size());
    if (!values.empty()) std::memcpy(out.Data(), values.data(), values.size() * sizeof(int32_t));
    return out;
  }

  // encode(text, maxLength, truncate?: 'end' | 'start'): Int32Array
  Napi::Value Encode(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    if (info.Length() < 2 || !info[0].IsString()) throw Napi::TypeError::New(env, "text must be a string");
    const size_t max_length = MaxLength(env, info[1]);
    const svc::tok::TruncationSide side = Side(env, info[2]);
    const std::string_view text = ReadUtf8(env, info[0]);
    ids_.clear();
    tokenizer_->encode(text, max_length, scratch_, ids_, nullptr, nullptr, nullptr, side);
    Napi::Int32Array out = ToInt32Array(env, ids_);
    ShrinkIfHuge();
    return out;
  }

  // encodeBatch(texts, maxLength, withOffsets, truncate?): { ids, lengths, truncated, unknown, offsets? }
  // `truncate` is one side for every text ('end' | 'start') or a Uint8Array of one per text (1: 'start').
  Napi::Value EncodeBatch(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    if (info.Length() < 3 || !info[0].IsArray()) throw Napi::TypeError::New(env, "texts must be an array");
    const Napi::Array texts = info[0].As<Napi::Array>();
    const size_t max_length = MaxLength(env, info[1]);
    const bool with_offsets = info[2].ToBoolean().Value();
    const uint32_t count = texts.Length();
    const uint8_t* from_start = nullptr;
    svc::tok::TruncationSide every = svc::tok::TruncationSide::kEnd;
    if (info[3].IsTypedArray() && info[3].As<Napi::TypedArray>().TypedArrayType() == napi_uint8_array) {
      const Napi::Uint8Array sides = info[3].As<Napi::Uint8Array>();
      if (sides.ElementLength() != count) throw Napi::RangeError::New(env, "truncate must hold one side per text");
      from_start = sides.Data();
    } else {
      every = Side(env, info[3]);
    }
    ids_.clear();
    offsets_.clear();
    Napi::Int32Array lengths = Napi::Int32Array::New(env, count);
    int32_t* lengths_data = lengths.Data();
    Napi::Uint8Array truncated = Napi::Uint8Array::New(env, count);
    uint8_t* truncated_data = truncated.Data();
    Napi::Int32Array unknown = Napi::Int32Array::New(env, count);
    int32_t* unknown_data = unknown.Data();
    for (uint32_t i = 0; i < count; ++i) {
      napi_value item;
      // A getter on the array may throw: rethrow its own exception.
      if (napi_get_element(env, texts, i, &item) != napi_ok) throw Napi::Error::New(env);
      napi_valuetype type;
      napi_typeof(env, item, &type);
      if (type != napi_string) throw Napi::TypeError::New(env, "texts[" + std::to_string(i) + "] must be a string");
      const std::string_view text = ReadUtf8(env, item);
      bool cut = false;
      size_t unknown_ids = 0;
      svc::tok::TruncationSide side = every;
      if (from_start != nullptr && from_start[i] != 0) side = svc::tok::TruncationSide::kStart;
      lengths_data[i] = static_cast<int32_t>(tokenizer_->encode(
          text, max_length, scratch_, ids_, with_offsets ? &offsets_ : nullptr, &cut, &unknown_ids, side));
      truncated_data[i] = cut ? 1 : 0;
      unknown_data[i] = static_cast<int32_t>(unknown_ids);
    }
    Napi::Object out = Napi::Object::New(env);
    out.Set("ids", ToInt32Array(env, ids_));
    out.Set("lengths", lengths);
    out.Set("truncated", truncated);
    out.Set("unknown", unknown);
    if (with_offsets) out.Set("offsets", ToInt32Array(env, offsets_));
    ShrinkIfHuge();
    return out;
  }

  Napi::Value TokenId(const Napi::CallbackInfo& info) {
    if (info.Length() < 1 || !info[0].IsString()) throw Napi::TypeError::New(info.Env(), "token must be a string");
    const int32_t id = tokenizer_->token_id(info[0].As<Napi::String>().Utf8Value());
    return id < 0 ? info.Env().Null() : Napi::Number::New(info.Env(), id);
  }

  Napi::Value SpecialTokenCount(const Napi::CallbackInfo& info) {
    return Napi::Number::New(info.Env(), static_cast<double>(tokenizer_->special_token_count()));
  }

  Napi::Value FileMaxLength(const Napi::CallbackInfo& info) {
    return Napi::Number::New(info.Env(), static_cast<double>(tokenizer_->truncation_max_length()));
  }

  // One huge batch should not pin its memory for the object's lifetime.
  void ShrinkIfHuge() {
    constexpr size_t kKeep = 1 << 20;
    if (ids_.capacity() > kKeep) std::vector<int32_t>().swap(ids_);
    if (offsets_.capacity() > 2 * kKeep) std::vector<int32_t>().swap(offsets_);
    if (utf8_.size() > 4 * kKeep) std::vector<char>().swap(utf8_);
    scratch_.word.shrink(4 * kKeep);
  }

  std::shared_ptr<const svc::tok::Tokenizer> tokenizer_;
  svc::tok::EncodeScratch scratch_;
  std::vector<char> utf8_;
  std::vector<int32_t> ids_;
  std::vector<int32_t> offsets_;
};

}  // namespace

void InitTokenizer(Napi::Env env, Napi::Object exports) { exports.Set("Tokenizer", TokenizerWrap::Define(env)); }

}  // namespace svc_bindings
