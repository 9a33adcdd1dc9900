// `actrain bench gpu`: cuBLAS sgemm against the shapes the MLPs use, MLP training samples/s on
// the GPU (a device-resident loop, and the engine with a GPU worker and CPU shards), and PyTorch on
// the same GPU when Python has torch with CUDA. Writes section "gpu" of docs/benchmarks.md
// ("gpu-tf32" with --tf32).
// On a machine without a GPU it prints why and writes nothing.
#include <chrono>
#include <cstdio>
#include <iomanip>
#include <iostream>
#include <map>
#include <random>
#include <sstream>

#include <nlohmann/json.hpp>

#include <actrain/engine.hpp>
#include <actrain/system.hpp>
#include "bench/doc_section.hpp"
#include "tensor/cuda/cuda_backend.hpp"
#include "tensor/cuda/cuda_bench.hpp"
#include "tensor/device.hpp"

namespace actrain {
namespace {

/// Samples/s of forward/backward + an SGD step (axpy on the device), everything resident on the
/// GPU: the compute rate to compare with PyTorch's. Eager: each step launches its kernels and
/// reads its loss (one wait per step). Recorded: the step is recorded once (backend::record, a
/// CUDA graph) and replayed, its loss read once at the end, as PyTorch's graph loop does; 0
/// where the backend does not record.
double device_loop_rate(const model_spec& spec, int batch, int steps, bool tf32, bool recorded) {
  auto b = make_cuda_backend(0, tf32);
  auto net = make_model(spec, *b, batch);
  auto host_params = net->init_params(1);
  auto params = b->allocate(host_params.size());
  auto grad = b->allocate(host_params.size());
  b->upload(params.data(), host_params.data(), host_params.size());
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(0.f, 1.f);
  std::vector<float> hx(static_cast<std::size_t>(batch) * spec.input_dim), hy(batch);
  for (auto& v : hx) v = u(rng);
  for (int i = 0; i < batch; ++i) hy[i] = static_cast<float>(i % spec.output_dim);
  auto x = b->allocate(hx.size());
  auto y = b->allocate(hy.size());
  b->upload(x.data(), hx.data(), hx.size());
  b->upload(y.data(), hy.data(), hy.size());
  batch_view bv{batch, x.data(), y.data()};
  auto step = [&] {
    net->forward_backward(params.data(), bv, grad.data());
    b->axpy(host_params.size(), -0.1f, grad.data(), params.data());
  };
  std::unique_ptr<recorded_work> graph;
  if (recorded && !(graph = b->record(step))) return 0;
  auto run = [&] {
    if (graph)
      graph->replay();
    else
      step();
  };
  for (int i = 0; i < 10; ++i) run();
  b->take_loss();
  b->synchronize();
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < steps; ++i) run();
  b->take_loss();
  b->synchronize();
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return static_cast<double>(steps) * batch / s;
}

/// torch_mlp.py's figures keyed by "model/batch" (eager, or the step replayed as a CUDA graph).
std::map<std::string, double> torch_rates(bool tf32, bool graph) {
  const char* src = std::getenv("ACTRAIN_SOURCE_DIR");
  std::string cmd = "timeout 600 python3 " + std::string(src ? src : ".") +
                    "/bench/gpu/torch_mlp.py --steps 200" + (tf32 ? " --tf32" : "") +
                    (graph ? " --graph" : "") + " 2>&1";
  std::map<std::string, double> out;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return out;
  char buf[1 << 14];
  while (fgets(buf, sizeof buf, p)) {
    auto j = nlohmann::json::parse(buf, nullptr, false);
    if (!j.is_object() || !j.contains("results")) continue;
    for (auto& r : j["results"])
      if (r.contains("model") && r.contains("batch") && r.contains("samples_per_s"))
        out[r["model"].get<std::string>() + "/" + std::to_string(r["batch"].get<int>())] =
            r["samples_per_s"].get<double>();
  }
  pclose(p);
  return out;
}

}  // namespace

