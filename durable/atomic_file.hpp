#pragma once
#include <string>

namespace actrain::durable {

/// Replaces `path` with `bytes` so that a crash at any moment leaves either the old file or the
/// new one: written to a temporary file in the same folder, fsync'd, renamed over `path`, and the
/// folder fsync'd so the rename itself is durable. Throws checkpoint_error naming the path and
/// the system error (the temporary file is removed).
void write_atomically(const std::string& path, const std::string& bytes);

/// fsync of a folder (after entries were added, renamed or removed). Throws checkpoint_error.
void sync_folder(const std::string& dir);

}  // namespace actrain::durable
