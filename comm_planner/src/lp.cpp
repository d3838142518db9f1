// Placeholder: LP and astar follow.
#include "methods.hpp"
#include <doppler/runtime/error.hpp>
namespace doppler::comm::detail {
method_result plan_lp(const network&, const demand&, const plan_options&, const lower_bound&) {
  throw error(errc::bad_argument, "method lp: not implemented yet");
}
method_result plan_astar(const network&, const demand&, const plan_options&, const lower_bound&) {
  throw error(errc::bad_argument, "method astar: not implemented yet");
}
}  // namespace doppler::comm::detail
