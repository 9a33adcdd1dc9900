#pragma once
// Cluster bootstrap: the coordinator node publishes a registrar; ps and worker nodes connect,
// present the cluster token, protocol version and a byte-order probe, receive their index, spawn
// their actors and join them. The coordinator then drives the job with the remote handles exactly
// as run_job() drives local ones. Registration uses only CAF's built-in types plus `tensor`, so
// it needs no type IDs beyond the actrain block.
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <caf/all.hpp>
#include <caf/io/all.hpp>

#include <actrain/engine.hpp>
#include <actrain/protocol.hpp>
#include <actrain/sparse_engine.hpp>

namespace actrain {

/// How big tensors are cut (the [cluster] chunk-* keys of a deployment).
struct chunk_options {
  /// 0: never chunk. 2 MiB x 2 led the 64 MB sweep of `actrain bench wire` (docs/benchmarks.md).
  std::size_t chunk_bytes = std::size_t{2} << 20;
  int window = 2;                            ///< chunks in flight per transfer
  std::chrono::milliseconds timeout{60000};  ///< every request between proxy and gateway
  std::size_t max_open = 64;  ///< incomplete incoming transfers kept (the oldest is dropped)
};

/// Throws std::invalid_argument naming the key when `o` cannot work (a chunk larger than one
/// message may carry, a window below 1).
void validate(const chunk_options& o);

/// Whether a job's slices are large enough that its nodes put gateways and proxies between
/// them (some slice exceeds chunk_bytes). Every node of a cluster decides the same way from the
/// same job and [cluster] settings.
bool needs_chunking(std::size_t max_slice_bytes, const chunk_options& o);

enum class node_role { coordinator, ps, worker };
/// "coordinator" | "ps" | "worker"; throws std::invalid_argument naming the value otherwise.
node_role parse_role(const std::string& s);
std::string to_string(node_role r);

/// TLS between nodes (CAF's OpenSSL module): every connection of a node configured with a
/// certificate is TLS with mutual authentication: each side presents its certificate and accepts
/// only a peer whose certificate the CA file signed (any certificate of that CA: give each
/// cluster a CA of its own). Such a node neither accepts nor opens a plaintext connection. The
/// cluster token is checked inside TLS. All three files are PEM; the key must be unencrypted
/// (protect it with file permissions).
struct tls_options {
  std::string certificate;  ///< this node's certificate chain ([cluster] tls-certificate)
  std::string key;          ///< its private key ([cluster] tls-key)
  std::string ca;           ///< the CA certificate(s) peers must be signed by ([cluster] tls-ca)
  bool enabled() const { return !certificate.empty() || !key.empty() || !ca.empty(); }
};

/// Throws std::invalid_argument naming the [cluster] key and OpenSSL's reason when TLS is
/// enabled but incomplete, a file cannot be read or parsed, the key is encrypted or does not
/// belong to the certificate, or the certificate is not signed by the CA (peers check it against
/// the same CA). Nothing to check when TLS is off.
void validate(const tls_options& o);

/// The most workers a cluster takes ([cluster] max-workers), joined ones included: worker
/// indexes stay below it.
constexpr int max_cluster_workers = 4096;

/// How nodes find and trust each other: the [cluster] group of a deployment INI file.
struct cluster_options {
  std::string host = "127.0.0.1";  ///< coordinator host; the coordinator binds to it
  std::uint16_t port = 0;          ///< coordinator port (0 there: any free port)
  std::string token;               ///< shared secret; nodes with another token are refused
  int ps_nodes = 1;                ///< ps nodes the coordinator waits for
  std::string name;                ///< this node's name in messages ("" = role and pid)
  std::string port_file;           ///< coordinator: write the bound port here (for launchers)
  /// Coordinator: workers in all, joined ones included, the job takes. Worker nodes that
  /// register beyond [job] workers join the running job (a share of the rows still to train);
  /// beyond this many they are refused. 0 = twice [job] workers; [job] workers = none join.
  /// At most max_cluster_workers.
  int max_workers = 0;
  /// Heartbeats on every connection (both sides must send them); a peer silent for
  /// connection_timeout is declared down, so a hung (SIGSTOPped) node is detected within about
  /// heartbeat + connection_timeout. The default tolerates a node stalled for a second or so (a
  /// loaded 2-core machine, a 0.7 s SIGSTOP) at the price of noticing a hung one after ~2 s; a
  /// crashed one is noticed at once (its sockets close). 500 ms detected a hang in ~530 ms.
  std::chrono::milliseconds heartbeat{50};
  std::chrono::milliseconds connection_timeout{2000};
  /// actrain's own liveness, on top of the connections' (every actor system's clock, so it is
  /// tested on CAF's test clock): every ps and worker node's beacon sends the coordinator node a
  /// heartbeat every node_timeout / 10 (at least `heartbeat` apart), from an actor on the node's
  /// scheduler. The coordinator takes a
  /// node silent for node_timeout as lost (its workers' rows go to others, its shards' replicas
  /// take over or the job fails; its actors are told to exit), and a node whose heartbeats go
  /// unanswered that long takes the coordinator as gone. Unlike the connection timeout it also
  /// finds a node whose connection lives while its actors do not run (a wedged scheduler, a
  /// route that swallows messages). 0 = off (the connection timeout alone).
  std::chrono::milliseconds node_timeout{2000};
  std::chrono::milliseconds join_timeout{30000};  ///< bound on connecting and on waiting for nodes
  /// ps and worker nodes: when the coordinator goes away mid-job (a crash or a lost link, not
  /// the job's end, failure or stop), wait this long for a coordinator at the same host:port and
  /// register with it again (fresh shards and workers: a coordinator restarted with --resume
  /// restores the shards from its checkpoint and the workers replay to its cut). 0 = exit.
  std::chrono::milliseconds rejoin_timeout{0};
  double worker_delay_s = 0;  ///< worker node: extra seconds per step (fault injection)
  /// Worker node: its worker runs on the node's scheduler instead of a thread of its own.
  /// Simulated nodes (actrain::testing) set it: CAF 0.17's actor_system destructor waits
  /// forever for a detached actor that something still references when it ends, which a few
  /// percent of simulated runs hit (docs/testing.md); a scheduled actor is not waited for. A
  /// worker whose shards it reaches over the bulk channel runs on the scheduler either way: the
  /// reader thread that delivers its weights runs it (docs/protocol.md, "The bulk channel").
  bool worker_on_scheduler = false;
  /// Slices larger than chunking.chunk_bytes cross nodes in chunks through a gateway on the
  /// shard's node and a proxy on the user's node (cluster/chunking.hpp). Every node of a cluster
  /// must use the same chunk-bytes (it decides whether the gateways and proxies exist).
  chunk_options chunking;
  /// Worker nodes open their own BASP connection to every ps node, so gradients and weights go
  /// worker <-> ps directly instead of through the coordinator node (CAF 0.17 routes messages to a
  /// node it has no connection to through the node that introduced it). A ps node then listens on
  /// listen_host:listen_port (middleman().open: a BASP port without a published actor) and tells
  /// the registrar where to reach it. Off on a ps node: it opens nothing and workers route through
  /// the coordinator; off on a worker node: it does not dial. A dial that fails falls back to the
  /// route through the coordinator (with a line on stderr).
  bool direct_connections = true;
  /// Workers' pulls and pushes to a ps node's shards go over a TCP connection of their own
  /// beside BASP (cluster/bulk.hpp, docs/protocol.md "The bulk channel"): the tensor goes from
  /// its buffer to the socket and from the socket into a recycled buffer, without BASP's copies
  /// and zero fill. The ps node listens on listen_host:bulk_port; the cluster token opens each
  /// connection. Only with direct_connections, and not with TLS (the channel has no TLS: such
  /// nodes keep BASP, which CAF's OpenSSL module encrypts), replicas, or compressed gradients;
  /// a worker that cannot connect keeps BASP for that shard (with a line on stderr).
  bool bulk_channel = true;
  std::uint16_t bulk_port = 0;  ///< ps node: the bulk channel's port (0 = any free port)
  /// ps node: address its peer port binds to. "" = `host` when that is a loopback address (a
  /// one-machine cluster), else every interface.
  std::string listen_host;
  std::uint16_t listen_port = 0;  ///< ps node: peer port (0 = any free port)
  /// ps node: the address workers dial. "" = listen_host when that names one address, else the
  /// address the coordinator sees this node's connection come from.
  std::string advertise_host;
  tls_options tls;  ///< TLS between nodes; off when no file is named
  /// Hot replicas of the shards (chain replication, 0 or 1): with 1, every ps node also holds a
  /// replica of the shards of the ps node registered before it (ps 0: of the last one). A
  /// primary answers a push once its replica applied the same update, so a ps node that goes
  /// down loses no acknowledged update: its shards' replicas take over and the job goes on.
  /// Needs ps-nodes >= 2 and an async job with neither chunked slices nor buffered pushes;
  /// every node of the cluster must say the same (the coordinator waits for the replicas).
  int replicas = 0;
};

/// Throws std::invalid_argument naming the key when `opts` asks for replicas the job cannot
/// have (see cluster_options::replicas).
void validate_replicas(const job_spec& job, const cluster_options& opts);

/// Where a ps node's peer port binds: "" = every interface (see cluster_options::listen_host).
std::string ps_listen_address(const cluster_options& opts);

/// prepare_config() plus the middleman: loaded, one multiplexer thread (middleman.workers=0),
/// heartbeats and the connection timeout of `opts`; with opts.tls enabled, validate(opts.tls)
/// (throws) and CAF's OpenSSL module loaded with its files. Call once per config, before the
/// system.
void prepare_cluster_config(caf::actor_system_config& cfg, const cluster_options& opts);

/// A small tensor whose raw bytes differ under any byte swap: nodes send it when they register,
/// and each side checks the copy it receives (tensor values cross the wire in host byte order).
tensor byte_order_probe();
bool is_byte_order_probe(const tensor& t);

/// Checks what a node presents; returns an actrain error (bad_token, version_mismatch) whose
/// message says what differs, or no error.
caf::error check_hello(const std::string& expected_token, const std::string& role,
                       const std::string& token, std::uint32_t version, const tensor& probe);

/// Lets another thread stop a node running in this process (simulated nodes, signal handlers).
/// Thread-safe.
class node_control {
 public:
  /// Records a local actor of the node: kill() sends it exit(kill). Keeps only its address: a
  /// strong reference would keep a detached actor's thread waiting at shutdown.
  void add(const caf::actor& a);
  /// Runs `f` on kill() (or at once if already killed).
  void on_kill(std::function<void()> f);
  void kill();
  bool killed() const;
  /// Sets what stop() does instead of kill() (the coordinator node: end the job as stopped,
  /// after a last checkpoint). Replaces an earlier one.
  void on_stop(std::function<void(const std::string&)> f);
  /// A graceful stop (SIGTERM): the on_stop function with `why`, or kill() when none is set.
  void stop(const std::string& why);

