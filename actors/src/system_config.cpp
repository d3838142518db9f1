// The actor system configuration shared by engines and workers: message types, scheduler, and for
// `network` CAF's middleman (application id `doppler/1`) with TLS through its openssl module.

#include <doppler/runtime/error.hpp>

#include "system_config.hpp"

#include <caf/io/all.hpp>
#ifdef DOPPLER_HAVE_CAF_OPENSSL
#include <caf/openssl/all.hpp>
#endif
#ifdef DOPPLER_HAVE_OPENSSL
#include <openssl/err.h>
#include <openssl/ssl.h>
#endif

#include <fstream>
#include <memory>
#include <string>
#include <vector>

namespace doppler::actors {

namespace {

#ifdef DOPPLER_HAVE_OPENSSL
/// Loads the three files as CAF's openssl module will (a PEM certificate chain, its PEM private key,
/// the CA certificates to verify peers with) and checks that key and certificate belong together;
/// errc::bad_value naming the file otherwise, with OpenSSL's reason.
void check_tls_files(const std::string& cert, const std::string& key, const std::string& ca) {
  std::unique_ptr<SSL_CTX, void (*)(SSL_CTX*)> ctx(SSL_CTX_new(TLS_method()), SSL_CTX_free);
  if (!ctx) throw error(errc::io, "TLS: cannot create an OpenSSL context");
  auto fail = [](const std::string& file, const std::string& what) {
    const char* lib_reason = ERR_reason_error_string(ERR_get_error());  // null when OpenSSL queued none
    const std::string reason = lib_reason ? lib_reason : "";
    ERR_clear_error();
    throw error(errc::bad_value, file, "", "TLS: " + what + (reason.empty() ? "" : " (" + reason + ")"));
  };
  if (SSL_CTX_use_certificate_chain_file(ctx.get(), cert.c_str()) != 1) fail(cert, "not a PEM certificate");
  if (SSL_CTX_use_PrivateKey_file(ctx.get(), key.c_str(), SSL_FILETYPE_PEM) != 1) fail(key, "not a PEM private key");
  if (SSL_CTX_check_private_key(ctx.get()) != 1) fail(key, "this key does not belong to the certificate " + cert);
  if (SSL_CTX_load_verify_locations(ctx.get(), ca.c_str(), nullptr) != 1) fail(ca, "no CA certificate in this file");
}
#endif

}  // namespace

caf::actor_system_config& configure(caf::actor_system_config& cfg, const engine_options& opt) {
  cfg.add_message_types<caf::id_block::doppler_actors>();
  if (opt.scheduler_threads > 0) cfg.set("scheduler.max-threads", opt.scheduler_threads);
  if (opt.tls()) {
#ifdef DOPPLER_HAVE_CAF_OPENSSL
    if (!opt.network) throw error(errc::bad_argument, "engine: TLS options need network");
    if (opt.tls_certificate.empty() || opt.tls_key.empty() || opt.tls_cafile.empty())
      throw error(errc::bad_argument, "engine: TLS needs a certificate, its key and a CA file");
    for (const auto* f : {&opt.tls_certificate, &opt.tls_key, &opt.tls_cafile})
      if (!std::ifstream(*f)) throw error(errc::io, *f, "", "TLS: cannot read this file");
#ifdef DOPPLER_HAVE_OPENSSL
    check_tls_files(opt.tls_certificate, opt.tls_key, opt.tls_cafile);
#endif
    cfg.openssl_certificate = opt.tls_certificate;
    cfg.openssl_key = opt.tls_key;
    cfg.openssl_cafile = opt.tls_cafile;
#else
    throw error(errc::bad_argument, "engine: TLS requested, but doppler was built without CAF's openssl module");
#endif
  }
  if (opt.network) {
    cfg.load<caf::io::middleman>();
#ifdef DOPPLER_HAVE_CAF_OPENSSL
    if (opt.tls()) cfg.load<caf::openssl::manager>();
#endif
    // BASP handshake: a CAF node of another application is refused before any message is read.
    cfg.set("middleman.app-identifiers", std::vector<std::string>{"doppler/1"});
  }
  if (opt.scheduler == "sharing") cfg.set("scheduler.policy", caf::atom("sharing"));
  else if (opt.scheduler != "stealing")
    throw error(errc::bad_argument, "engine: unknown scheduler \"" + opt.scheduler + "\" (stealing, sharing)");
  cfg.set("logger.console", caf::atom("none"));
  return cfg;
}

}  // namespace doppler::actors
