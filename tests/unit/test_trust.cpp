// Signed cache entries and bundles, and the trust that checks them
// (core/src/signing.hpp, entry_trust.hpp; docs/operators.md, "Trust"):
// key pairs as keygen writes them; an entry tampered with by someone who
// can write a tier but holds no key, signed by an unknown key, or unsigned
// while trust is required, refused with its reason, recompiled and counted,
// and a correct launch after it (the CPU reference plugin), or after seal
// in error mode a refused launch; unsigned
// entries loading as before where trust is not required; two trusted keys
// at once; bundles refused (unknown signer, tampered, wrong digest) before
// anything is written, and imported once trusted.
#include <doctest/doctest.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <jitwarm/jitwarm.hpp>

#include <filesystem>
#include <fstream>
#include <mutex>

#include "cache_bundle.hpp"
#include "cache_entry.hpp"
#include "cpu_launch_check.hpp"
#include "disk_cache.hpp"
#include "entry_trust.hpp"
#include "numbered_key.hpp"
#include "signing.hpp"
#include "tampered_entry.hpp"
#include "temporary_directory.hpp"

using namespace jitwarm;
using jitwarm::detail::TemporaryDirectory;
using jitwarm::test::tampered;
using namespace jitwarm::detail;
namespace fs = std::filesystem;

namespace {

std::string read(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}
void write(const fs::path& p, const std::string& bytes) {
  std::ofstream(p, std::ios::binary | std::ios::trunc) << bytes;
}

CompileKey key_for(int n) {
  return jitwarm::test::numbered_key(n);
}

Artifact artifact(int n) {
  Artifact a;
  a.binary = "cubin of " + std::to_string(n);
  a.format = "cubin";
  a.entry_point = "k";
  return a;
}

// Every entry file of a cache directory.
std::vector<fs::path> entry_files(const fs::path& dir) {
  std::vector<fs::path> files;
  for (const auto& e : fs::recursive_directory_iterator(dir / "v1"))
    if (e.path().extension() == ".jwc") files.push_back(e.path());
  return files;
}

// A key pair in its own directory, as `jitwarm cache keygen` writes it.
struct Keys {
  TemporaryDirectory dir{"jitwarm-trust-keys-"};
  CacheKeyPair pair;
  explicit Keys(const char* name = "build.key")
      : pair(write_cache_key_pair((dir.path() / name).string())) {}
  SigningKey secret() const {
    return read_signing_key(pair.secret_key_file, "test");
  }
  PublicKey public_key() const {
    return parse_public_key(pair.public_key, "test");
  }
};

std::shared_ptr<const EntryTrust> trusting(
    std::initializer_list<const Keys*> keys, const Keys* signer = nullptr) {
  std::vector<PublicKey> trusted;
  for (const Keys* k : keys) trusted.push_back(k->public_key());
  std::optional<SigningKey> s;
  if (signer != nullptr) s = signer->secret();
  return std::make_shared<const EntryTrust>(std::move(s), std::move(trusted));
}

// Log lines of a runtime, warnings and up.
struct Captured {
  std::mutex mutex;
  std::vector<std::string> lines;
  std::size_t count(const std::string& text) {
    std::lock_guard lock(mutex);
    std::size_t n = 0;
    for (const auto& l : lines) n += l.find(text) != std::string::npos;
    return n;
  }
};

// A runtime on `dir` with the CPU reference plugin, logging into `log`.
std::unique_ptr<Runtime> runtime_on(const fs::path& dir, Captured& log,
                                    RuntimeOptions o = {}) {
  o.cache_dir = dir.string();
  o.no_remote_cache = true;
  o.log = [&log](jw_log_level level, const std::string& m) {
    std::lock_guard lock(log.mutex);
    if (level >= JW_LOG_WARNING) log.lines.push_back(m);
  };
  auto runtime = std::make_unique<Runtime>(std::move(o));
  runtime->load_plugins();
  return runtime;
}

double metric(const std::string& text, const std::string& series) {
  const std::size_t at = text.find(series + " ");
  REQUIRE_MESSAGE(at != std::string::npos, series);
  return std::stod(text.substr(at + series.size() + 1));
}

std::string rejected(const char* tier, const char* reason) {
  return fmt::format(
      "jitwarm_cache_rejected_entries_total{{tier=\"{}\",reason=\"{}\"}}", tier,
      reason);
}

// A cache directory whose one silu_and_mul entry was written by a runtime
// signing with `signer` (none: unsigned).
void warm_one(const fs::path& dir, const Keys* signer) {
  Captured log;
  RuntimeOptions o;
  if (signer != nullptr) o.signing_key = signer->pair.secret_key_file;
  auto runtime = runtime_on(dir, log, o);
  jitwarm::test::launch_silu_and_mul_and_check(*runtime);
  REQUIRE(runtime->cache_stats().compiles == 1);
  REQUIRE(entry_files(dir).size() == 1);
}

}  // namespace

