#include "worker/tasks/context_resolve.h"

#include <algorithm>
#include <cctype>
#include <set>

namespace dnaserve::worker {
namespace {

std::string_view Trim(std::string_view text) {
  const auto space = [](char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; };
  while (!text.empty() && space(text.front())) text.remove_prefix(1);
  while (!text.empty() && space(text.back())) text.remove_suffix(1);
  return text;
}

std::string Upper(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

// "E" and three digits, as Roadmap numbers its epigenomes.
bool LooksLikeId(std::string_view text) {
  if (text.size() != 4 || (text[0] != 'E' && text[0] != 'e')) return false;
  return std::all_of(text.begin() + 1, text.end(),
                     [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; });
}

// PREFIX:LOCAL with a letter first and no spaces, e.g. "UBERON:0002107", "CL:0000895".
bool LooksLikeCurie(std::string_view text) {
  const auto colon = text.find(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == text.size()) return false;
  if (!std::isalpha(static_cast<unsigned char>(text[0]))) return false;
  const auto ok = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '.' || c == '-';
  };
  return std::all_of(text.begin(), text.begin() + colon, ok) &&
         std::all_of(text.begin() + colon + 1, text.end(), ok);
}

void Add(const DescriptionContext& context, double similarity, ResolvedContext* out) {
  out->contexts.push_back({context.id, context.name, similarity});
  out->curies.push_back(context.curie);
}

// The model reads the matched context's name (its own rule scores that wording 1 for this
// context alone) or, unmatched, a text without trigrams.
void SetModelText(ResolvedContext* out) {
  out->model_text = out->matched ? out->contexts.front().name : std::string(kUnmatchedModelText);
}

ResolvedContext ById(const DescriptionContexts& contexts, std::string_view id) {
  ResolvedContext out;
  out.matched_by = "id";
  const std::string want = Upper(id);
  for (const auto& context : contexts.contexts) {
    if (Upper(context.id) == want) {
      Add(context, 1.0, &out);
      break;
    }
  }
  out.matched = !out.contexts.empty();
  SetModelText(&out);
  return out;
}

// Prefixes compare in any case ("uberon:0002107"); local parts as written.
ResolvedContext ByCurie(const DescriptionContexts& contexts, std::string_view curie,
                        std::size_t top) {
  ResolvedContext out;
  out.matched_by = "curie";
  const auto colon = curie.find(':');
  const std::string prefix = Upper(curie.substr(0, colon));
  const std::string_view local = curie.substr(colon + 1);
  for (const auto& context : contexts.contexts) {
    const auto c = context.curie.find(':');
    if (c == std::string::npos) continue;
    if (Upper(std::string_view(context.curie).substr(0, c)) == prefix &&
        std::string_view(context.curie).substr(c + 1) == local && out.contexts.size() < top) {
      Add(context, 1.0, &out);
    }
  }
  out.matched = !out.contexts.empty();
  SetModelText(&out);
  return out;
}

ResolvedContext ByFreeText(const DescriptionContexts& contexts, std::string_view description,
                           std::size_t top) {
  const std::vector<double> scores = FreeTextScores(contexts, description);
  std::vector<std::size_t> order(scores.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  // Best first; ties in package order (the reference's rule).
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return scores[a] > scores[b]; });
  ResolvedContext out;
  out.matched_by = "text";
  for (std::size_t k = 0; k < order.size() && k < top; ++k) {
    Add(contexts.contexts[order[k]], scores[order[k]], &out);
  }
  out.matched = !order.empty() && scores[order.front()] >= contexts.free_text->threshold;
  SetModelText(&out);
  return out;
}

// Packages without a free-text rule: the model's own rule, and the model reads the description.
ResolvedContext ByModelRule(const DescriptionContexts& contexts, std::string_view description,
                            std::size_t top) {
  const DescriptionMatch match = MatchDescription(contexts, description, top);
  ResolvedContext out;
  out.matched = match.matched;
  out.matched_by = "text";
  for (const auto& c : match.contexts) {
    out.contexts.push_back(c);
    const auto it = std::find_if(contexts.contexts.begin(), contexts.contexts.end(),
                                 [&](const DescriptionContext& d) { return d.id == c.id; });
    out.curies.push_back(it == contexts.contexts.end() ? "" : it->curie);
  }
  out.model_text = std::string(description);
  return out;
}

}  // namespace

std::string ContentText(std::string_view text, const std::vector<std::string>& generic_words) {
  std::string out;
  std::string word;
  const auto flush = [&] {
    if (!word.empty() &&
        std::find(generic_words.begin(), generic_words.end(), word) == generic_words.end()) {
      if (!out.empty()) out.push_back(' ');
      out += word;
    }
    word.clear();
  };
  for (char raw : text) {
    unsigned char c = static_cast<unsigned char>(raw);
    if (c >= 'A' && c <= 'Z') c = static_cast<unsigned char>(c - 'A' + 'a');
    if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')) {
      word.push_back(static_cast<char>(c));
    } else {
      flush();
    }
  }
  flush();
  return out;
}

std::vector<double> FreeTextScores(const DescriptionContexts& contexts,
                                   std::string_view description) {
  std::vector<double> scores(contexts.contexts.size(), 0.0);
  if (!contexts.free_text) return scores;
  const auto& generic = contexts.free_text->generic_words;
  const std::string query_text = ContentText(description, generic);
  if (query_text.empty()) return scores;
  // TrigramCounts pads one space at each end of an already normal text, as the reference does.
  const auto query = TrigramCounts(query_text);
  for (std::size_t i = 0; i < contexts.contexts.size(); ++i) {
    const DescriptionContext& context = contexts.contexts[i];
    double best = 0;
    const auto consider = [&](const std::string& text) {
      best = std::max(best, TrigramCosine(query, TrigramCounts(ContentText(text, generic))));
    };
    consider(context.name);
    for (const auto& wording : context.wordings) consider(wording);
    if (!context.label.empty()) consider(context.label);
    for (const auto& synonym : context.synonyms) consider(synonym);
    scores[i] = best;
  }
  return scores;
}

ResolvedContext ResolveContext(const DescriptionContexts& contexts, std::string_view description,
                               std::size_t top) {
  const std::string_view trimmed = Trim(description);
  if (LooksLikeId(trimmed)) return ById(contexts, trimmed);
  if (LooksLikeCurie(trimmed)) return ByCurie(contexts, trimmed, top);
  if (contexts.free_text) return ByFreeText(contexts, description, top);
  return ByModelRule(contexts, description, top);
}

}  // namespace dnaserve::worker
