// The learner actor and its blocking client (learner.hpp, online.hpp).

#include <doppler/actors/learner.hpp>
#include <doppler/runtime/error.hpp>

#include <utility>

namespace doppler::actors {

namespace {

/// Runs f; a thrown error becomes the actor's error answer: (errc as int32, message).
template <class F>
auto guarded(F&& f) -> caf::result<decltype(f())> {
  try {
    return f();
  } catch (const doppler::error& e) {
    return caf::make_error(caf::sec::runtime_error, static_cast<std::int32_t>(e.code()), std::string(e.what()));
  } catch (const std::exception& e) {
    return caf::make_error(caf::sec::runtime_error, static_cast<std::int32_t>(errc::internal),
                           std::string("learner: ") + e.what());
  }
}

void check(const learn_problem& pb) {
  if (!pb.g || !pb.c) throw error(errc::bad_argument, "learner: a request without a graph or a cluster");
}

learner_actor::behavior_type learner_impl(learner_actor::pointer, std::shared_ptr<learner_interface> l) {
  return {
      [l](place_atom, const learn_problem& pb, bool explore, std::uint64_t seed) {
        return guarded([&] {
          check(pb);
          return l->place(*pb.g, *pb.c, explore, seed);
        });
      },
      [l](observe_atom, const learn_problem& pb, const placement& p, double makespan) {
        return guarded([&] {
          check(pb);
          check_placement(p, *pb.g, *pb.c);
          if (!(makespan >= 0)) throw error(errc::bad_value, "learner: observed makespan must be >= 0");
          l->observe(*pb.g, *pb.c, p, makespan);
          return l->last_update();
        });
      },
      [l](train_atom, const learn_problem& pb, std::int32_t episodes) {
        return guarded([&] {
          check(pb);
          if (episodes < 0) throw error(errc::bad_argument, "learner: episodes must be >= 0");
          return l->train(*pb.g, *pb.c, episodes);
        });
      },
      [l](save_atom, const std::string& path) {
        return guarded([&] {
          l->save(path);
          return caf::ok_atom::value;
        });
      },
      [l](load_atom, const std::string& path) {
        return guarded([&] {
          l->load(path);
          return caf::ok_atom::value;
        });
      },
      [l](name_atom) { return std::string(l->name()); },
  };
}

}  // namespace

learner_actor spawn_learner(caf::actor_system& sys, std::shared_ptr<learner_interface> l) {
  if (!l) throw error(errc::bad_argument, "spawn_learner: no learner");
  return sys.spawn<caf::detached>(learner_impl, std::move(l));
}

std::string learner_error_text(caf::actor_system& sys, const caf::error& err) {
  const auto& ctx = err.context();
  if (ctx.match_elements<std::int32_t, std::string>()) return ctx.get_as<std::string>(1);
  return sys.render(err);
}

void throw_learner_error(caf::actor_system& sys, const caf::error& err) {
  const auto& ctx = err.context();
  if (ctx.match_elements<std::int32_t, std::string>()) {
    auto code = static_cast<errc>(ctx.get_as<std::int32_t>(0));
    throw error(code, ctx.get_as<std::string>(1));
  }
  throw error(errc::internal, "learner actor: " + sys.render(err));
}

}  // namespace doppler::actors

namespace doppler {

struct learner_client::impl {
  caf::actor_system* sys;
  actors::learner_actor a;
  std::shared_ptr<const cluster> c;

  /// Sends xs to the learner and waits for its answer of type R (errors rethrown).
  template <class R, class... Ts>
  R ask(Ts&&... xs) {
    caf::scoped_actor self{*sys};
    R out{};
    self->request(a, caf::infinite, std::forward<Ts>(xs)...)
        .receive([&](R& r) { out = std::move(r); },
                 [&](caf::error& err) { actors::throw_learner_error(*sys, err); });
    return out;
  }
  actors::learn_problem problem(std::shared_ptr<const graph> g) const {
    if (!g) throw error(errc::bad_argument, "learner: no graph");
    return {std::move(g), c};
  }
};

std::string learner_client::name() const { return impl_->ask<std::string>(actors::name_atom::value); }

placement learner_client::place(std::shared_ptr<const graph> g, bool explore, std::uint64_t seed) const {
  return impl_->ask<placement>(actors::place_atom::value, impl_->problem(std::move(g)), explore, seed);
}

learner_update learner_client::observe(std::shared_ptr<const graph> g, const placement& p, double makespan) const {
  return impl_->ask<learner_update>(actors::observe_atom::value, impl_->problem(std::move(g)), p, makespan);
}

learner_train_report learner_client::train(std::shared_ptr<const graph> g, int episodes) const {
  return impl_->ask<learner_train_report>(actors::train_atom::value, impl_->problem(std::move(g)),
                                          static_cast<std::int32_t>(episodes));
}

void learner_client::save(const std::string& path) const { impl_->ask<caf::ok_atom>(actors::save_atom::value, path); }
void learner_client::load(const std::string& path) const { impl_->ask<caf::ok_atom>(actors::load_atom::value, path); }

learner_client learner_client::on(std::shared_ptr<const cluster> c) const {
  if (!c) throw error(errc::bad_argument, "learner_client::on: no cluster");
  return learner_client(std::make_shared<impl>(impl{impl_->sys, impl_->a, std::move(c)}));
}

}  // namespace doppler

namespace doppler::actors {

learner_client make_learner_client(caf::actor_system& sys, learner_actor a, std::shared_ptr<const cluster> c) {
  return learner_client(std::make_shared<learner_client::impl>(learner_client::impl{&sys, std::move(a), std::move(c)}));
}

}  // namespace doppler::actors
