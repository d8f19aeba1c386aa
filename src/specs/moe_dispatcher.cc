#include "specs/moe_dispatcher.h"

namespace fasop {

const std::vector<MoeDispatcher>& moe_dispatchers() {
  static const std::vector<MoeDispatcher> all{MoeDispatcher::kAlltoall, MoeDispatcher::kAllgather,
                                              MoeDispatcher::kDeepep, MoeDispatcher::kHybridep};
  return all;
}

const char* moe_dispatcher_name(MoeDispatcher dispatcher) {
  switch (dispatcher) {
    case MoeDispatcher::kAlltoall: return "alltoall";
    case MoeDispatcher::kAllgather: return "allgather";
    case MoeDispatcher::kDeepep: return "deepep";
    case MoeDispatcher::kHybridep: return "hybridep";
  }
  return "alltoall";
}

std::optional<MoeDispatcher> parse_moe_dispatcher(const std::string& name) {
  for (MoeDispatcher dispatcher : moe_dispatchers())
    if (name == moe_dispatcher_name(dispatcher)) return dispatcher;
  return std::nullopt;
}

void read_moe_dispatcher(const Field& block, MoeDispatcher& dispatcher) {
  const Field value = block.child(kMoeDispatcherKey);
  if (!value.present()) return;
  const std::optional<MoeDispatcher> named = parse_moe_dispatcher(value.text());
  if (!named) value.fail("is not a token dispatcher; give " + moe_dispatcher_choices());
  dispatcher = *named;
}

std::string moe_dispatcher_yaml(MoeDispatcher dispatcher) {
  if (dispatcher == MoeDispatcher::kAlltoall) return "";
  return std::string(kMoeDispatcherKey) + ": " + moe_dispatcher_name(dispatcher) + "\n";
}

std::vector<std::string> moe_dispatcher_names() {
  std::vector<std::string> names;
  for (MoeDispatcher dispatcher : moe_dispatchers()) names.emplace_back(moe_dispatcher_name(dispatcher));
  return names;
}

std::string moe_dispatcher_choices() {
  std::string out;
  const std::vector<MoeDispatcher>& all = moe_dispatchers();
  for (size_t i = 0; i < all.size(); ++i)
    out += std::string(i == 0 ? "" : i + 1 == all.size() ? " or " : ", ") + moe_dispatcher_name(all[i]);
  return out;
}

}  // namespace fasop
