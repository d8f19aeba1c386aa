#include "specs/pipeline_layout.h"

#include <algorithm>
#include <regex>

namespace fasop {
namespace {

constexpr size_t kMaxLayoutLayers = 100000;

/// One pass of Python's re.sub(pattern, group(1) * int(group(2)), text): every match, left to
/// right, replaced by its first group repeated. False when the text would grow past the limit.
bool unroll(const std::string& text, const std::regex& pattern, std::string* out) {
  std::string result;
  auto last = text.cbegin();
  for (std::sregex_iterator it(text.begin(), text.end(), pattern), end; it != end; ++it) {
    const std::smatch& m = *it;
    result.append(last, m[0].first);
    const std::string count = m[2].str();
    if (count.size() > 6) return false;
    const size_t times = std::stoul(count);
    if (m[1].length() * times + result.size() > kMaxLayoutLayers) return false;
    for (size_t i = 0; i < times; ++i) result += m[1].str();
    last = m[0].second;
  }
  result.append(last, text.cend());
  if (result.size() > kMaxLayoutLayers) return false;
  *out = std::move(result);
  return true;
}

}  // namespace

bool parse_pipeline_layout(const std::string& text, PipelineLayout* layout, std::string* error) {
  std::string s = text;
  s.erase(std::remove(s.begin(), s.end(), ','), s.end());  // Megatron's commas are cosmetic
  // Megatron's two patterns in its order: groups "(...)*n" first, then single characters "x*n".
  static const std::regex group(R"(\(([^)]+)\)\*(\d+))"), single(R"((.)\*(\d+))");
  if (!unroll(s, group, &s) || !unroll(s, single, &s)) {
    *error = "unrolls to more than " + std::to_string(kMaxLayoutLayers) + " layers";
    return false;
  }
  layout->chunks.assign(1, "");
  for (char c : s) {
    if (c == '|') {
      layout->chunks.emplace_back();
    } else if (c == 'E' || c == 't' || c == 'm' || c == 'L') {
      layout->chunks.back() += c;
    } else {
      *error = std::string("has the character '") + c + "', which is no layer; use E (embedding), t (transformer "
               "layer), m (multi-token prediction), L (loss), '|' between chunks, x*n and (...)*n to repeat";
      return false;
    }
  }
  return true;
}

std::vector<int> layout_units_per_rank(const PipelineLayout& layout, int pp, int virtual_stages,
                                       int transformer_layers, int mtp_layers, std::string* error) {
  const auto& chunks = layout.chunks;
  const auto fail = [&](const std::string& why) {
    *error = why;
    return std::vector<int>{};
  };
  if (static_cast<long long>(chunks.size()) != 1LL * pp * virtual_stages)
    return fail("has " + std::to_string(chunks.size()) + " chunks but pp x virtual_stages = " +
                std::to_string(1LL * pp * virtual_stages) + "; give one chunk per pipeline rank and virtual stage");
  std::string flat;
  for (const std::string& chunk : chunks) flat += chunk;
  const auto count = [&](char c) { return static_cast<int>(std::count(flat.begin(), flat.end(), c)); };
  if (flat.empty() || flat.front() != 'E' || flat.back() != 'L' || count('E') != 1 || count('L') != 1)
    return fail("must start with the embedding E and end with the loss L, each once (Megatron's "
                "validate_layer_layout)");
  const std::string mtp_and_loss = std::string(mtp_layers, 'm') + "L";
  const std::string& last = chunks.back();
  const bool ends_with_them = last.size() >= mtp_and_loss.size() &&
                              last.compare(last.size() - mtp_and_loss.size(), mtp_and_loss.size(), mtp_and_loss) == 0;
  if (count('m') != mtp_layers || !ends_with_them)
    return fail("places " + std::to_string(count('m')) + " multi-token-prediction layers (m) but the model has " +
                std::to_string(mtp_layers) + " (mtp_layers), and they must stand just before the loss L, in its chunk");
  if (count('t') != transformer_layers)
    return fail("places " + std::to_string(count('t')) + " transformer layers (t) but the model has " +
                std::to_string(transformer_layers));
  std::vector<int> units(pp, 0);
  // Each letter is a unit but the MTP modules, which the post-process unit (L) carries.
  for (size_t c = 0; c < chunks.size(); ++c)
    units[c % pp] += static_cast<int>(chunks[c].size() - std::count(chunks[c].begin(), chunks[c].end(), 'm'));
  for (int r = 0; r < pp; ++r)
    if (units[r] == 0) return fail("leaves pipeline rank " + std::to_string(r) + " without layers");
  return units;
}

}  // namespace fasop
