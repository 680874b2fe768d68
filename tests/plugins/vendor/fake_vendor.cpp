// A stand-in for a vendor library (like libcuda.so.1). Its soname names a
// file that is never installed, so a plugin linked against it fails to load
// with "missing dependency" — the case of a GPU plugin on a driverless host
// that links its driver instead of opening it at run time.
extern "C" __attribute__((visibility("default"))) int
fake_vendor_library_version(void) {
  return 1;
}
