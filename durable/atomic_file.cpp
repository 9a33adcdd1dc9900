#include "durable/atomic_file.hpp"

#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <unistd.h>

#include <actrain/checkpoint.hpp>

namespace actrain::durable {

namespace {

[[noreturn]] void fail(const std::string& what, const std::string& path) {
  throw checkpoint_error(path + ": " + what + ": " + std::strerror(errno));
}

std::string folder_of(const std::string& path) {
  auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

}  // namespace

void sync_folder(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) fail("cannot open the folder", dir);
  if (::fsync(fd) != 0) {
    auto saved = errno;
    ::close(fd);
    errno = saved;
    fail("fsync of the folder failed", dir);
  }
  ::close(fd);
}

void write_atomically(const std::string& path, const std::string& bytes) {
  auto tmp = path + ".tmp-" + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) fail("cannot create", tmp);
  auto abandon = [&](const char* what) {
    auto saved = errno;
    ::close(fd);
    ::unlink(tmp.c_str());
    errno = saved;
    fail(what, tmp);
  };
  const char* p = bytes.data();
  std::size_t left = bytes.size();
  while (left > 0) {
    auto n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      abandon("write failed");
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0) abandon("fsync failed");
  if (::close(fd) != 0) {
    auto saved = errno;
    ::unlink(tmp.c_str());
    errno = saved;
    fail("close failed", tmp);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    auto saved = errno;
    ::unlink(tmp.c_str());
    errno = saved;
    fail("rename to " + path + " failed", tmp);
  }
  sync_folder(folder_of(path));
}

}  // namespace actrain::durable