 private:
  mutable std::mutex mtx_;
  std::vector<caf::actor_addr> actors_;
  std::vector<std::function<void()>> stoppers_;
  std::function<void(const std::string&)> graceful_;
  bool killed_ = false;
};

/// Callbacks of a coordinator node (called from CAF threads; keep them short).
struct node_hooks {
  engine_hooks engine;
  std::function<void(std::uint16_t)> on_listening;   ///< the registrar is published at this port
  std::function<void(const std::string&)> on_event;  ///< joins, refusals, departures
  std::shared_ptr<node_control> control;             ///< optional: lets others stop the node
};

/// What a ps or worker node ends with.
struct node_outcome {
  bool ok = false;
  std::string message;      ///< why it failed, or how it ended
  std::int32_t index = -1;  ///< the index it was assigned
  /// The coordinator ended the job as failed and told this node's actors why: `message` is
  /// "the job failed: <its cause>". False for a refused or unreachable node.
  bool job_failed = false;
  /// The coordinator went away while the job ran (no end, failure or stop was told): `ok`, with
  /// "the coordinator went away; local actors stopped" (rejoin_timeout 0).
  bool coordinator_lost = false;
  /// The coordinator ended the job as stopped (a signal; it can resume): `message` is "the job
  /// was stopped: <why>".
  bool job_stopped = false;
};

/// Coordinator node: publishes the registrar on opts.host:opts.port, waits (bounded by
/// join_timeout) for opts.ps_nodes ps nodes holding job.shards shards and job.workers worker
/// nodes, runs the job on their handles, stops every node's actors, unpublishes and returns.
/// Blocks; `sys` must come from a config passed through prepare_cluster_config().
/// `resume`: the job continues from that checkpoint (a restarted cluster; coordinator_config).
engine_result run_coordinator_node(caf::actor_system& sys, const job_spec& job,
                                   std::shared_ptr<const job_data> data,
                                   const cluster_options& opts, node_hooks hooks = {},
                                   std::shared_ptr<const checkpoint> resume = nullptr);

/// ps node: registers, spawns the shards s with s % ps_nodes == its index, joins them, and waits
/// until they are stopped or the coordinator is gone. `job` must have its model dims fitted.
node_outcome run_ps_node(caf::actor_system& sys, const job_spec& job, const cluster_options& opts,
                         std::shared_ptr<node_control> control = nullptr);

/// Worker node: registers, spawns one worker with its assigned id, joins it, and waits until it
/// is stopped or the coordinator is gone.
node_outcome run_worker_node(caf::actor_system& sys, const job_spec& job,
                             std::shared_ptr<const job_data> data, const cluster_options& opts,
                             std::shared_ptr<node_control> control = nullptr);

/// Sparse jobs (include/actrain/sparse_engine.hpp) across nodes. The coordinator node registers
/// job.shards table shards on opts.ps_nodes ps nodes and job.workers worker nodes exactly as for a
/// dense job, keeps the model's dense parameters (its bias) and, in sync mode, the barriers, and
/// drives the job (a lost worker node's rows go to a survivor); every node loads the same data
/// from the same configuration (the coordinator uses the training set's row count and the test
/// set). REQUIRES: prepare_sparse_job(job, ...) ran on every node with the same data.
sparse_result run_sparse_coordinator_node(caf::actor_system& sys, const sparse_job& job,
                                          std::int64_t train_rows, const sparse_dataset& test,
                                          const cluster_options& opts, node_hooks hooks = {});
/// ps node of a sparse job: the table shards s with s % ps_nodes == its index.
node_outcome run_sparse_ps_node(caf::actor_system& sys, const sparse_job& job,
                                const cluster_options& opts,
                                std::shared_ptr<node_control> control = nullptr);
/// Worker node of a sparse job: one sparse worker over `train`.
node_outcome run_sparse_worker_node(caf::actor_system& sys, const sparse_job& job,
                                    std::shared_ptr<const sparse_dataset> train,
                                    const cluster_options& opts,
                                    std::shared_ptr<node_control> control = nullptr);

/// Connects to the registrar at opts.host:opts.port, retrying until join_timeout.
caf::expected<registrar_actor> connect_registrar(caf::actor_system& sys,
                                                 const cluster_options& opts);

/// Largest shard slice of `job`, in bytes. Slices above the [cluster] chunk-bytes travel in chunks.
std::size_t max_slice_bytes(const job_spec& job);
/// Whether the nodes of this job put gateways and proxies between them (needs_chunking()).
bool uses_chunking(const job_spec& job, const cluster_options& opts);
/// The size of each shard's slice of `job`, in floats.
std::vector<std::int64_t> slice_sizes(const job_spec& job);

}  // namespace actrain
