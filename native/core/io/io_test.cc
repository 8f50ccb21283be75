// Standalone test of the model-file readers, without Node (also the target of sanitizer builds):
//   cmake -S . -B build-native -DSVC_NATIVE_TESTS=ON && cmake --build build-native -j2 && build-native/io_test
// Each hostile input must be refused with its message; nothing may read or write out of bounds.
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "io/config.h"
#include "test_check.h"
#include "io/json.h"
#include "io/safetensors.h"

namespace {

using svc::test::check;
using svc::test::failures;

// The message fn throws, or "" when it does not throw.
std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const svc::json::Error& e) {
    return e.what();
  }
  return "";
}

void expect_error(const std::function<void()>& fn, const std::string& message) {
  const std::string got = error_of(fn);
  check(got == message, "expected '" + message + "', got '" + got + "'");
}

const std::string kDir = "/tmp/svc-io-test-" + std::to_string(::getpid());

std::string write_file(const std::string& name, const std::string& bytes) {
  const std::string path = kDir + "-" + name;
  std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return path;
}

// A safetensors file from header text and data, with an optional header length of its own.
std::string safetensors(const std::string& name, const std::string& header, const std::string& data,
                        uint64_t length = UINT64_MAX) {
  if (length == UINT64_MAX) length = header.size();
  std::string bytes(8, '\0');
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>(length >> (8 * i));
  return write_file(name, bytes + header + data);
}

void json_tests() {
  using svc::json::parse;
  const svc::json::Value doc = parse(R"({"a": [1, -2.5e1, true, null, -0], "b": "x\u00e9\ud83d\ude00", "c": "é"})");
  check(doc.find("a")->items()[1].as_number() == -25.0, "json numbers");
  check(doc.find("b")->as_string() == "x\xc3\xa9\xf0\x9f\x98\x80", "json unicode escapes");
  check(doc.find("c")->as_string() == "\xc3\xa9", "json raw UTF-8");
  expect_error([] { parse(R"({"a": 1, "a": 2})"); }, "invalid JSON at byte 15: duplicate member 'a'");
  expect_error([] { parse(std::string(66, '[') + std::string(66, ']')); },
               "invalid JSON at byte 65: nested deeper than 64 levels");
  expect_error([] { parse("\"\xc0\xaf\""); }, "invalid JSON at byte 1: invalid UTF-8");
  expect_error([] { parse("\"\xed\xa0\x80\""); }, "invalid JSON at byte 1: invalid UTF-8");
  expect_error([] { parse("\"\xf4\x90\x80\x80\""); }, "invalid JSON at byte 1: invalid UTF-8");
  expect_error([] { parse("\"\xe2\x82\""); }, "invalid JSON at byte 1: invalid UTF-8");
  expect_error([] { parse(R"("\udc00")"); }, "invalid JSON at byte 7: lone low surrogate in a \\u escape");
  expect_error([] { parse("012"); }, "invalid JSON at byte 1: leading zero in a number");
  expect_error([] { parse("1."); }, "invalid JSON at byte 2: expected a digit");
  expect_error([] { parse("-"); }, "invalid JSON at byte 1: expected a digit");
  expect_error([] { parse("-1e400"); }, "invalid JSON at byte 0: number out of range");
  expect_error([] { parse("[1,]"); }, "invalid JSON at byte 3: unexpected character");
  expect_error([] { parse("\"a\tb\""); }, "invalid JSON at byte 3: control character in a string");
  expect_error([] { parse("{} x"); }, "invalid JSON at byte 3: unexpected text after the document");
  expect_error([] { parse("[1, 2, 3]", {4, 64}); }, "invalid JSON: 9 bytes is more than the limit of 4");
  const std::string weird = std::string("q\"\\\n\x01 \xc3\xa9", 8);
  check(parse(svc::json::quote(weird)).as_string() == weird, "quote round trip");
  int64_t n = 0;
  check(svc::json::integer_in(parse("9007199254740992"), 0, INT64_MAX, &n) && n == 9007199254740992, "2^53 is exact");
  check(!svc::json::integer_in(parse("9007199254740994"), 0, INT64_MAX, &n), "past 2^53 is refused");
  check(!svc::json::integer_in(parse("1.5"), 0, 10, &n) && !svc::json::integer_in(parse("-1"), 0, 10, &n),
        "fraction, range");
}

