"""Tensors from other libraries: torch tensors (through a stand-in torch
module: their attributes are read directly), objects with
__cuda_array_interface__, and DLPack producers. Device tensors here carry
fake addresses: they go to key_for and to Python overrides, which never read
them; host memory goes through the CPU reference for real."""
import ctypes

import numpy as np
import pytest

import jitwarm
from conftest import SILU, aligned_empty, silu_reference

DEVICE_ADDRESS = 0x7F00_0000_0000  # fake, 16-byte aligned, never dereferenced


def silu_data(T=2, H=16):
    x = aligned_empty((T, 2 * H), np.float32)
    x[...] = np.linspace(-2, 2, x.size, dtype=np.float32).reshape(x.shape)
    return aligned_empty((T, H), np.float32), x


def capture_override(rt, seen):
    """A Python override of silu_and_mul on cpu that records what it got."""
    def silu_and_mul(out, x, T, H):
        seen.append({"out": out, "x": x, "T": T, "H": H,
                     "stream": jitwarm.current_launch_stream()})
    return rt.register_kernels({SILU: ("cpu", silu_and_mul)})


# --- torch -------------------------------------------------------------------
def test_given_torch_cpu_tensors_then_the_kernel_reads_their_memory(rt, fake_torch):
    out, x = silu_data()
    t_out, t_x = fake_torch.Tensor.from_numpy(out), fake_torch.Parameter.from_numpy(x)
    rt.kernel(SILU)(t_out, t_x, 2, 16)
    np.testing.assert_allclose(out, silu_reference(x), rtol=1e-6)
    assert fake_torch.current_stream_calls == []  # host memory: no stream asked


def test_given_torch_device_tensors_then_dtype_strides_and_alignment_come_from_them(rt,
                                                                                  fake_torch):
    x = fake_torch.Tensor(fake_torch.bfloat16, (2, 32), data_ptr=DEVICE_ADDRESS, device=0)
    out = fake_torch.Tensor(fake_torch.bfloat16, (2, 16), data_ptr=DEVICE_ADDRESS + 2, device=0)
    key = rt.kernel(SILU).key_for(out, x, 2, 16)
    assert "out:bf16*:a1," in key.text and "x:bf16*:a16" in key.text
    strided = fake_torch.Tensor(fake_torch.bfloat16, (2, 32), strides=(64, 2),
                                data_ptr=DEVICE_ADDRESS, device=0)
    with pytest.raises(jitwarm.InvalidArgumentError, match="'x'"):
        rt.kernel(SILU).key_for(out, strided, 2, 16)


def test_given_torch_cuda_tensors_then_the_launch_uses_torchs_current_stream(rt, fake_torch):
    x = fake_torch.Tensor(fake_torch.float16, (2, 32), data_ptr=DEVICE_ADDRESS, device=0)
    out = fake_torch.Tensor(fake_torch.float16, (2, 16), data_ptr=DEVICE_ADDRESS, device=0)
    seen = []
    with capture_override(rt, seen):
        rt.kernel(SILU)(out, x, 2, 16)
        (call,) = seen
        assert call["x"] is x and call["out"] is out  # the caller's own objects
        assert (call["T"], call["H"]) == (2, 16)
        assert call["stream"] == fake_torch.CURRENT_STREAM
        assert fake_torch.current_stream_calls == [0]
        # A stream bound with on() wins over torch's.
        rt.kernel(SILU).on(stream=0x5150)(out, x, 2, 16)
        assert seen[-1]["stream"] == 0x5150 and fake_torch.current_stream_calls == [0]


# --- __cuda_array_interface__ ------------------------------------------------
class CudaArray:
    """An object with __cuda_array_interface__ (v3), like CuPy's or Numba's."""

    def __init__(self, ptr, shape, typestr, strides=None, stream=None, mask=None):
        self.interface = {"data": (ptr, False), "shape": tuple(shape), "typestr": typestr,
                          "strides": strides, "version": 3, "mask": mask}
        if stream is not None:
            self.interface["stream"] = stream

    @property
    def __cuda_array_interface__(self):
        return self.interface


def test_given_the_cuda_array_interface_then_its_memory_shape_and_strides_are_read(rt):
    # Host memory behind the interface, so the CPU reference can check it.
    out, x = silu_data()
    cx = CudaArray(x.ctypes.data, x.shape, "<f4", strides=x.strides)
    cout = CudaArray(out.ctypes.data, out.shape, "<f4")
    rt.kernel(SILU)(cout, cx, 2, 16)
    np.testing.assert_allclose(out, silu_reference(x), rtol=1e-6)


def test_given_a_cuda_array_interface_stream_then_the_launch_runs_on_it(rt):
    x = CudaArray(DEVICE_ADDRESS, (2, 32), "<f2", stream=0x77)
    out = CudaArray(DEVICE_ADDRESS, (2, 16), "<f2", stream=0x77)
    seen = []
    with capture_override(rt, seen):
        rt.kernel(SILU)(out, x, 2, 16)
    assert seen[0]["stream"] == 0x77 and seen[0]["x"] is x
    assert "x:fp16*:a16" in rt.kernel(SILU).key_for(out, x, 2, 16).text


