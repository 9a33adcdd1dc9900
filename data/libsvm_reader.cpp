// LIBSVM / SVMlight text: `label id:value id:value ...` per line. Blank lines are skipped, `#`
// starts a comment, spaces, tabs and CRLF line ends are accepted. The file is read in blocks and
// every vector grows only with what was read, so memory is bounded by the file's size (and
// max_entries), never by a number written in it.
#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string_view>
#include <utility>

#include <actrain/data.hpp>
#include <actrain/sparse_data.hpp>

namespace actrain {

namespace {

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

/// A token as it appears in an error message: at most 40 bytes, unprintable bytes as '?'.
std::string shown(std::string_view s) {
  constexpr std::size_t limit = 40;
  std::string out(s.substr(0, limit));
  for (char& c : out)
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) c = '?';
  if (s.size() > limit) out += "...";
  return out;
}

struct file_closer {
  void operator()(std::FILE* f) const { std::fclose(f); }
};

/// The lines of a file, read in blocks; the buffer holds one block plus the longest line.
class line_reader {
 public:
  explicit line_reader(const std::string& path) : path_(path) {
    errno = 0;
    f_.reset(std::fopen(path.c_str(), "rb"));
    if (!f_) throw data_error(path + ": cannot open: " + std::strerror(errno));
  }

  /// The next line without its '\n' (valid until the next call); false at the end of the file.
  bool next(std::string_view& line) {
    for (;;) {
      const char* begin = buf_.data() + pos_;
      const auto* nl = static_cast<const char*>(std::memchr(begin, '\n', buf_.size() - pos_));
      if (nl) {
        line = std::string_view(begin, static_cast<std::size_t>(nl - begin));
        pos_ += line.size() + 1;
        return true;
      }
      if (eof_) {
        if (pos_ == buf_.size()) return false;
        line = std::string_view(begin, buf_.size() - pos_);
        pos_ = buf_.size();
        return true;
      }
      fill();
    }
  }

 private:
  void fill() {
    // Blocks grow from 64 KiB to 1 MiB: small files cost little, large ones few reads.
    const std::size_t block = block_;
    block_ = std::min<std::size_t>(block_ * 2, 1 << 20);
    buf_.erase(0, pos_);
    pos_ = 0;
    const std::size_t old = buf_.size();
    buf_.resize(old + block);
    errno = 0;
    const std::size_t got = std::fread(&buf_[old], 1, block, f_.get());
    buf_.resize(old + got);
    if (got < block) {
      if (std::ferror(f_.get())) throw data_error(path_ + ": read error: " + std::strerror(errno));
      eof_ = true;
    }
  }

  const std::string& path_;
  std::unique_ptr<std::FILE, file_closer> f_;
  std::string buf_;
  std::size_t pos_ = 0;
  std::size_t block_ = 1 << 16;
  bool eof_ = false;
};

/// Where read_libsvm is, to name it in errors.
struct libsvm_context {
  const std::string& path;
  std::int64_t line = 0;
  [[noreturn]] void fail(const std::string& what) const {
    throw data_error(path + ":" + std::to_string(line) + ": " + what);
  }
};

/// One entry of the line being read; `position` keeps the file's order through the sorts.
struct entry {
  std::uint64_t id;
  float value;
  std::size_t position;
};

float parse_label(std::string_view s, const libsvm_context& at) {
  if (s == "1" || s == "+1") return 1;
  if (s == "0" || s == "-1") return 0;
  at.fail("label '" + shown(s) + "' is not 1, +1, 0 or -1");
}

std::uint64_t parse_id(std::string_view s, const libsvm_context& at) {
  std::uint64_t id = 0;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), id);
  if (r.ec == std::errc::result_out_of_range)
    at.fail("id '" + shown(s) + "' is out of range (more than 64 bits)");
  if (s.empty() || r.ec != std::errc() || r.ptr != s.data() + s.size())
    at.fail("id '" + shown(s) + "' is not a non-negative integer");
  return id;
}

