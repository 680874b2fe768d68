"""Launching from Python with NumPy arrays on the CPU reference: arguments by
position and by name, dtype, shape, strides and alignment read from the
array, Python ints of any size under the core's overflow rule, floats, bools,
NumPy scalars, and the errors a launch can raise."""
import numpy as np
import pytest

import jitwarm
from conftest import EXPAND, RMS_NORM, SILU, aligned_empty, silu_reference


def silu_args(T=3, H=16, dtype=np.float32):
    x = aligned_empty((T, 2 * H), dtype)
    x[...] = np.linspace(-3, 3, x.size, dtype=np.float64).reshape(x.shape).astype(dtype)
    out = aligned_empty((T, H), dtype)
    return out, x


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_given_numpy_arrays_when_launching_by_position_then_the_kernel_computes(rt, dtype):
    out, x = silu_args(dtype=dtype)
    rt.kernel(SILU)(out, x, 3, 16)
    np.testing.assert_allclose(out, silu_reference(x), rtol=1e-3 if dtype == np.float16 else 1e-6)


def test_given_arguments_by_name_in_any_order_then_the_launch_is_the_same(rt):
    out, x = silu_args()
    rt.kernel(SILU)(H=16, T=3, x=x, out=out)
    np.testing.assert_allclose(out, silu_reference(x), rtol=1e-6)
    out[...] = 0
    rt.kernel(SILU)(out, x, H=16, T=3)
    np.testing.assert_allclose(out, silu_reference(x), rtol=1e-6)


def test_given_a_row_strided_view_then_its_strides_reach_the_kernel(rt):
    # rms_norm takes x with a row stride (x_stride): a view of every other row
    # of a wider array, whose row stride is 2 * 64 elements.
    T, H = 3, 48
    base = aligned_empty((2 * T, 64), np.float32)
    base[...] = np.arange(base.size, dtype=np.float32).reshape(base.shape) % 7 - 3
    x = base[::2, :H]
    out = aligned_empty((T, H), np.float32)
    weight = np.linspace(0.5, 1.5, H).astype(np.float32)
    rt.kernel(RMS_NORM)(out, x, 128, weight, 1e-6, T, H)
    xd = x.astype(np.float64)
    expected = xd / np.sqrt((xd * xd).mean(axis=1, keepdims=True) + 1e-6) * weight
    np.testing.assert_allclose(out, expected, rtol=1e-5)


def test_given_a_view_that_is_not_compact_then_the_core_refuses_it(rt):
    out, x = silu_args()
    wide = aligned_empty((3, 64), np.float32)
    with pytest.raises(jitwarm.InvalidArgumentError, match="x"):
        rt.kernel(SILU)(out, wide[:, ::2], 3, 16)


def test_given_alignment_then_the_key_reads_it_from_the_data_pointer(rt):
    kernel = rt.kernel(SILU)
    out, x = silu_args()
    assert "x:fp32*:a16" in kernel.key_for(out, x, 3, 16).text
    shifted = aligned_empty((3, 32), np.float32, offset_elements=1)
    key = kernel.key_for(aligned_empty((3, 16), np.float32, 1), shifted, 3, 16)
    assert "out:fp32*:a1," in key.text and "x:fp32*:a1," in key.text


def test_given_dtypes_then_the_key_reads_them_from_the_array(rt):
    kernel = rt.kernel(SILU)
    assert "x:fp16*" in kernel.key_for(*silu_args(dtype=np.float16), 3, 16).text
    with pytest.raises(jitwarm.InvalidArgumentError, match="float64|dtype"):
        kernel.key_for(*silu_args(dtype=np.float64), 3, 16)


def test_given_python_ints_of_any_size_then_types_follow_and_overflow_is_an_error(rt):
    kernel = rt.kernel(SILU)
    out, x = silu_args()
    for value, spec in [(16, "H:i32:D"), (17, "H:i32,"), (1, "H:i32:1"), (2**31, "H:i64:D"),
                        (2**63, "H:u64:D"), (2**64 - 1, "H:u64")]:
        text = kernel.key_for(out, x, 3, value).text
        assert spec.rstrip(",") in text, (value, text)
    for value in (2**64, -2**63 - 1, 2**200, -2**300):
        with pytest.raises(jitwarm.InvalidArgumentError) as info:
            kernel.key_for(out, x, 3, value)
        assert info.value.message == f"integer {value} overflows: it is outside [-2^63, 2^64)"
    # The same words as the specialization rules themselves.
    with pytest.raises(jitwarm.InvalidArgumentError) as info:
        jitwarm.specialize_integer(2**64)
    assert info.value.message == "integer 18446744073709551616 overflows: it is outside [-2^63, 2^64)"


