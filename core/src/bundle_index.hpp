// Which bundle each entry of a cache directory came from, and which of
// those entries a runtime ever loaded: what lets an operator see a bundle
// that never served anything (CacheReport::bundles, `jitwarm cache stats`).
//
// Under the cache directory's bundles/ folder (never walked as entries):
//   <id>.json        one record per bundle imported (write_bundle_record):
//                    {"format": 1, "id", "name", "imported" (seconds since
//                    the epoch), "entries": [entry names]}, written to a
//                    temporary file and renamed; a re-import of the same
//                    bundle rewrites it.
//   <id>.hits/<name> an empty file, made the first time a process hits
//                    entry <name> of bundle <id> (BundleHits::note_hit).
// * An entry counts for each bundle that carried it, also when the import
//   found it present already.
// * A record that cannot be read or is malformed is ignored, with the
//   reason in `problems`; nothing here throws on what it finds on disk.
// * Counting a hit never fails a lookup: a marker that cannot be made is
//   logged, once per entry and process.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "log.hpp"

namespace jitwarm::detail {

struct BundleRecord {
  std::string id;    // bundle_file_id of the file imported
  std::string name;  // its file name
  int64_t imported = 0;
  std::vector<std::string> entries;  // entry names (cache_entry.hpp)
};

// A hash of the file's contents (XXH3-128, hex). Throws Error(JW_ERROR_IO).
std::string bundle_file_id(const std::filesystem::path& bundle);
// Throws Error(JW_ERROR_IO) when the record cannot be written.
void write_bundle_record(const std::filesystem::path& cache_dir,
                         const BundleRecord& record);

struct BundleRecords {
  std::vector<BundleRecord> records;  // oldest import first
  std::vector<std::string> problems;  // records ignored, and why
};
BundleRecords read_bundle_records(const std::filesystem::path& cache_dir);
// Whether a runtime has ever hit entry `name` of bundle `id`.
bool bundle_entry_was_hit(const std::filesystem::path& cache_dir,
                          const std::string& id, const std::string& name);

// The hit side, for a DiskCache: the records are read on the first hit of
// the process (a directory without bundles costs one failed stat then),
// and each (bundle, entry) is marked once per process.
class BundleHits {
 public:
  BundleHits(std::filesystem::path cache_dir, const Logger* logger);
  // True when entry `name` came from a bundle (its hit is a bundle hit);
  // marks it hit for each such bundle.
  bool note_hit(const std::string& name);

 private:
  void read_once();

  std::filesystem::path cache_dir_;
  const Logger* logger_;
  std::once_flag read_;
  std::map<std::string, std::vector<std::string>> bundles_of_;  // name -> ids
  std::mutex mutex_;
  std::set<std::string> marked_;  // names marked by this process
};

}  // namespace jitwarm::detail