/// The whole text must be a finite float (std::from_chars: no locale, no partial parses).
float parse_value(std::string_view s, std::uint64_t id, const libsvm_context& at) {
  if (s == "1") return 1;  // one-hot files: most values
  std::string_view digits = s;
  if (!digits.empty() && digits.front() == '+') digits.remove_prefix(1);
  float v = 0;
  const auto r = std::from_chars(digits.data(), digits.data() + digits.size(), v);
  auto fail = [&](const char* what) {
    at.fail("value '" + shown(s) + "' of id " + std::to_string(id) + what);
  };
  if (r.ec == std::errc::result_out_of_range) fail(" is out of float range");
  if (s.empty() || r.ec != std::errc() || r.ptr != digits.data() + digits.size())
    fail(" is not a number");
  if (!std::isfinite(v)) fail(" is not finite");
  return v;
}

bool by_id_then_position(const entry& a, const entry& b) {
  return a.id != b.id ? a.id < b.id : a.position < b.position;
}

/// Refuses an id written twice in the line. Sorts only when the ids are not already ascending
/// (LIBSVM's convention, and what write_libsvm of ascending ids writes).
void check_distinct(const std::vector<entry>& line, std::vector<entry>& scratch,
                    const libsvm_context& at) {
  bool ascending = true;
  for (std::size_t i = 1; i < line.size() && ascending; ++i)
    ascending = line[i - 1].id < line[i].id;
  if (ascending) return;
  scratch = line;
  std::sort(scratch.begin(), scratch.end(), by_id_then_position);
  for (std::size_t i = 1; i < scratch.size(); ++i)
    if (scratch[i - 1].id == scratch[i].id)
      at.fail("id " + std::to_string(scratch[i].id) + " repeats within the line");
}

/// Hashes the line's ids into `buckets` and merges the ones that collide: one entry per bucket,
/// at the first colliding entry's place, its value the sum of theirs (in the file's order).
/// Refuses a sum beyond float's range.
void hash_and_merge(std::vector<entry>& line, std::vector<entry>& scratch, std::uint64_t buckets,
                    const libsvm_context& at) {
  for (entry& e : line) e.id %= buckets;
  if (line.size() < 2) return;
  scratch = line;
  std::sort(scratch.begin(), scratch.end(), by_id_then_position);
  bool merged = false;
  for (std::size_t i = 1; i < scratch.size(); ++i)
    if (scratch[i].id == scratch[i - 1].id) {
      merged = true;
      break;
    }
  if (!merged) return;
  std::size_t kept = 0;
  for (std::size_t i = 0; i < scratch.size(); ++i) {
    if (kept == 0 || scratch[kept - 1].id != scratch[i].id) {
      scratch[kept++] = scratch[i];
      continue;
    }
    scratch[kept - 1].value += scratch[i].value;
    if (!std::isfinite(scratch[kept - 1].value))
      at.fail("the values hashed into bucket " + std::to_string(scratch[i].id) +
              " add up to more than float's range");
  }
  scratch.resize(kept);
  std::sort(scratch.begin(), scratch.end(),
            [](const entry& a, const entry& b) { return a.position < b.position; });
  line.swap(scratch);
}

}  // namespace

