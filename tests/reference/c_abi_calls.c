/* c_abi_calls.c — calls into a plugin that only C can make: in C an enum
 * argument may carry any int, as a C host's may, while in C++ such a value
 * would already be undefined at the call site. The reference must refuse
 * it with an error (jitwarm.h rule R4). */
#include <jitwarm/jitwarm.h>

jw_status call_copy_with_direction(const jw_platform_desc* platform, void* dst,
                                   const void* src, size_t bytes,
                                   int direction) {
  return platform->copy(platform->user_data, 0, dst, src, bytes,
                        (jw_copy_direction)direction, NULL);
}
