// The model registry, spec checks and the parts of the interface every kind shares. The
// built-in kinds' layout and arithmetic live in dense_stack.cpp.
#include <actrain/model.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <stdexcept>

#include "model/dense_stack.hpp"
#include "tensor/named_registry.hpp"

namespace actrain {
namespace {

const std::vector<std::string> builtin_kinds = {"linear", "softmax", "mlp"};

bool is_builtin(const std::string& kind) {
  return std::find(builtin_kinds.begin(), builtin_kinds.end(), kind) != builtin_kinds.end();
}

struct registered_kind {
  model_factory factory;
  model_task task;
};

/// The process's registered kinds. A function-local static, so registrations made during static
/// initialization of other translation units find it constructed.
named_registry<registered_kind>& the_registry() {
  static named_registry<registered_kind> r;
  return r;
}

bool find_registered(const std::string& kind, registered_kind* out) {
  auto k = the_registry().find(kind);
  if (k && out) *out = *k;
  return k.has_value();
}

std::string known_kinds() {
  std::string s;
  for (const auto& k : model_kinds()) s += (s.empty() ? "" : ", ") + k;
  return s;
}

[[noreturn]] void unknown_kind(const std::string& kind) {
  throw std::invalid_argument("model.kind: \"" + kind + "\" is not one of " + known_kinds() +
                              " (a kind of one's own must be registered with "
                              "actrain::model_registration in every process that trains it)");
}

}  // namespace

void validate(const model_spec& spec) {
  if (is_builtin(spec.kind)) {
    validate_dense_stack(spec);
    if (!spec.options.empty())
      throw std::invalid_argument("model." + spec.options.begin()->first + ": kind " + spec.kind +
                                  " takes no such option");
    return;
  }
  if (!spec.factory && !find_registered(spec.kind, nullptr)) unknown_kind(spec.kind);
  if (spec.input_dim <= 0)
    throw std::invalid_argument("model.input_dim: must be > 0, got " +
                                std::to_string(spec.input_dim));
  if (spec.output_dim <= 0)
    throw std::invalid_argument("model.output_dim: must be > 0, got " +
                                std::to_string(spec.output_dim));
}

std::string describe(const model_spec& spec) {
  std::string s = spec.kind + " " + std::to_string(spec.input_dim);
  for (int h : spec.hidden) s += "-" + std::to_string(h);
  return s + "-" + std::to_string(spec.output_dim);
}

std::string model_args::option(const std::string& key, const std::string& fallback) const {
  auto i = spec.options.find(key);
  return i == spec.options.end() ? fallback : i->second;
}

std::int64_t model_args::option_int(const std::string& key, std::int64_t fallback) const {
  auto i = spec.options.find(key);
  if (i == spec.options.end()) return fallback;
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(i->second.c_str(), &end, 10);
  if (i->second.empty() || *end != '\0' || errno == ERANGE)
    throw std::invalid_argument("model." + key + ": must be an integer, got \"" + i->second + "\"");
  return v;
}

double model_args::option_double(const std::string& key, double fallback) const {
  auto i = spec.options.find(key);
  if (i == spec.options.end()) return fallback;
  errno = 0;
  char* end = nullptr;
  double v = std::strtod(i->second.c_str(), &end);
  if (i->second.empty() || *end != '\0' || errno == ERANGE)
    throw std::invalid_argument("model." + key + ": must be a number, got \"" + i->second + "\"");
  return v;
}

bool model::outputs(const float*, const batch_view&, float*) {
  return false;
}

std::vector<float> model::init_params(std::uint64_t seed) const {
  std::vector<float> p(num_params(), 0.0f);
  init(p.data(), seed);
  return p;
}

model_registration::model_registration(std::string kind, model_factory factory, model_task task)
    : kind_(std::move(kind)) {
  if (kind_.empty()) throw std::invalid_argument("model_registration: the kind name is empty");
  if (is_builtin(kind_))
    throw std::invalid_argument("model_registration: \"" + kind_ + "\" is a built-in kind");
  if (!factory) throw std::invalid_argument("model_registration: \"" + kind_ + "\" has no factory");
  the_registry().add("model_registration", kind_, registered_kind{std::move(factory), task});
}

model_registration::~model_registration() {
  the_registry().remove(kind_);
}

std::vector<std::string> model_kinds() {
  std::vector<std::string> out = builtin_kinds;
  for (auto& k : the_registry().names()) out.push_back(std::move(k));
  return out;
}

bool is_classifier_kind(const std::string& kind) {
  if (kind == "linear") return false;
  if (is_builtin(kind)) return true;
  registered_kind k;
  if (!find_registered(kind, &k)) unknown_kind(kind);
  return k.task == model_task::classification;
}

std::unique_ptr<model> make_model(const model_spec& spec, backend& b, int max_rows) {
  if (max_rows <= 0)
    throw std::invalid_argument("model: max_rows must be > 0, got " + std::to_string(max_rows));
  validate(spec);
  if (!spec.factory && is_builtin(spec.kind))
    return std::make_unique<dense_stack>(spec, b, max_rows);
  model_args args{spec, &b, max_rows};
  args.spec.factory = nullptr;  // the factory needs no copy of itself
  std::unique_ptr<model> m;
  if (spec.factory) {
    m = spec.factory(args);
  } else {
    registered_kind k;
    if (!find_registered(spec.kind, &k)) unknown_kind(spec.kind);
    m = k.factory(args);
  }
  if (!m) throw std::invalid_argument("model.kind: the factory of \"" + spec.kind + "\" made none");
  if (m->num_params() == 0)
    throw std::invalid_argument("model.kind: \"" + spec.kind + "\" has no parameters");
  return m;
}

std::size_t num_params(const model_spec& spec) {
  if (!spec.factory && is_builtin(spec.kind)) return dense_stack_params(spec);
  auto cpu = make_cpu_backend();
  return make_model(spec, *cpu, 1)->num_params();
}

}  // namespace actrain
