// A fix for CAF 0.17.6's OpenSSL module, which actrain cannot patch (Debian's libcaf-openssl).
//
// OpenSSL keeps one error queue per thread, and SSL_get_error() answers SSL_ERROR_SSL whenever
// that queue is not empty; its manual therefore requires an empty queue before each TLS I/O call.
// CAF's session (libcaf_openssl/src/openssl/session.cpp) never empties it: it reads the queue
// only inside log statements, which Debian's build compiles out. All of a node's connections run
// on the one multiplexer thread, so the first peer whose handshake fails (a plaintext node, a
// certificate from another CA) leaves its error queued, and the next SSL_read of a healthy
// connection that merely has no data yet (WANT_READ) is taken for a fatal error: the
// coordinator dropped its ps node in every such run (cluster/tls_test.cpp shows it).
//
// The four calls CAF makes are defined here; each empties the calling thread's queue and calls
// OpenSSL's own function, found with dlsym(RTLD_NEXT). Defined in the executable (actrain_cluster
// is linked into it), they take precedence over libssl's for every shared library (ELF symbol
// interposition), CAF's OpenSSL module included. Anything else that calls them loses only errors
// queued before the call, which OpenSSL's manual says must not be there.
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>

#include <openssl/err.h>
#include <openssl/ssl.h>

namespace actrain::detail {

namespace {

template <class F>
F real(const char* name) {
  // Versioned lookup first (libssl 3 exports OPENSSL_3.0.0); plain dlsym for any other build.
  void* f = dlvsym(RTLD_NEXT, name, "OPENSSL_3.0.0");
  if (f == nullptr) f = dlsym(RTLD_NEXT, name);
  if (f == nullptr) {
    std::fprintf(stderr, "actrain: cannot find OpenSSL's %s: %s\n", name, dlerror());
    std::abort();
  }
  return reinterpret_cast<F>(f);
}

}  // namespace

/// Called by prepare_cluster_config so that this file's definitions are always linked.
void link_openssl_queue_guard() {}

}  // namespace actrain::detail

extern "C" {

int SSL_read(SSL* ssl, void* buf, int num) {
  static auto f = actrain::detail::real<int (*)(SSL*, void*, int)>("SSL_read");
  ERR_clear_error();
  return f(ssl, buf, num);
}

int SSL_write(SSL* ssl, const void* buf, int num) {
  static auto f = actrain::detail::real<int (*)(SSL*, const void*, int)>("SSL_write");
  ERR_clear_error();
  return f(ssl, buf, num);
}

int SSL_connect(SSL* ssl) {
  static auto f = actrain::detail::real<int (*)(SSL*)>("SSL_connect");
  ERR_clear_error();
  return f(ssl);
}

int SSL_accept(SSL* ssl) {
  static auto f = actrain::detail::real<int (*)(SSL*)>("SSL_accept");
  ERR_clear_error();
  return f(ssl);
}

}  // extern "C"
