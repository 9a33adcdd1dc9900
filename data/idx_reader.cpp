// IDX files (LeCun's MNIST format, also Fashion-MNIST's) through zlib's gz* API, which reads
// gzip and plain files alike. Every error names the file and what is wrong with it.
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>

#include "data/readers.hpp"

namespace actrain {

namespace {

constexpr std::uint32_t image_magic = 0x00000803;  // unsigned bytes, 3 dimensions
constexpr std::uint32_t label_magic = 0x00000801;  // unsigned bytes, 1 dimension
constexpr int fashion_classes = 10;

struct gz_closer {
  void operator()(gzFile_s* f) const { gzclose(f); }
};
using gz_ptr = std::unique_ptr<gzFile_s, gz_closer>;

/// Up to `want` bytes of a gz-or-plain file: the header first, then the payload, so that a
/// corrupt header cannot make us allocate more than the file really holds.
class gz_reader {
 public:
  explicit gz_reader(const std::string& path) : path_(path) {
    errno = 0;
    f_.reset(gzopen(path.c_str(), "rb"));
    if (!f_)
      throw data_error(
          path + ": cannot open: " + (errno ? std::strerror(errno) : "out of memory in zlib"));
    gzbuffer(f_.get(), 1 << 18);
  }

  /// Appends up to `want` bytes to `out`; fewer only at the end of the data. Throws on a
  /// corrupt stream; a gzip stream cut short is reported by truncated_stream() instead.
  void read(std::vector<unsigned char>& out, std::uint64_t want) {
    constexpr std::uint64_t chunk = 1 << 22;
    while (want > 0) {
      const std::size_t old = out.size();
      const auto n = static_cast<unsigned>(std::min(want, chunk));
      out.resize(old + n);
      const int got = gzread(f_.get(), out.data() + old, n);
      if (got < 0) {
        int errnum = 0;
        const char* msg = gzerror(f_.get(), &errnum);
        throw data_error(path_ + ": corrupt gzip data (" + msg + ")");
      }
      out.resize(old + static_cast<std::size_t>(got));
      if (static_cast<unsigned>(got) < n) return;
      want -= n;
    }
  }

  /// True when the data ended because a gzip stream was cut off (zlib's Z_BUF_ERROR).
  bool truncated_stream() {
    int errnum = 0;
    gzerror(f_.get(), &errnum);
    return errnum == Z_BUF_ERROR;
  }

