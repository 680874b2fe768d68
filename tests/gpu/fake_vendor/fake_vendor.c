// Stand-ins for a vendor compiler library (tests/gpu/test_vendor_library.py):
// built once with the entry point the probe's API table needs and once
// without it (-DJW_FAKE_VENDOR_WITHOUT_ENTRY), as modules without a soname,
// so each copy is told apart by its path alone.
#ifndef JW_FAKE_VENDOR_WITHOUT_ENTRY
__attribute__((visibility("default"))) int jw_fake_vendor_entry(void) {
  return 42;
}
#else
__attribute__((visibility("default"))) int jw_fake_vendor_other(void) {
  return 0;
}
#endif