void safetensors_tests() {
  using svc::io::SafeTensorsFile;
  // Round trip through the writer.
  std::map<std::string, svc::io::StoredTensor> tensors;
  const float values[6] = {1, -2, 0.5f, 65504, 0, -0.25f};
  tensors["a\"b"] = svc::io::f16_tensor({2, 3}, values);
  tensors["c"] = svc::io::f16_tensor({1}, values + 2);
  const std::string path = kDir + "-round.safetensors";
  svc::io::write_safetensors(path, tensors);
  const SafeTensorsFile file(path);
  const svc::AlignedBuffer<float> a = file.read_f32("a\"b", {2, 3});
  check(std::memcmp(a.data(), values, sizeof values) == 0, "safetensors round trip");
  expect_error([&] { file.read_f32("c", {2}); }, path + ": tensor 'c' has shape [1], the config needs [2]");
  check(svc::io::read_all(path).at("c").to_f32() == std::vector<float>{0.5f}, "read_all");

  const std::string data(16, '\0');
  auto refused = [&](const std::string& header, const std::string& message, uint64_t length = UINT64_MAX) {
    const std::string p = safetensors("bad.safetensors", header, data, length);
    expect_error([&] { SafeTensorsFile f(p); }, p + ": " + message);
  };
  refused(
      R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"y":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
      "tensor 'y' overlaps tensor 'x'");
  refused(R"({"x":{"dtype":"F32","shape":[4],"data_offsets":[8,24]}})",
          "tensor 'x' has data_offsets [8, 24) past the end of the data (16 bytes)");
  refused(R"({"x":{"dtype":"F32","shape":[4],"data_offsets":[16,0]}})",
          "tensor 'x' has data_offsets that end before they begin");
  refused(R"({"x":{"dtype":"F32","shape":[3],"data_offsets":[0,16]}})",
          "tensor 'x' has 16 bytes, not the [3] F32 its shape needs");
  refused(R"({"x":{"dtype":"F32","shape":[4611686018427387904],"data_offsets":[0,16]}})",
          "tensor 'x' has a shape entry that is not a non-negative integer");
  refused(R"({"x":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,16]}})",
          "tensor 'x' has a shape too large");
  refused(R"({"x":{"dtype":"Q4","shape":[4],"data_offsets":[0,16]}})", "tensor 'x' has an unknown dtype");
  refused(R"({"x":{"dtype":"F32","shape":[4],"data_offsets":[-0.5,16]}})",
          "tensor 'x' has data_offsets that are not two non-negative integers");
  refused(R"({"x":{"dtype":"F32","shape":[4]}})", "tensor 'x' lacks dtype, shape or data_offsets");
  refused(R"([])", "header is not a JSON object");
  const std::string header = R"({"x":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})";
  const std::string total = std::to_string(8 + header.size() + data.size());
  refused(header,
          "header length " + std::to_string(header.size() + 17) + " is beyond the file (" + total +
              " bytes) or the 100 MiB limit",
          header.size() + 17);
  refused(header, "header length 1099511627776 is beyond the file (" + total + " bytes) or the 100 MiB limit",
          uint64_t{1} << 40);
}

void config_tests() {
  const std::string good =
      R"({"hidden_size": 8, "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 16,
          "vocab_size": 40, "max_position_embeddings": 16})";
  const svc::EncoderConfig c = svc::read_encoder_config(write_file("config.json", good));
  check(c.hidden == 8 && c.heads == 2 && c.type_vocab == 2 && c.layer_norm_eps == 1e-12 && c.dropout == 0.1, "config");
  auto refused = [&](const std::string& from, const std::string& to, const std::string& message) {
    std::string text = good;
    text.replace(text.find(from), from.size(), to);
    const std::string p = write_file("config.json", text);
    expect_error([&] { svc::read_encoder_config(p); }, p + ": " + message);
  };
  refused("\"hidden_size\": 8", "\"hidden_size\": 0", "hidden_size must be an integer from 1 to 16384");
  refused("\"num_attention_heads\": 2", "\"num_attention_heads\": 16",
          "num_attention_heads must be an integer from 1 to 8");
  refused("\"num_attention_heads\": 2", "\"num_attention_heads\": 3",
          "hidden_size 8 is not a multiple of num_attention_heads 3");
  refused("\"vocab_size\": 40", "\"vocab_size\": 1e300", "vocab_size must be an integer from 1 to 4194304");
  refused("\"vocab_size\": 40", "\"vocab_size\": 40, \"layer_norm_eps\": 0",
          "layer_norm_eps must be a number in (0, 1)");
  refused("\"vocab_size\": 40", "\"vocab_size\": 40, \"type_vocab_size\": 0",
          "type_vocab_size must be an integer from 1 to 1024");
}

}  // namespace

int main() {
  json_tests();
  safetensors_tests();
  config_tests();
  for (const char* name : {"-round.safetensors", "-bad.safetensors", "-config.json"})
    std::remove((kDir + name).c_str());
  std::printf(failures ? "io_test: %d FAILED\n" : "io_test: all passed\n", failures);
  return failures ? 1 : 0;
}
