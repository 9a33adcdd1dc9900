#include "actors/checkpointer.hpp"

#include <chrono>

namespace actrain {

checkpoint_writer_actor::behavior_type checkpoint_writer(checkpoint_writer_actor::pointer self,
                                                         std::shared_ptr<checkpoint_store> store,
                                                         caf::actor_addr owner) {
  if (auto o = caf::actor_cast<caf::actor>(owner)) self->monitor(o);
  self->set_down_handler([self](const caf::down_msg&) { self->quit(); });
  return {
      [store](const checkpoint& c) -> caf::result<std::string, std::int64_t, double> {
        auto t0 = std::chrono::steady_clock::now();
        try {
          std::int64_t bytes = 0;
          auto path = store->write(c, &bytes);
          auto s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
          return {path, bytes, s};
        } catch (const std::exception& e) {
          return make_error(errc::io_failed, std::string("checkpoint not written: ") + e.what());
        }
      },
  };
}

}  // namespace actrain
