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