sparse_dataset read_libsvm(const std::string& path, const libsvm_options& opts) {
  if (opts.max_entries < 0)
    throw data_error(path + ": libsvm_options.max_entries must be >= 0, got " +
                     std::to_string(opts.max_entries));
  // Without hashing, id_space = largest id + 1 must fit, and ids index int64 tables.
  constexpr std::uint64_t max_plain_id = (std::uint64_t{1} << 63) - 1;
  const bool hashing = opts.hash_buckets > 0;
  line_reader in(path);
  libsvm_context at{path};
  sparse_dataset d;
  std::vector<entry> line, scratch;
  std::int64_t entries_read = 0;  // before merging: bounds the per-line vectors too
  std::uint64_t largest = 0;
  bool all_ones = true;  // d.values stays empty until a value other than 1 is stored
  std::string_view text;
  while (in.next(text)) {
    ++at.line;
    text = text.substr(0, text.find('#'));
    std::size_t i = 0;
    auto next_token = [&](std::string_view& token) {
      while (i < text.size() && is_space(text[i])) ++i;
      const std::size_t start = i;
      while (i < text.size() && !is_space(text[i])) ++i;
      token = text.substr(start, i - start);
      return !token.empty();
    };
    std::string_view token;
    if (!next_token(token)) continue;  // blank or a comment
    const float label = parse_label(token, at);
    line.clear();
    while (next_token(token)) {
      if (++entries_read > opts.max_entries)
        at.fail("more than " + std::to_string(opts.max_entries) + " entries");
      const std::size_t colon = token.find(':');
      if (colon == std::string_view::npos)
        at.fail("token '" + shown(token) + "' has no ':' (expected id:value)");
      const std::uint64_t id = parse_id(token.substr(0, colon), at);
      if (!hashing && id > max_plain_id)
        at.fail("id " + std::to_string(id) + " is too large (ids must be < 2^63)");
      line.push_back(entry{id, parse_value(token.substr(colon + 1), id, at), line.size()});
    }
    check_distinct(line, scratch, at);
    if (hashing) hash_and_merge(line, scratch, opts.hash_buckets, at);
    for (const entry& e : line) {
      if (all_ones && e.value != 1.f) {
        d.values.assign(d.ids.size(), 1.f);
        all_ones = false;
      }
      d.ids.push_back(e.id);
      if (!all_ones) d.values.push_back(e.value);
      largest = std::max(largest, e.id);
    }
    d.y.push_back(label);
    d.offsets.push_back(static_cast<std::int64_t>(d.ids.size()));
    ++d.rows;
  }
  if (d.rows == 0) throw data_error(path + ": no rows (the file is empty, blank or all comments)");
  d.id_space = hashing ? opts.hash_buckets : d.ids.empty() ? 0 : largest + 1;
  return d;
}

void write_libsvm(const sparse_dataset& d, const std::string& path) {
  const auto rows = static_cast<std::size_t>(d.rows);
  const auto bad = [](const std::string& what) {
    throw std::invalid_argument("write_libsvm: " + what);
  };
  if (d.rows < 0 || d.offsets.size() != rows + 1 || d.offsets[0] != 0 || d.y.size() != rows)
    bad("offsets must have rows + 1 entries from 0 and y one label per row");
  if (static_cast<std::uint64_t>(d.nnz()) != d.ids.size() ||
      (!d.values.empty() && d.values.size() != d.ids.size()))
    bad("ids (and values, when not empty) must have offsets.back() entries");
  for (std::size_t r = 0; r < rows; ++r) {
    if (d.offsets[r] > d.offsets[r + 1])
      bad("offsets must not decrease (row " + std::to_string(r) + ")");
    if (d.y[r] != 0.f && d.y[r] != 1.f)
      bad("row " + std::to_string(r) + " has label " + std::to_string(d.y[r]) + ", not 0 or 1");
  }
  errno = 0;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out)
    throw data_error(path + ": cannot open for writing" +
                     (errno ? std::string(": ") + std::strerror(errno) : std::string()));
  std::string buf;
  char num[32];
  auto append = [&](std::to_chars_result r) { buf.append(num, r.ptr); };
  for (std::size_t r = 0; r < rows; ++r) {
    const auto begin = d.offsets[r], end = d.offsets[r + 1];
    buf += d.y[r] == 1.f ? '1' : '0';
    for (std::int64_t e = begin; e < end; ++e) {
      buf += ' ';
      append(std::to_chars(num, num + sizeof num, d.ids[static_cast<std::size_t>(e)]));
      buf += ':';
      // The general format with 9 significant digits (printf's %.9g): every float reads back
      // exactly.
      if (d.values.empty())
        buf += '1';
      else
        append(std::to_chars(num, num + sizeof num, d.values[static_cast<std::size_t>(e)],
                             std::chars_format::general, 9));
    }
    buf += '\n';
    if (buf.size() >= (1 << 20)) {
      out.write(buf.data(), static_cast<std::streamsize>(buf.size()));
      buf.clear();
    }
  }
  out.write(buf.data(), static_cast<std::streamsize>(buf.size()));
  out.close();
  if (!out) throw data_error(path + ": write failed");
}

}  // namespace actrain