def test_given_bad_cuda_array_interfaces_then_they_are_refused(rt):
    out = CudaArray(DEVICE_ADDRESS, (2, 16), "<f4")
    kernel = rt.kernel(SILU)
    with pytest.raises(jitwarm.InvalidArgumentError, match="not a little-endian scalar"):
        kernel.key_for(out, CudaArray(DEVICE_ADDRESS, (2, 32), ">f4"), 2, 16)
    with pytest.raises(jitwarm.InvalidArgumentError, match="masked arrays"):
        kernel.key_for(out, CudaArray(DEVICE_ADDRESS, (2, 32), "<f4", mask=object()), 2, 16)
    with pytest.raises(jitwarm.InvalidArgumentError, match="not a multiple of the element size"):
        kernel.key_for(out, CudaArray(DEVICE_ADDRESS, (2, 32), "<f4", strides=(130, 4)), 2, 16)
    with pytest.raises(jitwarm.InvalidArgumentError, match="'<c8' has no jitwarm dtype"):
        kernel.key_for(out, CudaArray(DEVICE_ADDRESS, (2, 32), "<c8"), 2, 16)


# --- DLPack ------------------------------------------------------------------
class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int), ("device_id", ctypes.c_int)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int),
                ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p),
                ("deleter", ctypes.c_void_p)]


# The capsule is being freed: it must not become a Python object again.
CAPSULE_DESTRUCTOR = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, CAPSULE_DESTRUCTOR]

KDL_CUDA, KDL_BFLOAT, KDL_FLOAT = 2, 4, 2


class FakeDLPack:
    """A DLPack producer of a device tensor at a fake address: it records the
    stream it was asked to synchronize to and when its capsule is freed."""

    def __init__(self, shape, code, bits, ptr=DEVICE_ADDRESS, byte_offset=0, device_id=0):
        self.shape = (ctypes.c_int64 * len(shape))(*shape)
        self.managed = DLManagedTensor()
        t = self.managed.dl_tensor
        t.data, t.device, t.ndim = ptr, DLDevice(KDL_CUDA, device_id), len(shape)
        t.dtype, t.shape, t.byte_offset = DLDataType(code, bits, 1), self.shape, byte_offset
        self.streams, self.freed = [], 0

        def destructor(capsule):
            self.freed += 1
        self.destructor = CAPSULE_DESTRUCTOR(destructor)

    def __dlpack_device__(self):
        return (KDL_CUDA, self.managed.dl_tensor.device.device_id)

    def __dlpack__(self, stream=None):
        self.streams.append(stream)
        return _capsule_new(ctypes.addressof(self.managed), b"dltensor", self.destructor)


def test_given_a_dlpack_device_tensor_then_dtype_offset_and_stream_follow_the_protocol(rt):
    x = FakeDLPack((2, 32), KDL_BFLOAT, 16)
    out = FakeDLPack((2, 16), KDL_BFLOAT, 16, byte_offset=2)
    key = rt.kernel(SILU).key_for(out, x, 2, 16)
    assert "x:bf16*:a16" in key.text and "out:bf16*:a1," in key.text
    # No stream given: CUDA's legacy default stream (1), as the protocol says.
    assert x.streams == [1] and x.freed == 1 and out.freed == 1
    seen = []
    with capture_override(rt, seen):
        rt.kernel(SILU).on(stream=0x99)(out, x, 2, 16)
    assert x.streams[-1] == 0x99 and seen[0]["x"] is x and seen[0]["stream"] == 0x99
    assert x.freed == 2  # every capsule is released after the launch


def test_given_a_dlpack_tensor_with_vector_lanes_then_it_is_refused(rt):
    x = FakeDLPack((2, 32), KDL_FLOAT, 32)
    x.managed.dl_tensor.dtype.lanes = 4
    out = FakeDLPack((2, 16), KDL_FLOAT, 32)
    with pytest.raises(jitwarm.InvalidArgumentError, match="vector lanes"):
        rt.kernel(SILU).key_for(out, x, 2, 16)
    assert x.freed == 1


class HostDLPack:
    """NumPy's own DLPack export of a host array, behind an object that has
    nothing else (no buffer protocol)."""

    def __init__(self, array):
        self.array = array

    def __dlpack__(self, stream=None):
        assert stream is None  # host memory: no stream
        return self.array.__dlpack__()

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()


def test_given_a_host_dlpack_tensor_then_the_kernel_reads_it(rt):
    out, x = silu_data()
    rt.kernel(SILU)(HostDLPack(out), HostDLPack(x), 2, 16)
    np.testing.assert_allclose(out, silu_reference(x), rtol=1e-6)
