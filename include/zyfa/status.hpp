// zyfa/status.hpp -- errors are values: every zyfa entry point returns a Status.
#pragma once
#include <string>
#include <utility>

namespace zyfa {

/// What went wrong. `ok` is the only success value.
enum class StatusCode {
  ok = 0,
  invalid_argument,  ///< a precondition on an argument failed; the message names the argument
  unsupported,       ///< valid input this build/kernel cannot run (head dim, dtype, device, 64-bit offsets)
  runtime_error,     ///< the GPU runtime reported an error (launch, module load); message has its text
};

/// Result of a zyfa call. `message` names the offending argument (e.g. "k: shape[3] (head_dim_qk) is 96,
/// q has 128"). Host-side only; never used in device code.
struct Status {
  StatusCode code = StatusCode::ok;
  std::string message;

  bool ok() const { return code == StatusCode::ok; }
  explicit operator bool() const { return ok(); }  ///< true on success: `if (!s) return s;`

  /// Factories: ok (empty message), invalid_argument, unsupported, runtime_error with message `m`.
  static Status success() { return {}; }
  static Status invalid(std::string m) { return {StatusCode::invalid_argument, std::move(m)}; }
  static Status unsupported(std::string m) { return {StatusCode::unsupported, std::move(m)}; }
  static Status runtime(std::string m) { return {StatusCode::runtime_error, std::move(m)}; }
};

}  // namespace zyfa
