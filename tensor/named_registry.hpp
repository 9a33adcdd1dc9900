#pragma once
// A thread-safe map from names to factories, for the registries of actrain::core (model kinds
// in model/, optimizer kinds in optim/). Lives at the bottom of core so both can use it.
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace actrain {

template <class Entry>
class named_registry {
 public:
  /// Throws std::invalid_argument("<what>: \"name\" is registered already").
  void add(const std::string& what, const std::string& name, Entry e) {
    std::lock_guard<std::mutex> lock(mtx_);
    if (!entries_.emplace(name, std::move(e)).second)
      throw std::invalid_argument(what + ": \"" + name + "\" is registered already");
  }
  void remove(const std::string& name) {
    std::lock_guard<std::mutex> lock(mtx_);
    entries_.erase(name);
  }
  std::optional<Entry> find(const std::string& name) const {
    std::lock_guard<std::mutex> lock(mtx_);
    auto i = entries_.find(name);
    if (i == entries_.end()) return std::nullopt;
    return i->second;
  }
  /// The registered names, sorted.
  std::vector<std::string> names() const {
    std::lock_guard<std::mutex> lock(mtx_);
    std::vector<std::string> out;
    for (const auto& kv : entries_) out.push_back(kv.first);
    return out;
  }

 private:
  mutable std::mutex mtx_;
  std::map<std::string, Entry> entries_;
};

}  // namespace actrain
