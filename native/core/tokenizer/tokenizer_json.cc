// tokenizer.json -> TokenizerSpec. Anything this tokenizer would encode
// differently from the reference is refused with a message, never ignored
// (except padding, which we never apply, and the file's truncation length,
// which callers replace with their own).
#include <cmath>
#include <stdexcept>

#include "io/json.h"
#include "precompiled.h"
#include "tokenizer.h"

namespace svc::tok {

namespace {

using svc::json::Value;

[[noreturn]] void unsupported(const std::string& what) { throw std::runtime_error("tokenizer.json: " + what); }

const Value& member(const Value& object, const char* key, const char* where) {
  const Value* v = object.find(key);
  if (!v) unsupported(std::string(where) + " has no '" + key + "'");
  return *v;
}

std::string string_or(const Value& object, const char* key, const std::string& fallback) {
  const Value* v = object.find(key);
  if (!v || v->is_null()) return fallback;
  if (!v->is_string()) unsupported(std::string("'") + key + "' must be a string");
  return v->as_string();
}

bool bool_or(const Value& object, const char* key, bool fallback) {
  const Value* v = object.find(key);
  if (!v || v->is_null()) return fallback;
  if (!v->is_bool()) unsupported(std::string("'") + key + "' must be true or false");
  return v->as_bool();
}

int32_t to_id(const Value& v, const char* where) {
  if (!v.is_number() || v.as_number() < 0 || v.as_number() > 2147483647.0 ||
      std::floor(v.as_number()) != v.as_number()) {
    unsupported(std::string(where) + " must be a non-negative integer id");
  }
  return static_cast<int32_t>(v.as_number());
}

std::string type_of(const Value& v) {
  const Value* t = v.find("type");
  return t && t->is_string() ? t->as_string() : std::string();
}

void read_unigram(const Value& model, UnigramSpec& spec) {
  const Value& vocab = member(model, "vocab", "model");
  if (!vocab.is_array()) unsupported("the Unigram model.vocab must be an array of [piece, score]");
  spec.vocab.reserve(vocab.items().size());
  for (const Value& entry : vocab.items()) {
    if (!entry.is_array() || entry.items().size() != 2 || !entry.items()[0].is_string() ||
        !entry.items()[1].is_number()) {
      unsupported("a Unigram vocab entry must be [piece, score]");
    }
    spec.vocab.emplace_back(entry.items()[0].as_string(), entry.items()[1].as_number());
  }
  const Value* unk = model.find("unk_id");
  if (!unk || unk->is_null()) unsupported("the Unigram model has no unk_id, which is not supported");
  spec.unk_id = to_id(*unk, "model.unk_id");
  if (static_cast<size_t>(spec.unk_id) >= spec.vocab.size()) unsupported("model.unk_id is past the vocabulary");
  spec.byte_fallback = bool_or(model, "byte_fallback", false);
}

void read_model(const Value& root, TokenizerSpec& spec) {
  const Value& model = member(root, "model", "the file");
  const std::string type = type_of(model);
  if (type == "Unigram") {
    spec.unigram = std::make_shared<UnigramSpec>();
    read_unigram(model, *spec.unigram);
    return;
  }
  if (!type.empty() && type != "WordPiece") {
    unsupported("model type '" + type + "' is not supported (only WordPiece and Unigram)");
  }
  const Value& vocab = member(model, "vocab", "model");
  if (!vocab.is_object()) unsupported("model.vocab must be an object");
  spec.vocab.reserve(vocab.members().size());
  for (const auto& [token, id] : vocab.members()) spec.vocab.emplace_back(token, to_id(id, "a vocab entry"));
  spec.unk_token = string_or(model, "unk_token", "[UNK]");
  spec.continuing_subword_prefix = string_or(model, "continuing_subword_prefix", "##");
  if (const Value* m = model.find("max_input_chars_per_word"); m && !m->is_null()) {
    spec.max_input_chars_per_word = static_cast<size_t>(to_id(*m, "model.max_input_chars_per_word"));
  }
}

// One normalizer of a SentencePiece file (a Sequence is flattened).
void read_unigram_normalizer(const Value& n, UnigramSpec& spec) {
  const std::string type = type_of(n);
  if (type == "Sequence") {
    for (const Value& step : member(n, "normalizers", "the Sequence normalizer").items())
      read_unigram_normalizer(step, spec);
    return;
  }
  NormalizerStep step;
  if (type == "Precompiled") {
    step.kind = NormalizerStep::Kind::kPrecompiled;
    const std::string map = string_or(n, "precompiled_charsmap", "");
    try {
      step.charsmap = decode_base64(map);
      if (!step.charsmap.empty()) PrecompiledCharsmap check(step.charsmap);
    } catch (const std::runtime_error& e) {
      unsupported(std::string("normalizer ") + e.what());
    }
  } else if (type == "Replace") {
    step.kind = NormalizerStep::Kind::kReplace;
    step.content = string_or(n, "content", "");
    const Value& pattern = member(n, "pattern", "the Replace normalizer");
    if (const Value* literal = pattern.find("String"); literal && literal->is_string()) {
      step.pattern = literal->as_string();
    } else if (const Value* regex = pattern.find("Regex"); regex && regex->is_string()) {
      // Only a run of one ASCII character: "X{n,}" or "X+", as converted SentencePiece files write.
      const std::string r = regex->as_string();
      const bool plain = !r.empty() && static_cast<unsigned char>(r[0]) < 0x80 &&
                         std::string("\\^$.|?*+()[]{}").find(r[0]) == std::string::npos;
      if (plain && r.size() == 2 && r[1] == '+') {
        step.min_repeat = 1;
      } else if (plain && r.size() >= 5 && r[1] == '{' && r.compare(r.size() - 2, 2, ",}") == 0 &&
                 r.find_first_not_of("0123456789", 2) == r.size() - 2) {
        step.min_repeat = static_cast<size_t>(std::stoul(r.substr(2, r.size() - 4)));
        if (step.min_repeat == 0) step.min_repeat = 1;
      } else {
        unsupported("the Replace normalizer's regex '" + r + "' is not supported (only a repeated character)");
      }
      step.pattern = r.substr(0, 1);
    } else {
      unsupported("the Replace normalizer's pattern must be a String or a Regex");
    }
    if (step.pattern.empty()) unsupported("the Replace normalizer's pattern is empty");
  } else {
    unsupported("normalizer type '" + type +
                "' is not supported with a Unigram model (Precompiled, Replace, Sequence)");
  }
  spec.normalizers.push_back(std::move(step));
}

void read_unigram_pre_tokenizer(const Value& p, UnigramSpec& spec) {
  const std::string type = type_of(p);
  if (type == "Sequence") {
    for (const Value& step : member(p, "pretokenizers", "the Sequence pre_tokenizer").items())
      read_unigram_pre_tokenizer(step, spec);
    return;
  }
  if (type == "WhitespaceSplit") {
    if (spec.metaspace) unsupported("WhitespaceSplit after Metaspace is not supported");
    spec.whitespace_split = true;
  } else if (type == "Metaspace") {
    if (spec.metaspace) unsupported("pre_tokenizer has Metaspace twice");
    spec.metaspace = true;
    spec.replacement = string_or(p, "replacement", "\xE2\x96\x81");
    if (spec.replacement.empty()) unsupported("Metaspace replacement is empty");
    const Value* scheme = p.find("prepend_scheme");
    if (scheme && scheme->is_string()) {
      const std::string s = scheme->as_string();
      if (s == "always") {
        spec.prepend = PrependScheme::kAlways;
      } else if (s == "first") {
        spec.prepend = PrependScheme::kFirst;
      } else if (s == "never") {
        spec.prepend = PrependScheme::kNever;
      } else {
        unsupported("Metaspace prepend_scheme '" + s + "' is not supported");
      }
    } else {
      // Files written before prepend_scheme existed say add_prefix_space.
      spec.prepend = bool_or(p, "add_prefix_space", true) ? PrependScheme::kAlways : PrependScheme::kNever;
    }
    spec.split = bool_or(p, "split", true);
  } else {
    unsupported("pre_tokenizer '" + type + "' is not supported with a Unigram model (Metaspace, WhitespaceSplit)");
  }
}

void read_normalizer(const Value& root, TokenizerSpec& spec) {
  const Value* n = root.find("normalizer");
  if (!n || n->is_null()) return;
  if (spec.unigram) {
    read_unigram_normalizer(*n, *spec.unigram);
    return;
  }
  const std::string type = type_of(*n);
  if (type != "BertNormalizer") unsupported("normalizer type '" + type + "' is not supported (only BertNormalizer)");
  spec.has_normalizer = true;
  BertNormalizerOptions& o = spec.normalizer;
  o.clean_text = bool_or(*n, "clean_text", true);
  o.handle_chinese_chars = bool_or(*n, "handle_chinese_chars", true);
  o.lowercase = bool_or(*n, "lowercase", true);
  // Unset strip_accents follows lowercase, as in the reference.
  o.strip_accents = bool_or(*n, "strip_accents", o.lowercase);
}

void read_pre_tokenizer(const Value& root, TokenizerSpec& spec) {
  const Value* p = root.find("pre_tokenizer");
  if (spec.unigram) {
    if (p && !p->is_null()) read_unigram_pre_tokenizer(*p, *spec.unigram);
    return;
  }
  const std::string type = p && !p->is_null() ? type_of(*p) : std::string("none");
  if (type != "BertPreTokenizer") unsupported("pre_tokenizer '" + type + "' is not supported (only BertPreTokenizer)");
}

// TemplateProcessing: the "single" template, e.g. [CLS] $A [SEP].
void read_template(const Value& pp, TokenizerSpec& spec) {
  const Value& single = member(pp, "single", "post_processor");
  const Value* specials = pp.find("special_tokens");
  bool seen_sequence = false;
  for (const Value& piece : single.items()) {
    if (piece.find("Sequence")) {
      if (seen_sequence) unsupported("post_processor.single uses the sequence twice");
      seen_sequence = true;
      continue;
    }
    const Value* special = piece.find("SpecialToken");
    if (!special) unsupported("post_processor.single has an unknown piece");
    const std::string name = string_or(*special, "id", "");
    const Value* entry = specials ? specials->find(name) : nullptr;
    if (!entry) unsupported("post_processor special token '" + name + "' is not in special_tokens");
    std::vector<int32_t>& into = seen_sequence ? spec.suffix_ids : spec.prefix_ids;
    for (const Value& id : member(*entry, "ids", "a special token").items())
      into.push_back(to_id(id, "a special token id"));
  }
  if (!seen_sequence) unsupported("post_processor.single has no sequence");
}

void read_post_processor(const Value& root, TokenizerSpec& spec) {
  const Value* pp = root.find("post_processor");
  if (!pp || pp->is_null()) return;
  const std::string type = type_of(*pp);
  if (type == "TemplateProcessing") {
    read_template(*pp, spec);
  } else if (type == "BertProcessing" || type == "RobertaProcessing") {
    // "cls": ["[CLS]", 101], "sep": ["[SEP]", 102]
    const Value& cls = member(*pp, "cls", "post_processor");
    const Value& sep = member(*pp, "sep", "post_processor");
    if (cls.items().size() != 2 || sep.items().size() != 2) unsupported("post_processor cls/sep must be [token, id]");
    if (type == "RobertaProcessing") {
      spec.trim_offsets = bool_or(*pp, "trim_offsets", true);
      spec.add_prefix_space = bool_or(*pp, "add_prefix_space", true);
    }
    spec.prefix_ids.push_back(to_id(cls.items()[1], "post_processor.cls"));
    spec.suffix_ids.push_back(to_id(sep.items()[1], "post_processor.sep"));
  } else {
    unsupported("post_processor type '" + type + "' is not supported");
  }
}

void read_added_tokens(const Value& root, TokenizerSpec& spec) {
  const Value* added = root.find("added_tokens");
  if (!added || added->is_null()) return;
  for (const Value& t : added->items()) {
    AddedToken token{string_or(t, "content", ""), to_id(member(t, "id", "an added token"), "an added token id")};
    if (bool_or(t, "single_word", false)) {
      unsupported("added token '" + token.content + "' uses single_word, which is not supported");
    }
    // BERT's pre-tokenizer drops the White_Space either way: only a SentencePiece pipeline sees it.
    token.lstrip = bool_or(t, "lstrip", false);
    token.rstrip = bool_or(t, "rstrip", false);
    // The reference matches such tokens in the normalized text, against their normalized form.
    if (bool_or(t, "normalized", false)) {
      unsupported("added token '" + token.content + "' is matched after normalization, which is not supported");
    }
    if (!token.content.empty()) spec.added_tokens.push_back(std::move(token));
  }
}

}  // namespace

TokenizerSpec parse_tokenizer_json(std::string_view text) {
  const Value root = svc::json::parse(text);
  if (!root.is_object()) unsupported("the document is not an object");
  TokenizerSpec spec;
  read_model(root, spec);
  read_normalizer(root, spec);
  read_pre_tokenizer(root, spec);
  read_added_tokens(root, spec);
  read_post_processor(root, spec);
  if (const Value* t = root.find("truncation"); t && t->is_object()) {
    if (const Value* m = t->find("max_length"); m && m->is_number())
      spec.truncation_max_length = to_id(*m, "truncation.max_length");
  }
  return spec;
}

}  // namespace svc::tok
