// What the HIP plugin reads from an AMDGPU code object (a raw ELF, as both
// hiprtc and clang --no-gpu-bundle-output produce it), and how it finds the
// kernel each name expression of a program instantiated (its "lowered
// name"), the same way for hiprtc and clang:
//
//  - one name expression (every compile of the plugin: one key, one
//    program): the code object's one kernel of the expression's function
//    template, e.g. the one "_ZN2jw7kernels8rms_normI..." (hiprtc's own
//    lowered name, when it has one, must be that kernel);
//  - several (batch compiles, e.g. the compile tests): the program gets a
//    marker per expression, a device pointer to its kernel,
//      extern "C" __attribute__((device, used)) void* const
//          jw_lowered_name_<i> = (void*)&<expression>;
//    and the marker's dynamic relocation in the linked code object names
//    the kernel (R_AMDGPU_RELATIVE64 to its address, or R_AMDGPU_ABS64 to
//    its symbol). Such code objects carry the markers (8 bytes each).
//
// hiprtc 5.2's own lowered names are not enough: it looks name expressions
// up by their demangled text, so "jw::kernels::f<jw::i32, 16>" is "not
// valid" when the kernel demangles as "jw::kernels::f<int, 16ll>".
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace jitwarm::hip {

struct CodeObject {
  uint32_t flags = 0;                // e_flags; the low byte is the processor
  std::vector<std::string> kernels;  // mangled names, sorted
  // Marker symbol -> the kernel its relocation points to.
  std::map<std::string, std::string> marked_kernels;
};

// std::nullopt when `binary` is not an AMDGPU (EM_AMDGPU) ELF.
std::optional<CodeObject> read_code_object(std::string_view binary);

// The marker of name expression `index`: "jw_lowered_name_<index>".
std::string lowered_name_marker(std::size_t index);
// Source text that defines the marker of every expression (appended to a
// program with several name expressions; it also instantiates them).
std::string lowered_name_markers(const std::vector<std::string>& expressions);

// The start every mangled name of an instantiation of the name
// expression's function template shares: "_ZN2jw7kernels8rms_normI" for
// "jw::kernels::rms_norm<...>" ("_Z1kI" for a template at global scope).
// Empty when the expression is not a (qualified) template-id.
std::string mangled_template_prefix(std::string_view name_expression);

// The kernels of `code_object` that instantiate the expression's template.
std::vector<std::string> kernels_of_template(const CodeObject& code_object,
                                             std::string_view name_expression);

// The kernel of each expression of a program compiled into `code_object`
// by the rules above (`markers`: whether the program carried markers).
// Throws PluginError(JW_ERROR_INTERNAL) naming the expression, `compiler`
// and the candidates when a kernel cannot be told apart or is missing.
std::vector<std::string> lowered_names_in(
    const CodeObject& code_object, const std::vector<std::string>& expressions,
    bool markers, const std::string& compiler);

}  // namespace jitwarm::hip
