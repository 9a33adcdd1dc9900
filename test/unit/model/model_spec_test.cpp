// Specs, layouts, parameter counts and initialization.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <actrain/model.hpp>

#include "model/dense_stack.hpp"

namespace actrain {
namespace {

model_spec mlp(int in, std::vector<int> hidden, int out) {
  return {"mlp", in, out, hidden};
}

TEST(model_spec, num_params_and_describe) {
  EXPECT_EQ(num_params(mlp(784, {256}, 10)), 203530u);  // 784*256+256 + 256*10+10
  EXPECT_EQ(num_params({"softmax", 784, 10, {}}), 7850u);
  EXPECT_EQ(num_params({"linear", 100, 1, {}}), 101u);
  EXPECT_EQ(num_params(mlp(784, {256, 128, 64}, 10)),
            784u * 256 + 256 + 256 * 128 + 128 + 128 * 64 + 64 + 64 * 10 + 10);
  EXPECT_EQ(describe(mlp(784, {256}, 10)), "mlp 784-256-10");
  EXPECT_EQ(describe({"softmax", 784, 10, {}}), "softmax 784-10");
  EXPECT_EQ(describe({"linear", 100, 1, {}}), "linear 100-1");
}

void expect_invalid(const model_spec& s, const std::string& field) {
  try {
    validate(s);
    FAIL() << "accepted " << describe(s);
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
  }
}

TEST(model_spec, validate_names_the_bad_field) {
  expect_invalid({"cnn", 10, 2, {}}, "model.kind");
  expect_invalid({"linear", 0, 1, {}}, "model.input_dim");
  expect_invalid({"linear", 10, 2, {}}, "model.output_dim");
  expect_invalid({"softmax", 10, 1, {}}, "model.output_dim");
  expect_invalid({"mlp", 10, 3, {}}, "model.hidden");
  expect_invalid({"softmax", 10, 3, {5}}, "model.hidden");
  expect_invalid(mlp(10, {5, 0}, 3), "model.hidden[1]");
  EXPECT_NO_THROW(validate(mlp(10, {5, 4}, 3)));
  auto b = make_cpu_backend();
  EXPECT_THROW(make_model({"mlp", 10, 3, {}}, *b, 8), std::invalid_argument);
  EXPECT_THROW(make_model({"softmax", 10, 3, {}}, *b, 0), std::invalid_argument);
}

TEST(model_spec, layer_layout_is_w_then_b_in_order) {
  auto b = make_cpu_backend();
  auto m = std::make_unique<dense_stack>(mlp(784, {256}, 10), *b, 4);
  ASSERT_EQ(m->layers().size(), 2u);
  EXPECT_EQ(m->layers()[0].offset, 0u);
  EXPECT_EQ(m->layers()[0].in, 784);
  EXPECT_EQ(m->layers()[0].out, 256);
  EXPECT_EQ(m->layers()[1].offset, 784u * 256 + 256);
  EXPECT_EQ(m->layers()[1].in, 256);
  EXPECT_EQ(m->layers()[1].out, 10);
  EXPECT_EQ(m->num_params(), 203530u);
  EXPECT_TRUE(m->is_classifier());
  EXPECT_EQ(&m->device(), b.get());
  auto lin = std::make_unique<dense_stack>(model_spec{"linear", 7, 1, {}}, *b, 4);
  EXPECT_FALSE(lin->is_classifier());
  ASSERT_EQ(lin->layers().size(), 1u);
  EXPECT_EQ(lin->num_params(), 8u);
}

TEST(model_spec, init_params_deterministic_scaled_and_bias_free) {
  auto b = make_cpu_backend();
  auto m = std::make_unique<dense_stack>(mlp(784, {256}, 10), *b, 4);
  auto p1 = m->init_params(42), p2 = m->init_params(42), p3 = m->init_params(43);
  ASSERT_EQ(p1.size(), m->num_params());
  EXPECT_EQ(p1, p2);
  EXPECT_NE(p1, p3);
  const auto& L0 = m->layers()[0];
  const auto& L1 = m->layers()[1];
  double he = std::sqrt(6.0 / 784), glorot = std::sqrt(6.0 / (256 + 10));
  float max0 = 0, max1 = 0;
  double mean0 = 0;
  for (std::size_t i = 0; i < 784u * 256; ++i) {
    max0 = std::max(max0, std::abs(p1[L0.offset + i]));
    mean0 += p1[L0.offset + i];
  }
  for (std::size_t i = 0; i < 256u * 10; ++i) max1 = std::max(max1, std::abs(p1[L1.offset + i]));
  EXPECT_LE(max0, he);
  EXPECT_GT(max0, 0.99 * he);  // the uniform range is used, not a smaller one
  EXPECT_LE(max1, glorot);
  EXPECT_GT(max1, 0.95 * glorot);
  EXPECT_NEAR(mean0 / (784 * 256), 0.0, 0.01 * he);
  for (int i = 0; i < 256; ++i) EXPECT_EQ(p1[L0.offset + 784u * 256 + i], 0.0f);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(p1[L1.offset + 256u * 10 + i], 0.0f);

  auto lin = make_model({"linear", 5, 1, {}}, *b, 4);
  EXPECT_EQ(lin->init_params(7), std::vector<float>(6, 0.0f));
}

TEST(model_spec, batch_larger_than_max_rows_is_rejected) {
  auto b = make_cpu_backend();
  auto m = make_model({"softmax", 3, 2, {}}, *b, 2);
  std::vector<float> p(m->num_params(), 0.0f), g(m->num_params());
  std::vector<float> x(9, 1.0f), y{0, 1, 0};
  EXPECT_THROW(m->forward_backward(p.data(), {3, x.data(), y.data()}, g.data()),
               std::invalid_argument);
  EXPECT_THROW(m->evaluate(p.data(), {3, x.data(), y.data()}), std::invalid_argument);
  // An empty batch has no loss and a zero gradient.
  g.assign(g.size(), 5.0f);
  auto r = m->forward_backward(p.data(), {0, nullptr, nullptr}, g.data());
  EXPECT_EQ(r.loss, 0.0);
  EXPECT_EQ(g, std::vector<float>(g.size(), 0.0f));
}

// -- the registry ------------------------------------------------------------------------------

/// y = a * x[0] + b: two parameters, squared error; enough to see which code ran.
class affine final : public model {
 public:
  explicit affine(const model_args& a) : scale_(a.option_double("scale", 1.0)) {
    if (a.spec.input_dim != 1) throw std::invalid_argument("model.input_dim: affine takes 1");
  }
  std::size_t num_params() const override { return 2; }
  void init(float* p, std::uint64_t seed) const override {
    p[0] = static_cast<float>(seed);
    p[1] = static_cast<float>(scale_);
  }
  loss_sum forward_backward(const float* p, const batch_view& b, float* g) override {
    g[0] = g[1] = 0;
    loss_sum s;
    for (int r = 0; r < b.rows; ++r) {
      double e = p[0] * b.x[r] + p[1] - b.y[r];
      s.loss += e * e;
      g[0] += static_cast<float>(2 * e * b.x[r] / b.rows);
      g[1] += static_cast<float>(2 * e / b.rows);
    }
    return s;
  }
  loss_sum evaluate(const float* p, const batch_view& b) override {
    std::vector<float> g(2);
    return forward_backward(p, b, g.data());
  }
  bool is_classifier() const override { return false; }

