// ArgumentFields: the one list of what a call's arguments are judged on.
//
// A view of one jw_arg_value whose accessors are every field that
// validation and the argument signature read (specialize_arguments,
// argument_signature.hpp); the launch path's image of the arguments
// (argument_image.hpp) is these fields in words. The contract between the
// two:
//  - Validation reads an argument only through its ArgumentFields, so it
//    reads nothing the image does not hold: arguments with equal images are
//    judged alike (both pass or both fail, with one signature). A field
//    validation needs is added here, and the image writes every accessor.
//  - Values are read whole, enums as stored (raw_enum): an unknown value is
//    a field like any other, never mistaken for a known one; validation
//    range-checks it. Pointers are not fields, only whether data is null and
//    16-byte aligned.
//  - Guards. Some fields say whether the rest can be read: a struct too
//    small, a null pointer, an unknown kind, a warmup tensor at a launch, a
//    rank above JW_MAX_RANK. The constructor reads them in the order
//    validation checks them and stops at the first that fails, which
//    stopped_at() names; each accessor below says which guards it is
//    behind, and is read only past them. Every guard that fails is a
//    refusal: validation refuses the argument there and the image takes
//    none.
// The other fields are read when asked for, not copied: the launch path
// compares an argument's fields with the last launch's on every launch
// (ArgumentImage::matches), and reads them where it compares them.
#pragma once

#include <jitwarm/jitwarm.hpp>

#include <cstddef>
#include <cstdint>
#include <span>

#include "errors.hpp"

namespace jitwarm::detail {

// What the arguments are for: a launch refuses warmup tensors (they have no
// storage) and reads alignment from pointers; a key (warmup, key_for)
// accepts both kinds of tensor.
enum class ArgumentUse { key, launch };

// The guard reading stopped at, in reading order.
enum class FieldGuard : uint8_t {
  none,             // every field of the argument can be read
  argument_struct,  // jw_arg_value::struct_size cannot hold `value`
  unknown_kind,     // a jw_value_kind jitwarm does not know
  tensor_null,      // a runtime tensor's pointer is null
  tensor_struct,    // jw_tensor::struct_size cannot hold device_index
  warmup_launched,  // a warmup tensor at a launch
  meta_null,        // a warmup tensor's metadata pointer is null
  meta_struct,      // jw_tensor_meta::struct_size is too small
  rank,             // rank above JW_MAX_RANK
};

class ArgumentFields {
 public:
  // Reads the guards (`a` must outlive the view).
  ArgumentFields(const jw_arg_value& a, ArgumentUse use);

  FieldGuard stopped_at() const { return stopped_at_; }
  // The struct_size that a *_struct guard refused.
  uint32_t refused_struct_size() const { return refused_struct_size_; }

  // Past argument_struct.
  int kind() const { return kind_; }  // jw_value_kind

  // JW_VALUE_SCALAR: the scalar as passed; its kind as stored (read it with
  // raw_enum).
  const jw_scalar& scalar() const { return argument_->value.scalar; }

  // JW_VALUE_TENSOR, past tensor_struct: its storage and device.
  bool data_null() const { return tensor_->data == nullptr; }
  bool data_aligned_16() const {
    return reinterpret_cast<uintptr_t>(tensor_->data) % 16 == 0;
  }
  int32_t device_index() const { return tensor_->device_index; }

  // JW_VALUE_TENSOR past tensor_struct, or JW_VALUE_WARMUP_TENSOR past
  // meta_null: the metadata. Its dtype is not behind its struct_size guard,
  // since validation names a bad dtype first.
  int dtype() const { return raw_enum(meta_->dtype); }  // jw_dtype
  // Past meta_struct.
  uint32_t rank() const { return rank_; }
  uint32_t flags() const { return meta_->flags; }  // jw_tensor_flag
  bool has_strides() const { return (flags() & JW_TENSOR_HAS_STRIDES) != 0; }
  // Past rank: shape[0, rank), and strides[0, rank) with HAS_STRIDES (none
  // without).
  std::span<const int64_t> shape() const { return {meta_->shape, rank()}; }
  std::span<const int64_t> strides() const {
    if (!has_strides()) return {};
    return {meta_->strides, rank()};
  }
  // is_compact_row_major of the metadata, which reads only the fields
  // above (flags, rank, shape, strides).
  bool compact_row_major() const { return is_compact_row_major(*meta_); }

 private:
  void stop(FieldGuard guard, uint32_t struct_size = 0) {
    stopped_at_ = guard;
    refused_struct_size_ = struct_size;
  }
  void read_metadata_guards(const jw_tensor_meta& m);

  const jw_arg_value* argument_;
  const jw_tensor* tensor_ = nullptr;
  const jw_tensor_meta* meta_ = nullptr;
  FieldGuard stopped_at_ = FieldGuard::none;
  uint32_t refused_struct_size_ = 0;
  int kind_ = 0;
  uint32_t rank_ = 0;  // read for its guard
};

// Inline: the launch path reads a launch's fields on every launch, with
// `use` known.
inline ArgumentFields::ArgumentFields(const jw_arg_value& a, ArgumentUse use)
    : argument_(&a) {
  if (a.struct_size < offsetof(jw_arg_value, value) + sizeof(a.value)) {
    stop(FieldGuard::argument_struct, a.struct_size);
    return;
  }
  kind_ = raw_enum(a.kind);
  if (kind_ == JW_VALUE_SCALAR) return;
  if (kind_ == JW_VALUE_TENSOR) {
    if (a.value.tensor == nullptr) {
      stop(FieldGuard::tensor_null);
    } else if (a.value.tensor->struct_size <
               offsetof(jw_tensor, device_index) + sizeof(int32_t)) {
      stop(FieldGuard::tensor_struct, a.value.tensor->struct_size);
    } else {
      tensor_ = a.value.tensor;
      read_metadata_guards(tensor_->meta);
    }
  } else if (kind_ == JW_VALUE_WARMUP_TENSOR) {
    if (use == ArgumentUse::launch) {
      stop(FieldGuard::warmup_launched);
    } else if (a.value.meta == nullptr) {
      stop(FieldGuard::meta_null);
    } else {
      read_metadata_guards(*a.value.meta);
    }
  } else {
    stop(FieldGuard::unknown_kind);
  }
}

inline void ArgumentFields::read_metadata_guards(const jw_tensor_meta& m) {
  meta_ = &m;
  if (m.struct_size < sizeof(jw_tensor_meta)) {
    stop(FieldGuard::meta_struct, m.struct_size);
  } else {
    rank_ = m.rank;
    if (rank_ > JW_MAX_RANK) stop(FieldGuard::rank);
  }
}

}  // namespace jitwarm::detail
