// A worker: device actors served to other processes through one published worker actor that answers
// `hello(token)` (protocol.hpp), over CAF's middleman (TLS with its openssl module).

#include <doppler/actors/device.hpp>
#include <doppler/actors/engine.hpp>
#include <doppler/actors/protocol.hpp>
#include <doppler/runtime/error.hpp>

#include "system_config.hpp"

#include <caf/io/all.hpp>
#ifdef DOPPLER_HAVE_CAF_OPENSSL
#include <caf/openssl/all.hpp>
#endif

#include <chrono>
#include <functional>
#include <set>

namespace doppler {

namespace {

struct worker_state {
  actors::worker_info info;
  std::string token;
  caf::io::middleman_actor net;  // CAF's middleman (or its openssl twin): connects to peer workers
  std::function<actors::device_actor(device_index)> respawn;  // a new device actor for served device k
  static inline const char* name = "doppler.worker";
};

/// The worker actor: answers `hello(token)` with the served devices, or refuses a wrong token. It
/// monitors its devices and replaces one that dies (killed by a client, say), so the next `hello`
/// hands out live devices; engines holding the old handle see it dead and must attach again.
actors::worker_actor::behavior_type worker_impl(actors::worker_actor::stateful_pointer<worker_state> self,
                                                actors::worker_info info, std::string token,
                                                caf::io::middleman_actor net,
                                                std::function<actors::device_actor(device_index)> respawn) {
  self->state.info = std::move(info);
  self->state.token = std::move(token);
  self->state.net = std::move(net);
  self->state.respawn = std::move(respawn);
  for (auto& d : self->state.info.devices) self->monitor(d);
  self->set_down_handler([=](caf::down_msg& dm) {
    auto& devs = self->state.info.devices;
    for (std::size_t k = 0; k < devs.size(); ++k) {
      if (devs[k].address() != dm.source) continue;
      devs[k] = caf::actor_cast<caf::actor>(self->state.respawn(static_cast<device_index>(k)));
      self->monitor(devs[k]);
    }
  });
  return {
      [=](actors::hello_atom, const std::string& t) {
        const auto& st = self->state;
        if (!st.token.empty() && t != st.token) {
          actors::worker_info no;
          no.name = st.info.name;
          no.refusal = t.empty() ? "this worker requires a token (--token / DOPPLER_TOKEN)" : "wrong token";
          return no;
        }
        return st.info;
      },
      // peer(host, port): a direct connection to another worker of the same runs (protocol.hpp). The
      // answer waits for CAF's handshake, so the engine's next run finds the route in place.
      [=](actors::peer_atom, std::string host, std::uint16_t port) -> caf::result<std::string> {
        auto rp = self->make_response_promise<std::string>();
        std::string where = host + ":" + std::to_string(port);
        self->request(self->state.net, std::chrono::seconds(10), caf::connect_atom::value, std::move(host), port)
            .then([rp](const caf::node_id&, caf::strong_actor_ptr&, const std::set<std::string>&) mutable {
                    rp.deliver(std::string{});
                  },
                  [rp, where, self](caf::error& err) mutable {
                    rp.deliver("cannot connect to worker " + where + ": " + self->system().render(err));
                  });
        return rp;
      },
  };
}

}  // namespace

struct worker::impl {
  engine_options opt;
  std::shared_ptr<const cluster> c;
  std::shared_ptr<actors::backend> kernels;
  caf::actor_system_config cfg;
  caf::actor_system sys;
  std::uint16_t port = 0;
  std::vector<std::string> ids;
  std::string token;
  actors::worker_actor self;

  impl(cluster cl, engine_options o)
      : opt(std::move(o.with_network())),
        c(std::make_shared<const cluster>(std::move(cl))),
        kernels(opt.custom_backend ? opt.custom_backend : actors::make_backend(opt.backend, c, opt.costs)),
        sys(actors::configure(cfg, opt)) {}
  ~impl() {  // stop the devices the worker serves now (the actor system waits for every actor), then it
    if (!self) return;
    caf::scoped_actor me{sys};
    me->request(self, std::chrono::seconds(10), actors::hello_atom::value, token)
        .receive(
            [&](actors::worker_info& info) {
              for (auto& d : info.devices) caf::anon_send_exit(d, caf::exit_reason::user_shutdown);
            },
            [](caf::error&) {});
    caf::anon_send_exit(self, caf::exit_reason::user_shutdown);
  }
};

worker::worker(cluster c, std::vector<device_index> devices, engine_options opt, worker_options w)
    : impl_(std::make_unique<impl>(std::move(c), std::move(opt))) {
  if (devices.empty()) throw error(errc::bad_argument, "worker: no devices to serve");
  actors::worker_info info;
  info.ok = true;
  // Emulated kernels take their times from this cluster: the engine refuses a run on another one.
  if (!impl_->opt.custom_backend && impl_->opt.backend == "emulate") info.emulated_cluster = to_json_text(*impl_->c);
  info.name = w.name.empty() ? impl_->c->name() : w.name;
  info.named = w.named;
  for (device_index d : devices)
    if (d >= impl_->c->device_count()) throw error(errc::bad_argument, "worker: no device " + std::to_string(d));
  // served device k is device devices[k] of the worker's cluster (a run may assign it another index)
  auto spawn = [&sys = impl_->sys, opt = impl_->opt, kernels = impl_->kernels, devices](device_index k) {
    actors::device_options o;
    o.index = devices[k];
    o.streams = opt.streams;
    o.kernels = kernels;
    return actors::spawn_device(sys, std::move(o));
  };
  for (device_index k = 0; k < devices.size(); ++k) {
    info.ids.push_back((*impl_->c)[devices[k]].id);
    info.devices.push_back(caf::actor_cast<caf::actor>(spawn(k)));
  }
  impl_->ids = info.ids;
  impl_->token = w.token;
  caf::io::middleman_actor net = impl_->sys.middleman().actor_handle();
#ifdef DOPPLER_HAVE_CAF_OPENSSL
  if (impl_->opt.tls()) net = impl_->sys.openssl_manager().actor_handle();
#endif
  impl_->self = impl_->sys.spawn(worker_impl, std::move(info), w.token, std::move(net), spawn);
  // reuse_addr: a restarted worker can listen on its old port at once
  auto port = [&] {
#ifdef DOPPLER_HAVE_CAF_OPENSSL
    if (impl_->opt.tls()) return caf::openssl::publish(impl_->self, w.port, w.host.c_str(), true);
#endif
    return impl_->sys.middleman().publish(impl_->self, w.port, w.host.c_str(), true);
  }();
  if (!port)
    throw error(errc::io, "worker: cannot listen on " + w.host + ":" + std::to_string(w.port) + ": " +
                              impl_->sys.render(port.error()));
  impl_->port = *port;
}

worker::~worker() = default;

std::uint16_t worker::port() const noexcept { return impl_->port; }
std::vector<std::string> worker::device_ids() const { return impl_->ids; }

}  // namespace doppler
