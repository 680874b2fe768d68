// The built-in kernels moved from per-kernel C++ to descriptors
// (plugins/common/kernels/*.toml) with unchanged results: for every key of
// the compile-test key matrix, on an NVIDIA and an AMD target, the same
// name expression (so the same binary); and for every conformance case,
// under three sets of device limits, the same launch geometry. The golden
// files were written by the per-kernel code before the move
// (`test_descriptor_golden --write DIR`), and written again only where a
// kernel changed its template arguments or launch on purpose (issue 30: the
// vectors of expand, compute_slot_mapping and prepare_pos_seq_lens).
#define DOCTEST_CONFIG_IMPLEMENT
#include <jitwarm/jitwarm.hpp>
#include <jitwarm/plugin.hpp>

#include <doctest/doctest.h>

#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "case_arguments.hpp"
#include "cases.hpp"
#include "gpu_test_support.hpp"
#include "kernel_instantiation.hpp"
#include "kernel_key_matrix.hpp"
#include "kernel_set.hpp"
#include "key_params.hpp"
#include "launch_plan.hpp"

namespace gpu = jitwarm::gpu;
namespace da = jitwarm::device_args;
namespace jc = jitwarm::conformance;

namespace {

std::string g_write_dir;

gpu::GpuTarget target_of(const std::string& text, uint32_t warp) {
  gpu::GpuTarget t;
  t.text = text;
  t.platform = text.substr(0, text.find(':'));
  t.arch = text.substr(text.find(':') + 1);
  t.binary_format = t.platform == "cuda" ? "cubin" : "hsaco";
  t.warp_size = warp;
  return t;
}

std::string instantiations() {
  std::ostringstream out;
  for (const jw_kernel_schema& schema : jitwarm::kernel_set::schemas()) {
    for (const auto& [text, warp] :
         {std::pair<std::string, uint32_t>{"cuda:sm_90", 32},
          std::pair<std::string, uint32_t>{"hip:gfx942", 64}}) {
      const gpu::GpuTarget target = target_of(text, warp);
      for (jitwarm::gpu_test::TestKey& key :
           jitwarm::gpu_test::key_matrix(schema.name, text)) {
        out << key.text() << " => ";
        try {
          out << gpu::instantiate_kernel(key.view(), target).name_expression();
        } catch (const std::exception&) {
          out << "refused";
        }
        out << "\n";
      }
    }
  }
  return out.str();
}

// A compile key view of a CompileKey (schema order).
struct KeyView {
  jitwarm::CompileKey key;  // the view points into it
  std::vector<jw_param_spec> specs;
  std::string text;
  jw_compile_key_view view{};
  explicit KeyView(jitwarm::CompileKey owned) : key(std::move(owned)) {
    for (const jitwarm::ParamSpec& p : key.params()) {
      jw_param_spec s{};
      s.struct_size = sizeof(s);
      s.name = p.name.c_str();
      s.kind = p.kind;
      s.dtype = p.dtype;
      s.alignment = p.alignment;
      s.num_stride_specs = static_cast<uint32_t>(p.stride_specs.size());
      for (std::size_t i = 0; i < p.stride_specs.size(); ++i) {
        s.stride_specs[i] = {p.stride_specs[i].type,
                             p.stride_specs[i].value_class};
      }
      s.int_spec = {p.int_spec.type, p.int_spec.value_class};
      s.float_type = p.float_type;
      s.scalar_kind = p.scalar_kind;
      s.constexpr_value = p.constexpr_value;
      specs.push_back(s);
    }
    text = key.text();
    view.struct_size = sizeof(view);
    view.kernel_name = key.kernel_name().c_str();
    view.target = key.target().c_str();
    view.params = specs.data();
    view.num_params = static_cast<uint32_t>(specs.size());
    view.text = text.c_str();
  }
};

// The plan of `args` as text ("refused" when it cannot be planned), checked
// to be the same through a prepared launch's plan cache filled by `fill` (a
// launch of the same key): the cache's fast path must plan, and refuse, as
// the general path does.
std::string planned(const gpu::KernelInstantiation& inst,
                    const jw_compile_key_view& key,
                    std::span<const jw_arg_value> fill,
                    std::span<const jw_arg_value> args,
                    const gpu::DeviceLimits& limits) {
  const gpu::KeyParams params(key, *inst.descriptor);
  // The geometry (or the refusal) and the extra arguments.
  const auto attempt =
      [&](gpu::LaunchPlanCache* cache) -> std::pair<std::string, std::string> {
    try {
      const gpu::LaunchPlan plan =
          gpu::plan_launch(inst, params, args, limits, cache);
      std::string extra;
      for (uint32_t k = 0; k < plan.extra_count; ++k) {
        extra += " " + std::to_string(plan.extra[k].value);
      }
      return {plan.geometry.text(), extra};
    } catch (const jitwarm::plugin::PluginError& e) {
      return {"refused", e.what()};
    }
  };
  const auto direct = attempt(nullptr);
  gpu::LaunchPlanCache cache;
  bool filled = true;
  try {
    gpu::plan_launch(inst, params, fill, limits, &cache);
  } catch (const jitwarm::plugin::PluginError&) {
    filled = false;  // nothing to cache from a launch that fails
  }
  // Every built-in descriptor's varying expressions compile.
  CHECK(cache.compiled() == filled);
  CHECK(attempt(&cache) == direct);
  CHECK(attempt(&cache) == direct);
  return direct.first;
}

std::string launch_plans() {
  std::vector<std::pair<std::string, gpu::DeviceLimits>> limits(3);
  limits[0].first = "h100";
  limits[0].second.multiprocessor_count = 132;
  limits[1].first = "mi300";
  limits[1].second.multiprocessor_count = 304;
  limits[1].second.warp_size = 64;
  limits[1].second.max_grid = {4194303u, 4194303u, 4194303u};
  limits[2].first = "small";
  limits[2].second.multiprocessor_count = 8;
  limits[2].second.max_threads_per_block = 256;
  limits[2].second.max_grid = {7, 5, 3};
  std::ostringstream out;
  for (const jw_kernel_schema& c_schema : jitwarm::kernel_set::schemas()) {
    const jitwarm::KernelSchema schema =
        jitwarm::KernelSchema::from_c(c_schema, "kernel_set");
    // The generated cases, which the golden file was written with.
    for (const jc::CaseRecipe& recipe :
         jc::generated_case_recipes(schema.name(), {})) {
      const da::Case the_case = recipe.build();
      const auto host = da::host_memory();
      const da::PlacedCase placed(the_case, *host);
      // Each integer argument made too large for the tensors: the launch
      // checks must refuse the same launches.
      for (std::size_t i = 0; i < placed.args().size(); ++i) {
        const jw_param_desc& p = c_schema.params[i];
        if (p.kind != JW_PARAM_INT) continue;
        std::vector<jw_arg_value> args(placed.args().begin(),
                                       placed.args().end());
        args[i].value.scalar.value.i = args[i].value.scalar.value.i * 2 + 1000;
        const KeyView key(
            jitwarm::derive_key(schema, args, "cuda:sm_90", "golden"));
        // The case's own arguments fill the cache when their key is this one.
        const bool same_key =
            jitwarm::derive_key(schema, placed.args(), "cuda:sm_90", "golden")
                .text() == key.text;
        out << schema.short_name() << " " << recipe.name << " " << p.name
            << "*2+1000 => ";
        try {
          const gpu::KernelInstantiation inst =
              gpu::instantiate_kernel(key.view, target_of("cuda:sm_90", 32));
          out << planned(
              inst, key.view,
              same_key ? placed.args() : std::span<const jw_arg_value>(args),
              args, limits[0].second);
        } catch (const std::exception&) {
          out << "refused";
        }
        out << "\n";
      }
      for (const auto& [name, device] : limits) {
        const std::string target =
            name == "mi300" ? "hip:gfx942" : "cuda:sm_90";
        const KeyView key(
            jitwarm::derive_key(schema, placed.args(), target, "golden"));
        out << schema.short_name() << " " << recipe.name << " " << name
            << " => ";
        try {
          const gpu::KernelInstantiation inst = gpu::instantiate_kernel(
              key.view, target_of(target, device.warp_size));
          out << planned(inst, key.view, placed.args(), placed.args(), device);
        } catch (const std::exception&) {
          out << "refused";
        }
        out << "\n";
      }
    }
  }
  return out.str();
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

void compare(const std::string& name, const std::string& now) {
  const std::string path = std::string(JW_GOLDEN_DIR) + "/" + name;
  if (!g_write_dir.empty()) {
    std::ofstream(g_write_dir + "/" + name) << now;
    return;
  }
  const std::string golden = read_file(path);
  REQUIRE_MESSAGE(!golden.empty(), "missing golden file " << path);
  std::istringstream a(golden), b(now);
  std::string want, got;
  int line = 0, differences = 0;
  while (std::getline(a, want)) {
    ++line;
    if (!std::getline(b, got)) got = "(missing)";
    if (want != got && ++differences <= 10) {
      CHECK_MESSAGE(want == got, name << ":" << line << "\n  was: " << want
                                      << "\n  now: " << got);
    }
  }
  CHECK(differences == 0);
  CHECK_FALSE(std::getline(b, got));  // nothing new at the end
}

}  // namespace

TEST_CASE(
    "given every key of the compile matrix, then the descriptors instantiate "
    "the name expressions the per-kernel code did") {
  compare("instantiations.txt", instantiations());
}

TEST_CASE(
    "given every conformance case under three sets of device limits, then "
    "the descriptors plan the geometry the per-kernel code did") {
  compare("launch_plans.txt", launch_plans());
}

int main(int argc, char** argv) {
  doctest::Context context;
  std::vector<char*> rest;
  for (int i = 0; i < argc; ++i) {
    if (std::string(argv[i]) == "--write" && i + 1 < argc) {
      g_write_dir = argv[++i];
    } else {
      rest.push_back(argv[i]);
    }
  }
  context.applyCommandLine(static_cast<int>(rest.size()), rest.data());
  return context.run();
}
