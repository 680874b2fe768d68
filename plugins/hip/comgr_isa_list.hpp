// ComgrIsaList: the AMD ISAs that a code-object manager (libamd_comgr) can
// compile for, as it lists them ("amdgcn-amd-amdhsa--gfx90a"). hiprtc
// compiles through comgr, and Debian's hiprtc 5.2 aborts the whole process
// (a double free inside comgr) when asked for an ISA its comgr does not
// list (gfx942, gfx1100), so this list is the gate in front of hiprtc.
// comgr is opened with dlopen; only its version and ISA-list entry points
// are used, which have the same C signatures in comgr 2.x and 3.x.
#pragma once

#include "dynamic_library.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace jitwarm::hip {

class ComgrIsaList {
 public:
  // Opens comgr, preferring the copy next to `companion` (the library that
  // holds hiprtc: it loads the comgr of its own directory), then one the
  // process already has, then the dynamic loader's search path. On failure
  // the list is empty and why_not() says why.
  static ComgrIsaList open(const std::string& companion);
  // A list with these ISA names, for tests.
  static ComgrIsaList from_names(std::vector<std::string> isa_names,
                                 std::string version);

  bool available() const { return why_not_.empty(); }
  const std::string& why_not() const { return why_not_; }
  // "2.4", or empty.
  const std::string& version() const { return version_; }
  // The library that answered, e.g. "/usr/lib/x86_64-linux-gnu/...".
  const std::string& library() const { return library_; }
  // Whether comgr lists the target ID exactly ("gfx90a",
  // "gfx90a:sramecc+:xnack-"). Older comgr lists bare processors only, so
  // a target with features is then not known.
  bool knows(std::string_view target_id) const;
  // The target IDs, without the "amdgcn-amd-amdhsa--" prefix.
  const std::vector<std::string>& target_ids() const { return target_ids_; }
  // "gfx600 ... gfx1036" (first and last), for messages.
  std::string summary() const;

 private:
  gpu::DynamicLibrary library_handle_;
  std::string library_;
  std::string version_;
  std::vector<std::string> target_ids_;
  std::string why_not_;
};

}  // namespace jitwarm::hip
