#pragma once
#include <memory>

#include <actrain/checkpoint.hpp>
#include <actrain/protocol.hpp>

namespace actrain {

/// Writes each checkpoint it gets into `store`'s folder (atomically, fsync'd) and answers with
/// the path, the bytes and the seconds it took; a failed write answers io_failed naming the file
/// and the system error, and the previous checkpoints stay. Blocks while it writes: spawn it
/// detached, so the disk never holds up the coordinator or the shards. It ends with `owner`.
checkpoint_writer_actor::behavior_type checkpoint_writer(checkpoint_writer_actor::pointer self,
                                                         std::shared_ptr<checkpoint_store> store,
                                                         caf::actor_addr owner);

}  // namespace actrain
