// case_arguments.cpp — cases placed in a memory space, and their
// storage-free arguments (see case_arguments.hpp).
#include "case_arguments.hpp"

#include <jitwarm/jitwarm.hpp>

#include <fmt/format.h>

#include <cstring>
#include <stdexcept>

namespace jitwarm::device_args {
namespace {

// Room after the allocation's start for the one-element misalignment.
constexpr std::size_t kAlignmentSlack = 16;

}  // namespace

PlacedCase::PlacedCase(const Case& the_case, MemorySpace& memory)
    : case_(the_case), memory_(memory) {
  try {
    // Phase 1: allocate everything, so every address is known.
    for (const Buffer& buffer : case_.buffers) {
      void* base = memory_.allocate(buffer.bytes.size() + kAlignmentSlack);
      bases_.push_back(base);
      if (reinterpret_cast<uintptr_t>(base) % 16 != 0) {
        throw std::runtime_error(fmt::format(
            "{} returned {} for buffer '{}', which is not 16-byte aligned: "
            "the runner cannot build aligned tensors on it",
            memory_.describe(), base, buffer.name));
      }
      data_.push_back(static_cast<unsigned char*>(base) +
                      (buffer.misaligned ? buffer.element_size() : 0));
    }
    // Phase 2: contents, with the address slots filled for this space.
    for (std::size_t i = 0; i < case_.buffers.size(); ++i) reset(i);
    // Arguments.
    for (const CaseArg& arg : case_.args) {
      if (const auto* tensor = std::get_if<TensorArg>(&arg)) {
        auto placed = std::make_unique<jw_tensor>(
            tensor->strides.empty()
                ? make_tensor(data_.at(tensor->buffer), tensor->dtype,
                              tensor->shape, memory_.device_index())
                : make_tensor(data_.at(tensor->buffer), tensor->dtype,
                              tensor->shape, tensor->strides,
                              memory_.device_index()));
        args_.push_back(jitwarm::arg(*placed));
        tensors_.push_back(std::move(placed));
      } else {
        args_.push_back(jitwarm::arg(std::get<jw_scalar>(arg)));
      }
    }
  } catch (...) {
    for (void* base : bases_) memory_.release(base);
    throw;
  }
}

PlacedCase::~PlacedCase() {
  for (void* base : bases_) memory_.release(base);
}

std::vector<unsigned char> PlacedCase::initial_image(std::size_t buffer) const {
  const Buffer& source = case_.buffers.at(buffer);
  std::vector<unsigned char> image = source.bytes;
  for (const AddressSlot& slot : source.addresses) {
    const auto address = static_cast<int64_t>(
        reinterpret_cast<uintptr_t>(data_.at(slot.target)) + slot.byte_offset);
    std::memcpy(image.data() + static_cast<std::size_t>(slot.element) * 8,
                &address, sizeof address);
  }
  return image;
}

void PlacedCase::reset(std::size_t buffer) {
  const std::vector<unsigned char> image = initial_image(buffer);
  memory_.upload(data_.at(buffer), image.data(), image.size());
}

std::vector<unsigned char> PlacedCase::read(std::size_t buffer) const {
  std::vector<unsigned char> image(case_.buffers.at(buffer).bytes.size());
  memory_.download(image.data(), data_.at(buffer), image.size());
  return image;
}

MetadataArgs metadata_args(const Case& the_case) {
  MetadataArgs out;
  for (const CaseArg& arg : the_case.args) {
    if (const auto* tensor = std::get_if<TensorArg>(&arg)) {
      const bool aligned = !the_case.buffers.at(tensor->buffer).misaligned;
      auto meta = std::make_unique<jw_tensor_meta>(
          tensor->strides.empty()
              ? make_tensor_meta(tensor->dtype, tensor->shape, aligned)
              : make_tensor_meta(tensor->dtype, tensor->shape, tensor->strides,
                                 aligned));
      out.args.push_back(warmup_arg(*meta));
      out.metas.push_back(std::move(meta));
    } else {
      out.args.push_back(jitwarm::arg(std::get<jw_scalar>(arg)));
    }
  }
  return out;
}

}  // namespace jitwarm::device_args
