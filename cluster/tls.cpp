// TLS settings checked before a node starts (include/actrain/cluster.hpp): CAF's OpenSSL module
// loads the same files only when the first connection opens, on the multiplexer thread, where a
// bad file ends the process with "cannot load certificate" and no file named. Here each file is
// loaded as CAF will load it, and the node's own certificate is verified against the CA, so an
// operator's mistake is named before anything listens.
#include <actrain/cluster.hpp>

#include <memory>
#include <stdexcept>
#include <string>

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509_vfy.h>

namespace actrain {

namespace {

/// OpenSSL's queued errors as one line (and the queue emptied).
std::string openssl_reason() {
  std::string out;
  while (auto e = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof(buf));
    if (!out.empty()) out += "; ";
    out += buf;
  }
  return out.empty() ? "no reason given" : out;
}

[[noreturn]] void fail(const std::string& key, const std::string& path, const std::string& what) {
  throw std::invalid_argument("cluster." + key + " '" + path + "': " + what);
}

/// Refuses to prompt for a passphrase (OpenSSL's default would read the terminal).
int no_passphrase(char*, int, int, void*) {
  return 0;
}

}  // namespace

void validate(const tls_options& o) {
  if (!o.enabled()) return;
  if (o.certificate.empty() || o.key.empty() || o.ca.empty())
    throw std::invalid_argument(
        "cluster.tls-certificate, cluster.tls-key and cluster.tls-ca must be given together "
        "(TLS needs this node's certificate, its key and the CA that signs every node's)");
  ERR_clear_error();
  std::unique_ptr<SSL_CTX, decltype(&SSL_CTX_free)> ctx{SSL_CTX_new(TLS_method()), SSL_CTX_free};
  if (!ctx) throw std::runtime_error("OpenSSL cannot create a TLS context: " + openssl_reason());
  SSL_CTX_set_default_passwd_cb(ctx.get(), no_passphrase);
  if (SSL_CTX_use_certificate_chain_file(ctx.get(), o.certificate.c_str()) != 1)
    fail("tls-certificate", o.certificate, "not a readable PEM certificate: " + openssl_reason());
  std::unique_ptr<BIO, decltype(&BIO_free)> key_file{BIO_new_file(o.key.c_str(), "r"), BIO_free};
  std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> key{
      key_file ? PEM_read_bio_PrivateKey(key_file.get(), nullptr, no_passphrase, nullptr) : nullptr,
      EVP_PKEY_free};
  if (!key)
    fail("tls-key", o.key, "not a readable, unencrypted PEM private key: " + openssl_reason());
  if (SSL_CTX_use_PrivateKey(ctx.get(), key.get()) != 1 ||
      SSL_CTX_check_private_key(ctx.get()) != 1)
    fail("tls-key", o.key,
         "does not belong to the certificate in cluster.tls-certificate '" + o.certificate +
             "': " + openssl_reason());
  if (SSL_CTX_load_verify_locations(ctx.get(), o.ca.c_str(), nullptr) != 1)
    fail("tls-ca", o.ca, "not a readable PEM CA certificate: " + openssl_reason());
  // Peers verify this node's certificate against the same CA: verify it here first.
  std::unique_ptr<X509_STORE_CTX, decltype(&X509_STORE_CTX_free)> check{X509_STORE_CTX_new(),
                                                                        X509_STORE_CTX_free};
  STACK_OF(X509)* chain = nullptr;
  SSL_CTX_get0_chain_certs(ctx.get(), &chain);
  if (!check || X509_STORE_CTX_init(check.get(), SSL_CTX_get_cert_store(ctx.get()),
                                    SSL_CTX_get0_certificate(ctx.get()), chain) != 1)
    throw std::runtime_error("OpenSSL cannot verify a certificate: " + openssl_reason());
  if (X509_verify_cert(check.get()) != 1)
    fail("tls-certificate", o.certificate,
         std::string("is not accepted by the CA in cluster.tls-ca '") + o.ca +
             "': " + X509_verify_cert_error_string(X509_STORE_CTX_get_error(check.get())));
}

}  // namespace actrain
