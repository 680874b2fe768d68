// Test support for tests/gpu: compile keys built from the kernel-set schemas
// (what the core's derive_key would hand a plugin), launch arguments with
// fake device pointers for planning tests, and a fake host table that
// records what a plugin registers.
#pragma once

#include <jitwarm/jitwarm.h>

#include <deque>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace jitwarm::gpu_test {

// An owning jw_compile_key_view for one kernel of the set. Defaults: every
// tensor takes its schema's first float dtype (else its first allowed
// dtype; float32 when any is allowed) and is 16-byte aligned; integers are
// i32 without value class; floats fp32; scalars follow their tensor's kind;
// constexprs their schema default or a typical value.
class TestKey {
 public:
  explicit TestKey(std::string_view kernel_name,
                   std::string target = "cuda:sm_90");

  // Sets the dtype of `param` and of every tensor tied to it by
  // same_dtype_as (and the kind of scalars tied to it).
  TestKey& dtype(std::string_view param, jw_dtype dtype);
  TestKey& aligned(std::string_view param, bool aligned16);
  TestKey& all_aligned(bool aligned16);
  TestKey& integer(std::string_view param, jw_int_type type,
                   jw_int_class value_class = JW_INT_CLASS_NONE);
  TestKey& floating(std::string_view param, jw_float_type type);
  TestKey& constant(std::string_view param, int64_t value);
  TestKey& target(std::string target);

  const jw_compile_key_view& view();
  std::string text() const;
  std::string_view kernel() const { return kernel_; }
  const jw_param_spec& param(std::string_view name) const;
  // The schema's parameter descriptions (static storage).
  const jw_param_desc* descs() const { return descs_; }
  uint32_t size() const { return static_cast<uint32_t>(params_.size()); }

 private:
  jw_param_spec& find(std::string_view name);

  std::string kernel_;
  std::string target_;
  std::string text_;
  const jw_param_desc* descs_ = nullptr;
  std::vector<jw_param_spec> params_;
  jw_compile_key_view view_{};
};

// Launch arguments in schema order, with tensors on device 0 at fake,
// 16-byte-aligned addresses (never dereferenced: planning and packing only).
class TestArgs {
 public:
  explicit TestArgs(std::string_view kernel_name);

  TestArgs& tensor(std::string_view param, jw_dtype dtype,
                   std::vector<int64_t> shape);
  // Moves the tensor's address off 16-byte alignment.
  TestArgs& misalign(std::string_view param);
  TestArgs& device(std::string_view param, int32_t device);
  TestArgs& integer(std::string_view param, int64_t value);
  TestArgs& unsigned_integer(std::string_view param, uint64_t value);
  TestArgs& floating(std::string_view param, double value);
  TestArgs& constant(std::string_view param, int64_t value);

  std::span<const jw_arg_value> values();
  const jw_tensor& tensor_at(std::string_view param);

 private:
  uint32_t index(std::string_view param) const;

  const jw_kernel_schema* schema_ = nullptr;
  std::vector<jw_arg_value> values_;
  std::deque<jw_tensor> tensors_;  // stable addresses
  std::vector<jw_tensor*> tensor_of_;
  uint64_t next_address_ = 0x7f0000000000ull;
};

// A jw_host_api whose callbacks record what the plugin registers.
class FakeHost {
 public:
  FakeHost();
  const jw_host_api* api() const { return &api_; }

  struct RecordedImpl {
    std::string kernel_name;
    std::string platform;
    std::string impl_name;
    std::vector<std::string> param_names;
    jw_kernel_impl impl;  // callbacks and user_data (strings copied above)
  };
  std::vector<RecordedImpl> impls;
  std::vector<jw_platform_desc> platforms;
  std::vector<std::string> platform_names;
  std::vector<std::string> schemas;
  std::vector<std::string> logs;
  std::string last_error;

  const RecordedImpl* impl_for(std::string_view kernel) const;

 private:
  jw_host_api api_{};
};

// A text sink appending to a std::string.
jw_text_sink text_sink(std::string& out);

// Runs `command` (through /bin/sh) and returns its exit status and output.
struct CommandResult {
  int status = -1;
  std::string output;
};
CommandResult run_command(const std::string& command);

// A plugin library dlopen'ed, negotiated and registered with a FakeHost, as
// the core would load it: once per process, and never dlclosed (the vendor
// libraries' own teardown at exit is the safer order).
struct DlopenedPlugin {
  void* handle = nullptr;
  jw_plugin_negotiate_fn negotiate = nullptr;
  const jw_plugin_api* api = nullptr;
  FakeHost host;
  jw_status registered = JW_ERROR_INTERNAL;
  std::string dlopen_error;

  explicit DlopenedPlugin(const char* path);
  ~DlopenedPlugin();
  DlopenedPlugin(const DlopenedPlugin&) = delete;
  DlopenedPlugin& operator=(const DlopenedPlugin&) = delete;
};

// The plugin at `path`, loaded on first use and kept for the test
// executable; REQUIREs that it loaded, negotiated and registered.
DlopenedPlugin& dlopened_plugin(const char* path);

// rms_norm's launch arguments: fp32 [rows, hidden] tensors (x_stride =
// hidden), weight [hidden], `eps`.
TestArgs rms_norm_args(int64_t rows, int64_t hidden, double eps);
// The view a launch callback gets of a compiled binary for `key`.
jw_artifact_view artifact_view(TestKey& key, const std::string& binary,
                               const std::string& format,
                               const std::string& entry_point,
                               uint64_t artifact_id);

// What a plugin's compile callback emitted (every emit counted).
struct CapturedArtifact {
  std::string binary;
  std::string format;
  std::string entry_point;
  int emits = 0;
};
// A sink that records into `artifact`.
jw_artifact_sink artifact_sink(CapturedArtifact& artifact);
// Calls the implementation's compile with `key` (null: no key) into
// `artifact`.
jw_status compile_into(const FakeHost::RecordedImpl& impl, TestKey* key,
                       CapturedArtifact& artifact);
// Launches an rms_norm implementation on its compiled `artifact` (from
// `key`) with fake device pointers: what a plugin must refuse when it has
// no device.
jw_status launch_rms_norm(const FakeHost::RecordedImpl& impl, TestKey& key,
                          const CapturedArtifact& artifact);

}  // namespace jitwarm::gpu_test