TEST_CASE(
    "given keygen, then the secret key is mode 0600, the public key one "
    "line, both read back as one key, and neither is ever overwritten") {
  Keys keys;
  struct stat st {};
  REQUIRE(::stat(keys.pair.secret_key_file.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  const std::string pub = read(keys.pair.public_key_file);
  CHECK(pub == keys.pair.public_key + "\n");
  CHECK(pub.find('\n') == pub.size() - 1);
  CHECK(keys.pair.key_id.size() == 16);
  CHECK(keys.secret().public_key.id_hex() == keys.pair.key_id);
  CHECK(keys.public_key().id_hex() == keys.pair.key_id);
  // The file form of a trusted key: the .pub file itself.
  const std::vector<PublicKey> from_file =
      read_trusted_keys(keys.pair.public_key_file, "test");
  REQUIRE(from_file.size() == 1);
  CHECK(from_file[0].id == keys.public_key().id);
  try {
    write_cache_key_pair(keys.pair.secret_key_file);
    FAIL("overwrote a key");
  } catch (const Error& e) {
    CHECK(e.status() == JW_ERROR_ALREADY_EXISTS);
  }
  CHECK(read(keys.pair.public_key_file) == pub);
}

TEST_CASE("given text that is no key, then it is refused naming where") {
  for (const char* bad : {"jitwarm-ed25519:", "jitwarm-ed25519:AAAA",
                          "ssh-ed25519 AAAAC3Nza", "/no/such/key/file.pub"}) {
    CAPTURE(bad);
    try {
      read_trusted_keys(bad, "--trusted-key");
      FAIL("accepted");
    } catch (const Error& e) {
      CHECK(e.status() == JW_ERROR_INVALID_ARGUMENT);
      CHECK(std::string(e.what()).find("--trusted-key") != std::string::npos);
    }
  }
  Keys keys;
  // A public key where the secret one belongs.
  CHECK_THROWS_AS(read_signing_key(keys.pair.public_key_file, "--signing-key"),
                  Error);
}

TEST_CASE(
    "given entries signed, tampered, unsigned or by another key, then trust "
    "accepts only the trusted signatures, each refusal with its reason") {
  Keys build, rotated("next.key"), stranger("other.key");
  const SigningKey build_key = build.secret();
  const CompileKey key = key_for(1);
  const std::string good = serialize_entry(key, "fp", artifact(1), &build_key);
  const std::string plain = serialize_entry(key, "fp", artifact(1));
  const SigningKey stranger_key = stranger.secret();
  const std::string foreign =
      serialize_entry(key, "fp", artifact(1), &stranger_key);
  const std::shared_ptr<const EntryTrust> trust = trusting({&build});

  const auto outcome = [&](const std::string& bytes, const EntryTrust* t) {
    std::string why;
    RejectReason reason = RejectReason::corrupt;
    const bool loaded =
        entry_artifact(bytes, key, "fp", &why, t, &reason).has_value();
    return std::make_pair(loaded ? std::string("loaded")
                                 : std::string(reject_reason_label(reason)),
                          why);
  };
  CHECK(outcome(good, trust.get()).first == "loaded");
  const auto [tampered_outcome, tampered_why] =
      outcome(tampered(good), trust.get());
  CHECK(tampered_outcome == "bad_signature");
  CHECK(tampered_why.find("tampered") != std::string::npos);
  CHECK(outcome(plain, trust.get()).first == "unsigned");
  const auto [foreign_outcome, foreign_why] = outcome(foreign, trust.get());
  CHECK(foreign_outcome == "unknown_signer");
  CHECK(foreign_why.find(stranger.pair.key_id) != std::string::npos);
  // Without trust, as before: signed or not, loaded; a tampered entry
  // whose checksum was fixed cannot be told from a good one.
  CHECK(outcome(plain, nullptr).first == "loaded");
  CHECK(outcome(good, nullptr).first == "loaded");
  CHECK(outcome(tampered(good), nullptr).first == "loaded");
  // Rotation: both keys trusted, entries of either load.
  const SigningKey rotated_key = rotated.secret();
  const std::shared_ptr<const EntryTrust> both = trusting({&build, &rotated});
  CHECK(outcome(good, both.get()).first == "loaded");
  CHECK(
      outcome(serialize_entry(key, "fp", artifact(1), &rotated_key), both.get())
          .first == "loaded");
  // A signed entry names its signer; re-signing replaces the signature.
  std::string why;
  CHECK(identify_entry(good, &why)->signer == build_key.public_key.id);
  const std::optional<std::string> resigned = resign_entry(plain, rotated_key);
  REQUIRE(resigned);
  CHECK(outcome(*resigned, both.get()).first == "loaded");
  CHECK(outcome(*resigned, trust.get()).first == "unknown_signer");
}

TEST_CASE(
    "given a tampered cubin in a signed disk entry, when a runtime that "
    "trusts the signer launches its kernel, then the entry is refused as "
    "tampered, counted, warned about once, recompiled, and the launch is "
    "right") {
  Keys build;
  TemporaryDirectory dir("jitwarm-trust-disk-");
  warm_one(dir.path(), &build);
  const fs::path entry = entry_files(dir.path()).front();
  // Signed by the build key, as verify reports.
  RuntimeOptions check;
  check.cache_dir = dir.path().string();
  check.trusted_keys = {build.pair.public_key};
  CacheReport report = verify_cache(check);
  REQUIRE(report.signers.size() == 1);
  CHECK(report.signers[0].first == build.pair.key_id);
  CHECK(report.untrusted.empty());

  write(entry, tampered(read(entry)));
  report = verify_cache(check);
  CHECK(report.corrupt == 0);  // its checksum is right
  REQUIRE(report.untrusted.size() == 1);
  CHECK(report.untrusted[0].why.find("tampered") != std::string::npos);

  Captured log;
  RuntimeOptions o;
  o.trusted_keys = {build.pair.public_key_file};  // a file works as well
  auto runtime = runtime_on(dir.path(), log, o);
  jitwarm::test::launch_silu_and_mul_and_check(*runtime);
  const CacheStats s = runtime->cache_stats();
  CHECK(s.compiles == 1);
  CHECK(s.disk_hits == 0);
  CHECK(s.disk_rejects == 1);
  const std::string text = runtime->metrics_text();
  CHECK(metric(text, rejected("disk", "bad_signature")) == 1);
  CHECK(metric(text, rejected("disk", "corrupt")) == 0);
  CHECK(log.count("tampered") == 1);
}

TEST_CASE(
    "given an unsigned entry, then a runtime requiring trust refuses it as "
    "unsigned, and one without trust loads it as before") {
  Keys build;
  TemporaryDirectory dir("jitwarm-trust-unsigned-");
  warm_one(dir.path(), nullptr);
  {
    Captured log;
    auto as_before = runtime_on(dir.path(), log);
    jitwarm::test::launch_silu_and_mul_and_check(*as_before);
    CHECK(as_before->cache_stats().compiles == 0);
    CHECK(as_before->cache_stats().disk_hits == 1);
    CHECK(log.lines.empty());
  }
  Captured log;
  RuntimeOptions o;
  o.trusted_keys = {build.pair.public_key};
  auto strict = runtime_on(dir.path(), log, o);
  jitwarm::test::launch_silu_and_mul_and_check(*strict);
  CHECK(strict->cache_stats().compiles == 1);
  CHECK(metric(strict->metrics_text(), rejected("disk", "unsigned")) == 1);
  CHECK(log.count("not signed") == 1);
}

TEST_CASE(
    "given entries of an unknown signer, then they are refused until its "
    "key joins the trusted set, and with two trusted keys both load") {
  Keys old_key, new_key("new.key");
  TemporaryDirectory dir("jitwarm-trust-rotation-");
  warm_one(dir.path(), &new_key);
  {
    Captured log;
    RuntimeOptions o;
    o.trusted_keys = {old_key.pair.public_key};
    auto runtime = runtime_on(dir.path(), log, o);
    jitwarm::test::launch_silu_and_mul_and_check(*runtime);
    CHECK(runtime->cache_stats().compiles == 1);
    CHECK(metric(runtime->metrics_text(), rejected("disk", "unknown_signer")) ==
          1);
  }
  // The refused entry was replaced by that runtime's unsigned compile:
  // the build box writes it again, signed with the new key.
  fs::remove_all(dir.path() / "v1");
  warm_one(dir.path(), &new_key);
  TemporaryDirectory other("jitwarm-trust-rotation-old-");
  warm_one(other.path(), &old_key);
  for (const fs::path* d : {&dir.path(), &other.path()}) {
    Captured log;
    RuntimeOptions o;
    o.trusted_keys = {old_key.pair.public_key, new_key.pair.public_key};
    auto runtime = runtime_on(*d, log, o);
    jitwarm::test::launch_silu_and_mul_and_check(*runtime);
    CHECK(runtime->cache_stats().compiles == 0);
    CHECK(runtime->cache_stats().disk_hits == 1);
  }
}

TEST_CASE(
    "given bundles, then import refuses an unknown signer, a tampered "
    "bundle and a wrong digest before writing anything, and imports a "
    "trusted or pinned one") {
  Keys build, stranger("other.key");
  TemporaryDirectory source("jitwarm-trust-bundle-src-"),
      work("jitwarm-trust-bundle-");
  {
    DiskCache cache(source.path(), "", 0, nullptr);
    for (int i = 0; i < 3; ++i)
      REQUIRE(cache.store(EntryRef(key_for(i), "fp"), artifact(i)));
  }
  RuntimeOptions exporting;
  exporting.cache_dir = source.path().string();
  exporting.signing_key = build.pair.secret_key_file;
  const fs::path bundle = work.path() / "signed.jwb";
  const CacheBundleSummary exported =
      export_cache_bundle(bundle.string(), {}, exporting);
  CHECK(exported.signer == build.pair.key_id);
  CHECK(exported.sha256.size() == 64);

  const fs::path target = work.path() / "node-cache";
  const auto import_into = [&](const fs::path& file,
                               std::vector<std::string> trusted,
                               std::string pin = {}) {
    RuntimeOptions o;
    o.cache_dir = target.string();
    o.trusted_keys = std::move(trusted);
    return import_cache_bundle(file.string(), o, pin);
  };
  const auto refused = [&](const fs::path& file,
                           std::vector<std::string> trusted, std::string pin,
                           const std::string& words) {
    try {
      import_into(file, std::move(trusted), std::move(pin));
      FAIL("imported");
    } catch (const Error& e) {
      CHECK(e.status() == JW_ERROR_INVALID_ARGUMENT);
      CHECK_MESSAGE(std::string(e.what()).find(words) != std::string::npos,
                    e.what());
    }
    CHECK((!fs::exists(target / "v1") || entry_files(target).empty()));
  };
  refused(bundle, {stranger.pair.public_key}, "", "not trusted");
  refused(bundle, {}, std::string(64, '0'), "pinned");

  // Someone without the key changes a cubin inside and keeps the signature.
  std::vector<BundleItem> items = read_bundle(bundle);
  for (BundleItem& item : items)
    if (item.identity.key == key_for(1)) item.bytes = tampered(item.bytes);
  const fs::path forged = work.path() / "forged.jwb";
  write_bundle(forged, items);
  const std::string original = read(bundle);
  constexpr std::size_t kBlock = 16 + kKeyIdBytes + kSignatureBytes;
  std::string forged_bytes = read(forged);
  forged_bytes.replace(forged_bytes.size() - 16, 16,
                       original.substr(original.size() - kBlock));
  write(forged, forged_bytes);
  refused(forged, {build.pair.public_key}, "", "tampered");

  // Trusted (with another key beside it), and pinned: imported.
  const CacheBundleSummary imported =
      import_into(bundle, {stranger.pair.public_key, build.pair.public_key},
                  exported.sha256);
  CHECK(imported.written == 3);
  CHECK(imported.signer == build.pair.key_id);
  // Its entries were signed as they were exported: a node requiring trust
  // loads them.
  const std::shared_ptr<const EntryTrust> trust = trusting({&build});
  DiskCache node(target, "", 0, nullptr);
  node.set_trust(trust);
  for (int i = 0; i < 3; ++i) {
    const TierLoad loaded = node.load(EntryRef(key_for(i), "fp"));
    CHECK(loaded.artifact);
    CHECK_FALSE(loaded.rejected());
  }

  // A node that imported the forged bundle without trust still refuses
  // the tampered entry at load, as tampered.
  TemporaryDirectory lax("jitwarm-trust-bundle-lax-");
  RuntimeOptions o;
  o.cache_dir = lax.path().string();
  import_cache_bundle(forged.string(), o);
  DiskCache strict(lax.path(), "", 0, nullptr);
  strict.set_trust(trust);
  const TierLoad report = strict.load(EntryRef(key_for(1), "fp"));
  CHECK_FALSE(report.artifact);
  CHECK(report.rejected_in(CacheTier::disk));
  CHECK(report.rejected_in(CacheTier::disk) == RejectReason::bad_signature);
  CHECK(strict.load(EntryRef(key_for(0), "fp")).artifact);
}

TEST_CASE(
    "given a runtime with a signing key, then what it writes is signed by "
    "that key, and an unsigned bundle imports only without trust") {
  Keys build;
  TemporaryDirectory dir("jitwarm-trust-writer-"),
      work("jitwarm-trust-writer-bundle-");
  warm_one(dir.path(), &build);
  std::string why;
  const auto id = identify_entry(read(entry_files(dir.path()).front()), &why);
  REQUIRE(id);
  CHECK(to_hex(id->signer) == build.pair.key_id);

  RuntimeOptions plain;
  plain.cache_dir = dir.path().string();
  const fs::path bundle = work.path() / "unsigned.jwb";
  CHECK(export_cache_bundle(bundle.string(), {}, plain).signer.empty());
  RuntimeOptions node;
  node.cache_dir = (work.path() / "node").string();
  node.trusted_keys = {build.pair.public_key};
  CHECK_THROWS_WITH_AS(import_cache_bundle(bundle.string(), node),
                       doctest::Contains("not signed"), Error);
  node.trusted_keys.clear();
  CHECK(import_cache_bundle(bundle.string(), node).written == 1);
}

TEST_CASE(
    "given a sealed runtime in error mode that trusts the signer, when the "
    "entry of a launch was tampered with, then the launch is refused, not "
    "compiled, and the refused entry counted") {
  Keys build;
  TemporaryDirectory dir("jitwarm-trust-sealed-");
  warm_one(dir.path(), &build);
  const fs::path entry = entry_files(dir.path()).front();
  write(entry, tampered(read(entry)));
  Captured log;
  RuntimeOptions o;
  o.trusted_keys = {build.pair.public_key};
  o.jit_monitor = JitMonitorMode::error;
  auto runtime = runtime_on(dir.path(), log, o);
  runtime->seal();
  try {
    jitwarm::test::launch_silu_and_mul_and_check(*runtime);
    FAIL("a tampered entry was launched or compiled after seal");
  } catch (const Error& e) {
    CHECK(e.status() == JW_ERROR_JIT_REFUSED);
  }
  CHECK(runtime->cache_stats().compiles == 0);
  CHECK(metric(runtime->metrics_text(), rejected("disk", "bad_signature")) ==
        1);
}