 private:
  double scale_;
};

TEST(model_registry, a_registered_kind_is_built_validated_and_forgotten_again) {
  auto b = make_cpu_backend();
  model_spec s{"affine_test", 1, 1, {}};
  s.options["scale"] = "2.5";
  EXPECT_THROW(validate(s), std::invalid_argument);  // not registered yet
  {
    model_registration reg{"affine_test", make_factory<affine>()};
    EXPECT_NO_THROW(validate(s));
    EXPECT_EQ(num_params(s), 2u);
    EXPECT_FALSE(is_classifier_kind("affine_test"));
    auto m = make_model(s, *b, 8);
    EXPECT_EQ(m->init_params(3), (std::vector<float>{3.f, 2.5f}));
    float x[] = {1, 2}, y[] = {5, 7}, p[] = {2, 3}, g[2];
    auto l = m->forward_backward(p, batch_view{2, x, y}, g);
    EXPECT_DOUBLE_EQ(l.loss, 0.0);  // 2*1+3 = 5, 2*2+3 = 7
    auto kinds = model_kinds();
    EXPECT_NE(std::find(kinds.begin(), kinds.end(), "affine_test"), kinds.end());
    // the factory's own checks come through
    model_spec wide = s;
    wide.input_dim = 3;
    EXPECT_THROW(make_model(wide, *b, 8), std::invalid_argument);
    s.options["scale"] = "two";
    try {
      make_model(s, *b, 8);
      FAIL() << "accepted scale=two";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("model.scale"), std::string::npos) << e.what();
    }
    EXPECT_THROW((model_registration{"affine_test", make_factory<affine>()}),
                 std::invalid_argument);  // twice
  }
  try {
    validate(s);
    FAIL() << "still registered";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("linear, softmax, mlp"), std::string::npos) << e.what();
  }
}

TEST(model_registry, built_in_names_and_options_are_refused) {
  EXPECT_THROW((model_registration{"mlp", make_factory<affine>()}), std::invalid_argument);
  EXPECT_THROW((model_registration{"", make_factory<affine>()}), std::invalid_argument);
  model_spec s = mlp(4, {3}, 2);
  s.options["width"] = "3";
  expect_invalid(s, "model.width");
}

TEST(model_registry, a_factory_in_the_spec_needs_no_registration) {
  auto b = make_cpu_backend();
  model_spec s{"inline_affine", 1, 1, {}};
  s.factory = make_factory<affine>();
  EXPECT_NO_THROW(validate(s));
  EXPECT_EQ(make_model(s, *b, 1)->init_params(9), (std::vector<float>{9.f, 1.f}));
  EXPECT_THROW(is_classifier_kind("inline_affine"), std::invalid_argument);
}

}  // namespace
}  // namespace actrain