def test_given_floats_bools_and_numpy_scalars_then_they_are_scalars(rt):
    kernel = rt.kernel(SILU)
    out, x = silu_args()
    assert kernel.key_for(out, x, np.int32(3), np.int64(16)) == kernel.key_for(out, x, 3, 16)
    with pytest.raises(jitwarm.InvalidArgumentError, match="'H' takes an integer"):
        kernel.key_for(out, x, 3, 16.0)
    with pytest.raises(jitwarm.InvalidArgumentError, match="'H' takes an integer"):
        kernel.key_for(out, x, 3, np.float32(16))
    with pytest.raises(jitwarm.InvalidArgumentError, match="'H' takes an integer"):
        kernel.key_for(out, x, 3, True)
    rms = rt.kernel(RMS_NORM)
    T, H = 2, 16
    xr = aligned_empty((T, H), np.float32)
    xr[...] = 1.0
    outr = aligned_empty((T, H), np.float32)
    weight = np.ones(H, np.float32)
    for eps in (1e-6, np.float32(1e-6), np.float64(1e-6)):
        rms(outr, xr, H, weight, eps, T, H)
        np.testing.assert_allclose(outr, 1.0, rtol=1e-5)


def test_given_launch_mistakes_then_errors_name_the_kernel_and_argument(rt):
    kernel = rt.kernel(SILU)
    out, x = silu_args()
    with pytest.raises(jitwarm.InvalidArgumentError, match="takes 4 arguments, got 5"):
        kernel(out, x, 3, 16, 5)
    with pytest.raises(jitwarm.InvalidArgumentError,
                       match="unexpected argument name 'y'; the parameters are: out, x, T, H"):
        kernel(out, x, 3, y=16)
    with pytest.raises(jitwarm.InvalidArgumentError, match="'x' given by position and by name"):
        kernel(out, x, x=x)
    with pytest.raises(jitwarm.InvalidArgumentError, match="missing argument 'x'"):
        kernel(out, T=3, H=16)
    with pytest.raises(jitwarm.InvalidArgumentError, match="missing argument 'H'"):
        kernel(out, x, 3)
    with pytest.raises(jitwarm.InvalidArgumentError,
                       match=r"argument 'x': cannot pass a dict \(pass a tensor"):
        kernel(out, {"not": "a tensor"}, 3, 16)
    with pytest.raises(jitwarm.InvalidArgumentError, match="rank 9"):
        kernel(out, np.zeros((1,) * 9, np.float32), 3, 16)
    big_endian = np.zeros((3, 32), dtype=">f4")
    with pytest.raises(jitwarm.InvalidArgumentError, match="big-endian"):
        kernel(out, big_endian, 3, 16)
    with pytest.raises(jitwarm.InvalidArgumentError, match="buffer format 'Zf' has no jitwarm dtype"):
        kernel(out, np.zeros((3, 32), np.complex64), 3, 16)


def test_given_warmup_tensors_then_key_for_takes_them_and_a_launch_refuses_them(rt):
    kernel = rt.kernel(SILU)
    out = jitwarm.WarmupTensor("float32", (3, 16))
    x = jitwarm.WarmupTensor(np.float32, (3, 32), aligned=False)
    key = kernel.key_for(out, x, 3, 16)
    assert "x:fp32*:a1," in key.text and "out:fp32*:a16" in key.text
    with pytest.raises(jitwarm.InvalidArgumentError, match="cannot be launched"):
        kernel(out, x, 3, 16)
    assert x.dtype == "float32" and x.shape == (3, 32) and x.strides is None and not x.aligned
    assert jitwarm.WarmupTensor("bf16", (2, 3), strides=(3, 1)).strides == (3, 1)
    with pytest.raises(jitwarm.InvalidArgumentError, match="unknown dtype 'f99'"):
        jitwarm.WarmupTensor("f99", (1,))
    with pytest.raises(jitwarm.InvalidArgumentError):
        jitwarm.WarmupTensor("float32", (1,) * 9)


def test_given_on_then_the_launch_options_are_bound(rt):
    kernel = rt.kernel(SILU)
    bound = kernel.on(platform="cpu", device=0, stream=0)
    assert (bound.platform, bound.device, bound.stream) == ("cpu", 0, 0)
    assert (kernel.platform, kernel.device, kernel.stream) == (None, None, None)
    assert "platform='cpu'" in repr(bound)
    out, x = silu_args()
    bound(out, x, 3, 16)
    np.testing.assert_allclose(out, silu_reference(x), rtol=1e-6)
    with pytest.raises(jitwarm.NotFoundError, match="no implementation for platform vendorx"):
        kernel.on(platform="vendorx")(out, x, 3, 16)
    with pytest.raises(jitwarm.InvalidArgumentError, match="stream 'fast' is not an int"):
        kernel.on(stream="fast")


def test_given_a_warmed_key_then_the_first_launch_compiles_nothing(rt):
    out, x = silu_args()
    kernel = rt.kernel(SILU)
    rt.warmup_keys([kernel.key_for(out, x, 3, 16)])
    compiles = rt.cache_stats().compiles
    kernel(out, x, 3, 16)
    assert rt.cache_stats().compiles == compiles
    assert rt.is_cached(kernel.key_for(out, x, 3, 16))


def test_given_expand_with_int_arrays_then_defaults_and_ints_work(rt):
    out = np.zeros(4, np.int32)
    x = np.array([7, 9], np.int32)
    cu = np.array([1, 4], np.int32)
    rt.kernel(EXPAND)(out, x, cu, 5, 0, 8)
    assert out.tolist() == [7, 9, 9, 9]