 private:
  std::string path_;
  gz_ptr f_;
};

std::uint32_t big_endian(const unsigned char* p) {
  return std::uint32_t(p[0]) << 24 | std::uint32_t(p[1]) << 16 | std::uint32_t(p[2]) << 8 | p[3];
}

std::string hex(std::uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", v);
  return buf;
}

/// Reads an IDX file of unsigned bytes with `dims` dimensions; returns the payload and the
/// dimension sizes. Checks the magic number and that the length matches the header exactly.
std::vector<unsigned char> read_idx_file(const std::string& path, std::uint32_t magic, int dims,
                                         const char* what, std::vector<std::uint32_t>& shape) {
  gz_reader in(path);
  const std::size_t header_len = 4 + 4 * static_cast<std::size_t>(dims);
  std::vector<unsigned char> header;
  in.read(header, header_len);
  if (header.size() < 4)
    throw data_error(path + ": truncated: " + std::to_string(header.size()) +
                     " bytes, too short for an IDX magic number");
  const std::uint32_t got_magic = big_endian(header.data());
  if (got_magic != magic)
    throw data_error(path + ": bad magic number " + hex(got_magic) + ", expected " + hex(magic) +
                     " (an IDX " + what + " file)");
  if (header.size() < header_len)
    throw data_error(path + ": truncated: header has " + std::to_string(header.size()) +
                     " bytes, expected " + std::to_string(header_len));
  shape.clear();
  std::uint64_t expected = 1;
  for (int i = 0; i < dims; ++i) {
    shape.push_back(big_endian(header.data() + 4 + 4 * i));
    if (shape.back() != 0 && expected > (std::uint64_t{1} << 48) / shape.back())
      throw data_error(path + ": corrupt header: dimensions multiply to more than 2^48 bytes");
    expected *= shape.back();
  }
  std::vector<unsigned char> data;
  data.reserve(static_cast<std::size_t>(std::min<std::uint64_t>(expected, 1u << 26)));
  in.read(data, expected + 1);  // one extra byte tells "too long" from "exact"
  if (data.size() < expected)
    throw data_error(path + ": truncated" +
                     (in.truncated_stream() ? std::string(" (gzip stream ends early)") : "") +
                     ": expected " + std::to_string(expected) + " bytes of " + what +
                     " data, got " + std::to_string(data.size()));
  if (data.size() > expected)
    throw data_error(path + ": trailing bytes after the " + std::to_string(expected) +
                     " bytes of " + what + " data the header announces");
  return data;
}

}  // namespace

dataset read_idx(const std::string& images_path, const std::string& labels_path) {
  std::vector<std::uint32_t> ishape, lshape;
  const auto pixels = read_idx_file(images_path, image_magic, 3, "pixel", ishape);
  const std::uint64_t features = std::uint64_t(ishape[1]) * ishape[2];
  if (features == 0 || features > 0x7fffffff)  // dataset::features is an int
    throw data_error(images_path + ": bad image size " + std::to_string(ishape[1]) + "x" +
                     std::to_string(ishape[2]));
  const auto labels = read_idx_file(labels_path, label_magic, 1, "label", lshape);
  if (ishape[0] != lshape[0])
    throw data_error("image and label counts differ: " + images_path + " has " +
                     std::to_string(ishape[0]) + " images but " + labels_path + " has " +
                     std::to_string(lshape[0]) + " labels");

  dataset d;
  d.rows = ishape[0];
  d.features = static_cast<int>(features);
  d.num_classes = fashion_classes;
  d.x.resize(pixels.size());
  for (std::size_t i = 0; i < pixels.size(); ++i) d.x[i] = pixels[i] / 255.f;
  d.y.resize(labels.size());
  for (std::size_t i = 0; i < labels.size(); ++i) {
    if (labels[i] >= fashion_classes)
      throw data_error(labels_path + ": label " + std::to_string(labels[i]) + " of item " +
                       std::to_string(i) + " is out of range [0, " +
                       std::to_string(fashion_classes) + ")");
    d.y[i] = labels[i];
  }
  return d;
}

std::string default_fashion_mnist_dir() {
  const char* env = std::getenv("ACTRAIN_FASHION_MNIST");
  return env && *env ? env : "/usr/share/datasets/fashion-mnist";
}

namespace {

/// dir/name.gz if it exists, else dir/name; the error names both.
std::string find_idx(const std::string& dir, const std::string& name) {
  namespace fs = std::filesystem;
  const fs::path base = fs::path(dir) / name;
  std::error_code ec;
  if (fs::exists(base.string() + ".gz", ec)) return base.string() + ".gz";
  if (fs::exists(base, ec)) return base.string();
  throw data_error(base.string() + ".gz: cannot open: no such file (nor " + base.string() +
                   "); install dataset-fashion-mnist or set ACTRAIN_FASHION_MNIST");
}

}  // namespace

train_test load_fashion_mnist(const std::string& dir) {
  // Resolved one by one so the first missing file is the one reported.
  const std::string train_images = find_idx(dir, "train-images-idx3-ubyte");
  const std::string train_labels = find_idx(dir, "train-labels-idx1-ubyte");
  const std::string test_images = find_idx(dir, "t10k-images-idx3-ubyte");
  const std::string test_labels = find_idx(dir, "t10k-labels-idx1-ubyte");
  train_test out;
  out.train = read_idx(train_images, train_labels);
  out.test = read_idx(test_images, test_labels);
  return out;
}

}  // namespace actrain
