// Writes the seed corpora checked in under fuzz/corpus/ (run from the
// source root: build/fuzz/make_fuzz_corpus fuzz/corpus). Seeds are small
// well-formed inputs of each kind, from the kernel set, plus the inputs of
// issue 11 that once crashed or hung; fuzzing grows from there. Cache
// entries and bundles come signed by the fuzz key (fuzz_key.hpp) and
// unsigned; corpus/cache_entry/v1-* are entries of format 1, written before
// signatures and kept as they were (this program writes the current
// format).
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>

#include "cache_bundle.hpp"
#include "disk_cache.hpp"
#include "fuzz_key.hpp"
#include "kernel_set_schemas.hpp"
#include "schema_bytes.hpp"

using namespace jitwarm;
namespace fs = std::filesystem;

namespace {

void write(const fs::path& path, std::string_view bytes) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << bytes;
}

std::string read(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

// One manifest per [[kernel]] of the kernel-set manifest.
std::vector<std::string> kernel_set_manifests(const fs::path& path) {
  const std::string text = read(path);
  std::vector<std::string> out;
  // Tables start lines: "[[kernel]]" in a comment starts none.
  std::size_t at = text.find("\n[[kernel]]");
  while (at != std::string::npos) {
    const std::size_t next = text.find("\n[[kernel]]", at + 1);
    out.push_back("version = 1" + text.substr(at, next - at) + "\n");
    at = next;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr,
                 "usage: make_fuzz_corpus CORPUS_DIR KERNEL_SET_TOML\n");
    return 2;
  }
  const fs::path corpus = argv[1];
  const auto& schemas = fuzz::kernel_set_schemas();

  const std::vector<std::string> manifests = kernel_set_manifests(argv[2]);
  for (std::size_t i = 0; i < manifests.size(); ++i)
    write(corpus / "manifest" / ("kernel-set-" + std::to_string(i) + ".toml"),
          manifests[i]);
  // Issue 11's inputs: toml++ aborts, a crash, an internal error, a hang.
  const std::map<std::string, std::string> issue11 = {
      {"toml-key-check.toml", "[\x01"},
      {"toml-value-check.toml", "a = [}"},
      {"mixed-strides.toml",
       "[[kernel]]\nname = \"rms_norm\"\n[kernel.params]\n"
       "x = { dtype = \"float16\", strides = [[1, 2], 3] }\n"},
      {"zip-without-dtype.toml",
       "[[kernel]]\nname = \"compute_slot_mapping\"\n[[kernel.zip]]\n"
       "positions = { aligned = [true] }\n"},
      {"huge-constexpr-range.toml",
       "[[kernel]]\nname = \"expand\"\n[kernel.params]\n"
       "MAX_NUM_TOKENS = { range = [0, 9223372036854775807] }\n"},
      {"integer-overflow.toml",
       "[[kernel]]\nname = \"zero_kv_blocks\"\n[kernel.params]\n"
       "n_blocks = \"18446744073709551616\"\n"},
  };
  for (const auto& [name, text] : issue11)
    write(corpus / "manifest" / name, text);

  // Keys and cache entries: the planned keys of each kernel-set manifest
  // (the first few per kernel), stored by the real disk cache.
  const fs::path scratch = fs::temp_directory_path() /
                           ("jitwarm-corpus-" + std::to_string(getpid()));
  {
    detail::DiskCache cache(scratch, "", 0, nullptr);
    std::vector<detail::BundleItem> bundle_items;
    int n = 0;
    for (const std::string& text : manifests) {
      const WarmupManifest m = parse_warmup_manifest(text, "seed.toml");
      for (const WarmupRequest& r : m.requests) {
        for (const KernelSchema& s : schemas) {
          if (s.name() != r.kernel_name) continue;
          const auto keys =
              enumerate_warmup_keys(s, r, "cuda:sm_90", "cuda-nvrtc");
          for (std::size_t k = 0; k < keys.size() && k < 2; ++k, ++n) {
            write(corpus / "compile_key" / ("key-" + std::to_string(n)),
                  keys[k].encoding());
            detail::Artifact a;
            a.binary = std::string(64, static_cast<char>(n));
            a.format = "cubin";
            a.entry_point = "kernel_" + std::to_string(n);
            cache.store(detail::EntryRef(keys[k], "nvrtc 12.8 -arch=sm_90"), a);
            const std::string entry =
                read(cache.entry_path(keys[k], "nvrtc 12.8 -arch=sm_90"));
            write(corpus / "cache_entry" / ("entry-" + std::to_string(n)),
                  entry);
            const std::string signed_entry =
                *detail::resign_entry(entry, fuzz::fuzz_signing_key());
            write(
                corpus / "cache_entry" / ("signed-entry-" + std::to_string(n)),
                signed_entry);
            std::string why;
            if (n < 4) {
              bundle_items.push_back(detail::BundleItem{
                  *detail::identify_entry(signed_entry, &why), signed_entry});
            }
          }
        }
      }
    }
    // A signed bundle of a few entries, the same unsigned, and one empty.
    fs::create_directories(corpus / "cache_bundle");
    detail::write_bundle(corpus / "cache_bundle" / "signed.jwb", bundle_items,
                         &fuzz::fuzz_signing_key());
    detail::write_bundle(corpus / "cache_bundle" / "unsigned.jwb",
                         bundle_items);
    detail::write_bundle(corpus / "cache_bundle" / "empty.jwb", {});
  }
  fs::remove_all(scratch);

  int n = 0;
  for (const jw_kernel_schema& c : kernel_set::schemas())
    write(corpus / "schema" / ("kernel-set-" + std::to_string(n++)),
          fuzz::encode_schema(c));
  return 0;
}
