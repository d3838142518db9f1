// The actor system configuration shared by engines and workers: message types, scheduler, and for
// `network` CAF's middleman (application id `doppler/1`) with TLS through its openssl module.

#include <doppler/runtime/error.hpp>

#include "system_config.hpp"

#include <caf/io/all.hpp>
#ifdef DOPPLER_HAVE_CAF_OPENSSL
#include <caf/openssl/all.hpp>
#endif

#include <fstream>
#include <string>
#include <vector>

namespace doppler::actors {

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
