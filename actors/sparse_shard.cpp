#include "actors/sparse_shard.hpp"

#include <cmath>
#include <string>

#include "tensor/codec.hpp"

namespace actrain {

caf::error check_rows(const sparse_shard_config& cfg, std::int32_t worker,
                      const std::vector<std::uint64_t>& ids, const std::vector<float>* values,
                      const std::vector<std::int64_t>* base_versions) {
  auto who = "sparse shard " + std::to_string(cfg.index) + ": from worker " +
             std::to_string(worker) + ": ";
  for (auto id : ids) {
    if (id >= cfg.table.rows)
      return make_error(errc::bad_message, who + "row id " + std::to_string(id) +
                                               " is outside the table (" +
                                               std::to_string(cfg.table.rows) + " rows)");
    if (table_shard_of(cfg.table, cfg.shards, id) != cfg.index)
      return make_error(errc::bad_message,
                        who + "row id " + std::to_string(id) + " belongs to another shard");
  }
  if (values) {
    auto want = ids.size() * static_cast<std::size_t>(cfg.table.dim);
    if (values->size() != want)
      return make_error(errc::bad_length, who + std::to_string(values->size()) +
                                              " gradient values for " + std::to_string(ids.size()) +
                                              " rows of " + std::to_string(cfg.table.dim));
    for (float v : *values)
      if (!std::isfinite(v))
        return make_error(errc::non_finite, who + "a row gradient holds NaN or infinity");
  }
  if (base_versions && base_versions->size() != ids.size())
    return make_error(errc::bad_length, who + std::to_string(base_versions->size()) +
                                            " base versions for " + std::to_string(ids.size()) +
                                            " rows");
  return caf::none;
}

caf::error take_row_values(row_gradient& g, int dim) {
  if (g.half_values.empty()) return caf::none;
  auto want = g.ids.size() * static_cast<std::size_t>(dim);
  if (!g.values.empty() || g.half_values.size() != want)
    return make_error(errc::bad_length,
                      "row gradient from worker " + std::to_string(g.worker) + ": " +
                          std::to_string(g.half_values.size()) + " half-precision values for " +
                          std::to_string(g.ids.size()) + " rows of " + std::to_string(dim) +
                          (g.values.empty() ? "" : ", and float values too"));
  g.values.resize(want);
  decode_half(g.half_values.data(), want, g.values.data());
  g.half_values.clear();
  return caf::none;
}

sparse_shard_actor::behavior_type sparse_shard(
    sparse_shard_actor::stateful_pointer<sparse_shard_state> self, sparse_shard_config cfg) {
  validate(cfg.table);
  validate(cfg.optim);
  auto& st = self->state;
  st.cfg = std::move(cfg);
  st.rows = std::make_unique<row_table>(st.cfg.table, st.cfg.optim);
  st.stats.shard = st.cfg.index;
  return {
      [self](pull_atom, row_request& r) -> caf::result<row_block> {
        auto& st = self->state;
        if (auto err = check_rows(st.cfg, r.worker, r.ids, nullptr, nullptr)) {
          st.stats.rejected += 1;
          return err;
        }
        row_block b;
        b.shard = st.cfg.index;
        b.version = st.stats.version;
        b.values.resize(r.ids.size() * static_cast<std::size_t>(st.cfg.table.dim));
        b.row_versions.resize(r.ids.size());
        if (r.step < 0)  // evaluation: reads the table without growing it
          st.rows->peek(r.ids.data(), r.ids.size(), b.values.data());
        else
          st.rows->pull(r.ids.data(), r.ids.size(), b.values.data(), b.row_versions.data());
        st.stats.pulls += 1;
        if (r.step < 0) return b;  // evaluation: not training traffic
        st.stats.rows_pulled += static_cast<std::int64_t>(r.ids.size());
        st.stats.bytes_in += static_cast<std::int64_t>(r.ids.size() * 8);
        st.stats.bytes_out += static_cast<std::int64_t>(b.values.size() * 4 + r.ids.size() * 8);
        return b;
      },
      [self](push_atom, row_gradient& g) -> caf::result<push_ack> {
        auto& st = self->state;
        auto payload = g.ids.size() * 16 + g.values.size() * 4 + g.half_values.size() * 2;
        if (auto err = take_row_values(g, st.cfg.table.dim)) {
          st.stats.rejected += 1;
          return err;
        }
        if (auto err = check_rows(st.cfg, g.worker, g.ids, &g.values, &g.base_versions)) {
          st.stats.rejected += 1;
          return err;
        }
        auto n = g.ids.size();
        auto stale = st.rows->push(g.ids.data(), n, g.values.data(), g.base_versions.data());
        st.stats.version += 1;
        st.stats.pushes += 1;
        st.stats.rows_pushed += static_cast<std::int64_t>(n);
        st.stats.bytes_in += static_cast<std::int64_t>(payload);
        st.staleness_sum += static_cast<double>(stale);
        auto mean_row_staleness = n > 0 ? stale / static_cast<std::int64_t>(n) : 0;
        return push_ack{st.stats.version, mean_row_staleness, true};
      },
      [self](stats_atom) -> table_stats {
        auto& st = self->state;
        auto s = st.stats;
        s.rows_held = static_cast<std::int64_t>(st.rows->size());
        s.evicted = st.rows->evicted();
        s.memory_bytes = static_cast<std::int64_t>(st.rows->memory_bytes());
        s.mean_staleness =
            s.rows_pushed > 0 ? st.staleness_sum / static_cast<double>(s.rows_pushed) : 0;
        for (auto& [id, count] : st.rows->hottest(st.cfg.hot_rows)) {
          s.hot_ids.push_back(id);
          s.hot_counts.push_back(count);
        }
        return s;
      },
      [](leave_atom, std::int32_t) {},
  };
}

}  // namespace actrain
