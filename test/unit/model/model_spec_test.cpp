// Specs, layouts, parameter counts and initialization.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

#include <actrain/model.hpp>

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
  auto m = make_model(mlp(784, {256}, 10), *b, 4);
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
  auto lin = make_model({"linear", 7, 1, {}}, *b, 4);
  EXPECT_FALSE(lin->is_classifier());
  ASSERT_EQ(lin->layers().size(), 1u);
  EXPECT_EQ(lin->num_params(), 8u);
}

TEST(model_spec, init_params_deterministic_scaled_and_bias_free) {
  auto b = make_cpu_backend();
  auto m = make_model(mlp(784, {256}, 10), *b, 4);
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

}  // namespace
}  // namespace actrain
