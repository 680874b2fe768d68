"""A stand-in for the parts of torch the jitwarm binding reads (torch is not
installed on the CI machine): a Tensor with data_ptr(), dtype, shape,
stride() and get_device(), dtype objects whose str() is "torch.<name>", and
torch._C._cuda_getCurrentRawStream, torch.cuda's device and capability. A tensor views host memory (a NumPy
array) or, for device tensors, a fake device address that is never read."""
import types

import numpy as np


class dtype:  # noqa: N801  (torch's name)
    def __init__(self, name):
        self.name = name

    def __str__(self):
        return "torch." + self.name

    __repr__ = __str__


float16 = dtype("float16")
bfloat16 = dtype("bfloat16")
float32 = dtype("float32")
int32 = dtype("int32")
int64 = dtype("int64")

current_stream_calls = []
CURRENT_STREAM = 0xABC0


def _cuda_getCurrentRawStream(device):  # noqa: N802  (torch's name)
    current_stream_calls.append(device)
    return CURRENT_STREAM


_C = types.SimpleNamespace(_cuda_getCurrentRawStream=_cuda_getCurrentRawStream)


class _Cuda:
    """torch.cuda as far as jitwarm.triton asks it: the current device and
    its compute capability (an sm_90 GPU)."""
    capability = (9, 0)
    capability_calls = 0
    available = True

    def current_device(self):
        if not self.available:
            raise RuntimeError("No CUDA GPUs are available")
        return 0

    def get_device_capability(self, device=None):
        _Cuda.capability_calls += 1
        return self.capability


cuda = _Cuda()
version = types.SimpleNamespace(hip=None, cuda="13.0")


def reset():
    current_stream_calls.clear()
    cuda.available = True


class Tensor:
    def __init__(self, dtype, shape, strides=None, data_ptr=0, device=-1, array=None):
        self.dtype = dtype
        self.shape = tuple(shape)
        if strides is None:
            strides, step = [], 1
            for n in reversed(self.shape):
                strides.insert(0, step)
                step *= n
        self._strides = tuple(strides)
        self._ptr = data_ptr
        self._device = device
        self.array = array  # keeps host memory alive

    @classmethod
    def from_numpy(cls, array):
        return cls(dtype(array.dtype.name), array.shape,
                   [s // array.itemsize for s in array.strides],
                   array.ctypes.data, -1, array)

    def data_ptr(self):
        return self._ptr

    def stride(self):
        return self._strides

    def get_device(self):
        return self._device


class Parameter(Tensor):
    """A subclass, as torch.nn.Parameter is."""