int bench_gpu(const std::vector<std::string>& args) {
  bool tf32 = false;
  for (auto& a : args) {
    if (a == "--tf32")
      tf32 = true;
    else {
      std::cerr << "bench gpu: unknown option " << a << " (--tf32)\n";
      return 2;
    }
  }
  std::string why;
  if (cuda_device_count(&why) == 0) {
    std::cout << "bench gpu: SKIPPED: no GPU (" << why << ")\n";
    return 0;
  }
  std::ostringstream md;
  auto emit = [&](const std::string& s) {
    std::cout << s << std::flush;
    md << s;
  };
  emit(std::string("## GPU: cuBLAS sgemm and MLP training") + (tf32 ? ", TF32 allowed" : "") +
       "\n\nReproduce: `actrain bench gpu" +
       std::string(tf32 ? " --tf32" : "") + "` (run by `scripts/gpu/check.sh`).\n\n");
  emit("| sgemm m x n x k | TF32 | TFLOP/s | share of 8192^3 |\n| --- | --- | --- | --- |\n");
  for (bool t : {false, true}) {
    auto peak = cuda_sgemm_bench(8192, 8192, 8192, t).tflops;
    struct shp {
      int m, n, k;
    };
    for (auto s : {shp{8192, 8192, 8192}, shp{64, 256, 784}, shp{512, 4096, 784},
                   shp{512, 4096, 4096}, shp{64, 4096, 4096}}) {
      auto r = cuda_sgemm_bench(s.m, s.n, s.k, t);
      emit("| " + std::to_string(s.m) + " x " + std::to_string(s.n) + " x " + std::to_string(s.k) +
           " | " + (t ? "yes" : "no") + " | " + fmt(r.tflops, 2) + " | " +
           fmt(100 * r.tflops / peak, 0) + "% |\n");
    }
  }
  auto torch = torch_rates(tf32, false);
  auto graphed = torch_rates(tf32, true);
  emit(
      "\nSamples/s. Same GPU, same model, batch and fp32 math (TF32 as the first table says), "
      "SGD 0.1, device-resident data on both sides. Eager: actrain's C++ launches each kernel "
      "and reads each step's loss; PyTorch's is one Python step per batch. Graph: the whole step "
      "recorded once as a CUDA graph and replayed (actrain's backend::record; PyTorch's "
      "torch.cuda.graph), the loss read at the end. Ratios: actrain over PyTorch, eager against "
      "eager and graph against graph.\n\n"
      "| model | batch | actrain eager | actrain graph | PyTorch eager | PyTorch graph | "
      "eager ratio | graph ratio |\n| --- | --- | --- | --- | --- | --- | --- | --- |\n");
  auto cell = [](const std::map<std::string, double>& m, const std::string& key, double rate) {
    auto it = m.find(key);
    if (it == m.end()) return std::pair<std::string, std::string>{"-", "-"};
    return std::pair<std::string, std::string>{fmt(it->second, 0), fmt(rate / it->second, 2) + "x"};
  };
  struct mdl {
    std::string key;
    std::vector<int> hidden;
  };
  for (auto& m : {mdl{"784-256-10", {256}}, mdl{"784-4096-4096-10", {4096, 4096}}}) {
    model_spec spec{"mlp", 784, 10, m.hidden};
    for (int batch : {64, 512}) {
      const auto rate = device_loop_rate(spec, batch, 300, tf32, false);
      const auto rate_graph = device_loop_rate(spec, batch, 300, tf32, true);
      const std::string key = m.key + "/" + std::to_string(batch);
      auto eager = cell(torch, key, rate), graph = cell(graphed, key, rate_graph);
      emit("| " + m.key + " | " + std::to_string(batch) + " | " + fmt(rate, 0) + " | " +
           (rate_graph > 0 ? fmt(rate_graph, 0) : "-") + " | " + eager.first + " | " +
           graph.first + " | " + eager.second + " | " + (rate_graph > 0 ? graph.second : "-") +
           " |\n");
    }
  }
  if (torch.empty()) emit("\nPyTorch with CUDA was not available in this run.\n");
  else if (graphed.empty()) emit("\nPyTorch's CUDA-graph run gave no figures in this run.\n");
  // End to end: one GPU worker against CPU shards, and the same job on a CPU worker.
  caf::actor_system_config cfg;
  prepare_config(cfg);
  caf::actor_system sys{cfg};
  job_spec job;
  job.model = model_spec{"mlp", 0, 0, {256}};
  job.data.kind = "fashion_mnist";
  job.optim.kind = "sgd";
  job.optim.lr = 0.1f;
  job.epochs = 2;
  job.eval_every = 1e9;
  auto data = std::make_shared<job_data>(load_job_data(job));
  fit_model_to_data(job, *data);
  emit(
      "\n| engine job (MLP 784-256-10, SGD 0.1, 2 epochs, 1 worker, 1 shard) | test accuracy | "
      "samples/s |\n| --- | --- | --- |\n");
  for (std::string dev : {"cuda:0", "cpu"}) {
    job.device = dev;
    auto res = run_job(sys, job, data);
    emit("| worker on " + dev + " | " + (res.ok ? fmt(res.test.accuracy, 4) : res.error) + " | " +
         fmt(res.samples_per_s, 0) + " |\n");
  }
  update_doc_section(benchmarks_doc_path(), tf32 ? "gpu-tf32" : "gpu", md.str());
  return 0;
}

}  // namespace actrain
