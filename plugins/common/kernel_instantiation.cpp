// instantiate_kernel: a compile key through a kernel descriptor's
// [compile] section (checks, values, template arguments, defines).
#include "kernel_instantiation.hpp"

#include <jitwarm/plugin.hpp>

#include "kernel_tuning.hpp"
#include "key_params.hpp"

namespace jitwarm::gpu {

// kernel_support.cuh uses the numbering of jw_int_class as template values.
static_assert(JW_INT_CLASS_NONE == 0 && JW_INT_CLASS_ONE == 1 &&
              JW_INT_CLASS_DIV16 == 2);

KernelInstantiation instantiate_kernel(
    const std::shared_ptr<const KernelDescriptor>& descriptor,
    const jw_compile_key_view& key, const GpuTarget& target) {
  const KeyParams params(key, *descriptor);
  const KernelDescriptor& d = *descriptor;
  KernelInstantiation result;
  result.descriptor = descriptor;
  result.source_file = d.source;
  result.function_template = d.function;
  result.values.resize(d.compile_values.size());
  CompileInputs in;
  in.key = &key;
  in.warp_size = target.warp_size;
  in.lets = result.values;
  // The choices first: every expression after them may read them.
  const ChoiceValues choices = key_choice_values(d, key);
  for (std::size_t i = 0; i < choices.size(); ++i)
    result.values[i].integer = choices[i];
  // A check that fails, or a value that cannot be computed for this key, is
  // the key's error, with the descriptor line it comes from.
  int line = 0;
  const auto evaluate = [&]() -> std::string {  // the failure, or empty
    for (const DescriptorCheck& check : d.tune_checks) {
      line = check.line;
      if (!check.expression.boolean(in)) {
        return "tune check '" + check.expression.text() +
               "' failed: " + check.expression.values(in);
      }
    }
    for (const DescriptorCheck& check : d.compile_checks) {
      line = check.line;
      if (!check.expression.boolean(in)) {
        return "compile check '" + check.expression.text() +
               "' failed: " + check.expression.values(in);
      }
    }
    for (std::size_t i = 0; i < d.compile_values.size(); ++i) {
      const DescriptorValue& v = d.compile_values[i];
      line = v.line;
      if (v.choice >= 0) continue;  // set above
      if (v.expression.type() == ExprType::boolean) {
        result.values[i].boolean = v.expression.boolean(in);
      } else if (v.expression.type() == ExprType::integer) {
        result.values[i].integer = v.expression.integer(in);
      }
    }
    for (std::size_t i = 0; i < d.template_arguments.size(); ++i) {
      line = d.template_lines[i];
      const KernelExpression& e = d.template_arguments[i];
      result.template_arguments.push_back(
          TemplateArgument{e.spelling(in), e.text()});
    }
    for (const DescriptorDefine& define : d.defines) {
      line = define.line;
      result.defines.emplace_back(define.name, define.expression.spelling(in));
    }
    return {};
  };
  std::string failure;
  try {
    failure = evaluate();
  } catch (const plugin::PluginError& error) {
    if (error.status() != JW_ERROR_INVALID_ARGUMENT) throw;
    failure = error.what();
  }
  if (!failure.empty()) {
    throw plugin::PluginError(JW_ERROR_INVALID_ARGUMENT,
                              "compile key " + std::string(params.text()) +
                                  ": " + failure + " (" + d.where(line) + ")");
  }
  return result;
}

KernelInstantiation instantiate_kernel(const jw_compile_key_view& key,
                                       const GpuTarget& target) {
  const std::string_view name =
      key.kernel_name != nullptr ? key.kernel_name : "";
  for (const auto& descriptor : builtin_descriptors()) {
    if (descriptor->kernel_name == name) {
      return instantiate_kernel(descriptor, key, target);
    }
  }
  throw plugin::PluginError(JW_ERROR_NOT_FOUND,
                            "no GPU kernel '" + std::string(name) + "'");
}

std::string KernelInstantiation::name_expression() const {
  if (template_arguments.empty()) return function_template;
  std::string text = function_template + "<";
  for (std::size_t i = 0; i < template_arguments.size(); ++i) {
    if (i != 0) text += ", ";
    text += template_arguments[i].spelling;
  }
  return text + ">";
}

int64_t KernelInstantiation::value(std::string_view name) const {
  const auto& values = descriptor->compile_values;
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (values[i].name != name) continue;
    return values[i].expression.type() == ExprType::boolean
               ? int64_t{this->values[i].boolean}
               : this->values[i].integer;
  }
  throw plugin::PluginError(
      JW_ERROR_NOT_FOUND,
      descriptor->origin + " has no compile value '" + std::string(name) + "'");
}

std::vector<std::string> KernelInstantiation::define_options() const {
  std::vector<std::string> options;
  for (const auto& [name, value] : defines) {
    options.push_back("-D" + name + "=" + value);
  }
  return options;
}

std::string KernelInstantiation::explain() const {
  std::string text;
  for (const TemplateArgument& argument : template_arguments) {
    text += "  " + argument.spelling + "  <- " + argument.reason + "\n";
  }
  for (const auto& [name, value] : defines) {
    text += "  -D" + name + "=" + value + "\n";
  }
  return text;
}

std::string_view int_type_spelling(jw_int_type type) {
  switch (type) {
    case JW_INT_I32: return "jw::i32";
    case JW_INT_I64: return "jw::i64";
    case JW_INT_U64: return "jw::u64";
  }
  throw plugin::PluginError(
      JW_ERROR_INVALID_ARGUMENT,
      "invalid integer type " + std::to_string(static_cast<int>(type)));
}

std::string_view element_type_spelling(jw_dtype dtype) {
  switch (dtype) {
    case JW_DTYPE_FLOAT32: return "float";
    case JW_DTYPE_FLOAT16: return "jw::f16";
    case JW_DTYPE_BFLOAT16: return "jw::bf16";
    case JW_DTYPE_INT32: return "jw::i32";
    case JW_DTYPE_INT64: return "jw::i64";
    case JW_DTYPE_UINT8: return "jw::u8";
    default: break;
  }
  throw plugin::PluginError(JW_ERROR_INVALID_ARGUMENT,
                            "no GPU element type for dtype " +
                                std::to_string(static_cast<int>(dtype)));
}

std::string_view storage_type_spelling(jw_dtype dtype) {
  switch (plugin::dtype_size(dtype)) {
    case 1: return "jw::u8";
    case 2: return "jw::u16";
    case 4: return "jw::u32";
    case 8: return "jw::u64";
    default: break;
  }
  throw plugin::PluginError(
      JW_ERROR_INVALID_ARGUMENT,
      "no storage type for dtype " + std::to_string(static_cast<int>(dtype)));
}

}  // namespace jitwarm::gpu
