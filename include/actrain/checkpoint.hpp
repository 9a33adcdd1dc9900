#pragma once
// Checkpoints and the trained model as files: what they hold, and how they are written (one file
// each, replaced atomically and fsync'd) and read (checked before anything is parsed). CAF-free.
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <actrain/job.hpp>
#include <actrain/model.hpp>
#include <actrain/reference_trainer.hpp>

namespace actrain {

/// A file that is not a good checkpoint or model file: missing, torn, truncated, of another
/// format or job, or failing its checksum. The message names the file and what is wrong.
class checkpoint_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A saved shard: parameters, optimizer state, version (for checkpoints and restore).
struct shard_checkpoint {
  std::int32_t shard = 0;
  std::int64_t version = 0;
  /// sync: the global step these values follow (every shard of one checkpoint the same); -1 for
  /// a shard saved whenever it was asked (async and ssp).
  std::int64_t step = -1;
  std::vector<float> values;
  std::int64_t opt_steps = 0;
  std::vector<std::vector<float>> opt_slots;
};

/// Rows a worker was handed, walked `epochs` times (an assignment).
struct saved_work {
  std::int64_t begin = 0;
  std::int64_t end = 0;
  std::int64_t epochs = 0;
};

/// Where one worker stands: its assignments in the order it got them and the batches it had
/// computed from them at the cut. Resuming replays its readers (seeded: the same batches) past
/// `step - start_step` batches, so no RNG state needs saving.
struct saved_worker {
  std::int32_t worker = 0;
  std::int64_t start_step = 0;  ///< the step its first assignment started at
  std::int64_t step = 0;        ///< batches computed at the cut, counted from 0
  bool alive = true;
  std::vector<saved_work> work;
};

/// One consistent cut of a job: every shard, and the coordinator's progress.
struct checkpoint {
  std::string job;            ///< job_fingerprint() of the job it belongs to
  std::int64_t sequence = 0;  ///< numbers the checkpoints of a run, from 1
  /// sync: the global step of the cut (every shard after exactly this many steps); -1 in async
  /// and ssp, where each shard is saved as it stands and each worker at its last report.
  std::int64_t step = -1;
  std::int64_t samples = 0;             ///< rows trained before the cut (replayed on resume)
  double seconds = 0;                   ///< training time before the cut
  std::int64_t next_eval_samples = 0;   ///< async/ssp: where the next evaluation falls
  std::int64_t last_eval_step = 0;      ///< sync: the last evaluation point at or before the cut
  std::vector<progress_point> history;  ///< evaluations up to the cut
  std::vector<shard_checkpoint> shards;
  std::vector<saved_worker> workers;
};

/// What must match for a checkpoint to continue a job: model, optimizer, data, mode, workers,
/// shards, batch, epochs, seed (as one line of text). Another job's checkpoint is refused.
std::string job_fingerprint(const job_spec& job);

/// Writes `c` to `path` atomically: a temporary file beside it, fsync, rename, fsync of the
/// folder. A crash at any point leaves the old file or the new one, never a torn one. Returns the
/// bytes written. Throws checkpoint_error naming the path and the system error.
std::int64_t save_checkpoint(const std::string& path, const checkpoint& c);
/// Reads a checkpoint. The header (format, kind, version, job, payload length) and the payload's
/// crc32 are checked before anything is parsed, and no length read from the file is trusted
/// beyond the file's size. `job`, when not empty, must match the file's. Throws checkpoint_error.
checkpoint load_checkpoint(const std::string& path, const std::string& job = "");

/// A folder of a run's checkpoints, `checkpoint-<sequence>.bin`, keeping the newest `keep`.
/// Not thread-safe; one writer per folder.
class checkpoint_store {
 public:
  /// Creates `dir` if needed. Throws checkpoint_error when it cannot. REQUIRES: keep >= 1.
  explicit checkpoint_store(std::string dir, int keep = 3);
  const std::string& dir() const { return dir_; }
  /// Writes c as `checkpoint-<c.sequence>.bin` (atomically), then removes all but the newest
  /// `keep`. Returns the path written.
  std::string write(const checkpoint& c, std::int64_t* bytes = nullptr);
  /// The checkpoint files present, newest (highest sequence) first.
  std::vector<std::string> files() const;
  /// One more than the highest sequence present (1 in an empty folder): a run writing here
  /// numbers its checkpoints after any that are there, so the newest is always the last written.
  std::int64_t next_sequence() const;
  /// The newest checkpoint that reads back whole and belongs to `job`; each file refused on the
  /// way gets a line in `refused` ("<path>: <why>"). std::nullopt when none is good.
  std::optional<checkpoint> latest(const std::string& job,
                                   std::vector<std::string>* refused = nullptr) const;

 private:
  std::string dir_;
  int keep_;
};

/// A trained model: what builds it and its parameters, self-contained (no job file needed).
struct model_file {
  model_spec spec;  ///< kind, dims, hidden sizes, options (not the factory)
  std::vector<float> params;
  std::string job;          ///< the job's name, for the reader
  standardization scaling;  ///< how the training data was standardized (empty = not)
};
/// Writes the model atomically like save_checkpoint. Returns the bytes written.
std::int64_t save_model(const std::string& path, const model_file& m);
/// Reads a model file with the same checks as load_checkpoint, and that params holds exactly
/// num_params(spec) values. Throws checkpoint_error.
model_file load_model(const std::string& path);

}  // namespace actrain
