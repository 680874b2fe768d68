// scale.cu — an example of a kernel of your own, compiled from source at run
// time by the CUDA and HIP plugins (docs/kernel-descriptors.md):
//
//   out[i] = x[i] * factor   for i in [0, n)
//
// It includes jitwarm's portability header (thread and block indices,
// fixed-width integers) so one source compiles with NVRTC for NVIDIA and
// with hiprtc or clang for AMD. Its descriptor, scale.toml, says how a
// compile key becomes its template arguments (the element type and the
// integer type of n) and how a launch's grid comes from n.
#include "portability.cuh"

namespace example {

template <typename T, typename N>
__global__ void scale(T* out, const T* x, N n, float factor) {
  const jw::i64 stride =
      static_cast<jw::i64>(jw::block_threads()) * jw::grid_blocks_x();
  for (jw::i64 i =
           static_cast<jw::i64>(jw::block_index_x()) * jw::block_threads() +
           jw::thread_index();
       i < static_cast<jw::i64>(n); i += stride) {
    out[i] = static_cast<T>(static_cast<float>(x[i]) * factor);
  }
}

}  // namespace example
