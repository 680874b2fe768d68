"""register_kernels from Python: a callable (or (platform, callable)) per
kernel, by-name or positional forwarding, the handle as a context manager,
explain, errors, and exceptions raised by an override."""
import numpy as np
import pytest

import jitwarm
from conftest import EXPAND, SILU, aligned_empty, silu_reference


def silu_data(T=2, H=16):
    x = aligned_empty((T, 2 * H), np.float32)
    x[...] = np.linspace(-2, 2, x.size, dtype=np.float32).reshape(x.shape)
    return aligned_empty((T, H), np.float32), x


def test_given_an_override_by_name_then_it_gets_the_callers_objects_in_its_order(rt):
    calls = []

    def silu_and_mul(H, x, out, T):  # the schema's names, in another order
        calls.append((out, x, T, H))
        out[...] = 7

    out, x = silu_data()
    registration = rt.register_kernels({SILU: silu_and_mul})
    assert registration.active
    rt.kernel(SILU)(out, x, 2, 16)
    ((got_out, got_x, T, H),) = calls
    assert got_out is out and got_x is x and (T, H) == (2, 16)
    assert (out == 7).all()
    explanation = rt.explain(SILU)
    (cpu,) = explanation.platforms
    assert cpu.winner.impl_name == "python:test_given_an_override_by_name_then_it_gets_the_callers_objects_in_its_order.<locals>.silu_and_mul"
    assert "test_overrides.py" in cpu.winner.origin
    assert [r.impl_name for r in cpu.replaced] == ["reference-cpu"]
    registration.release()
    assert not registration.active
    rt.kernel(SILU)(out, x, 2, 16)  # the reference again
    np.testing.assert_allclose(out, silu_reference(x), rtol=1e-6)
    assert len(calls) == 1
    registration.release()  # twice is harmless


def test_given_an_override_with_other_names_then_it_gets_arguments_by_position(rt):
    calls = []
    out, x = silu_data()
    with rt.register_kernels({SILU: ("cpu", lambda a, b, c, d: calls.append((a, b, c, d)))}):
        rt.kernel(SILU)(x=x, out=out, H=16, T=2)
    assert calls == [(out, x, 2, 16)]
    assert rt.explain(SILU).platforms[0].winner.impl_name == "reference-cpu"


def test_given_an_override_taking_kwargs_or_varargs_then_it_gets_everything(rt):
    by_name, by_position = [], []
    out, x = silu_data()
    with rt.register_kernels({SILU: lambda **kw: by_name.append(kw)}):
        rt.kernel(SILU)(out, x, 2, 16)
    with rt.register_kernels({SILU: lambda *args: by_position.append(args)}):
        rt.kernel(SILU)(out, x, 2, 16)
    assert set(by_name[0]) == {"out", "x", "T", "H"} and by_name[0]["H"] == 16
    assert by_position == [(out, x, 2, 16)]


def test_given_defaults_then_an_override_gets_them_filled_in(rt):
    calls = []

    def expand(output, x, cu_num_tokens, replace_from, replace_to, MAX_NUM_TOKENS):
        calls.append((replace_from, replace_to, MAX_NUM_TOKENS))

    with rt.register_kernels({EXPAND: expand}):
        rt.kernel(EXPAND)(np.zeros(2, np.int32), np.zeros(1, np.int32), np.ones(1, np.int32),
                          5, 0, 8)
    assert calls == [(5, 0, 8)]


def test_given_override_mistakes_then_registration_refuses_and_lists_the_names(rt):
    with pytest.raises(jitwarm.InvalidArgumentError,
                       match=r"unexpected argument name\(s\) y; the schema's parameters are: "
                             "out, x, T, H"):
        rt.register_kernels({SILU: lambda out, x, T, y: None})
    with pytest.raises(jitwarm.InvalidArgumentError, match=r"does not take parameter\(s\) T"):
        rt.register_kernels({SILU: lambda out, x, H: None})
    with pytest.raises(jitwarm.NotFoundError, match="unknown kernel 'vllm.nope'"):
        rt.register_kernels({"vllm.nope": lambda: None})
    with pytest.raises(jitwarm.InvalidArgumentError, match="is not callable"):
        rt.register_kernels({SILU: ("cpu", 42)})
    with pytest.raises(jitwarm.InvalidArgumentError, match="a callable or \\(platform, callable\\)"):
        rt.register_kernels({SILU: ("cpu", "x", 1)})
    # All or nothing: a bad entry registers none of the batch.
    with pytest.raises(jitwarm.Error):
        rt.register_kernels({EXPAND: lambda *a: None, SILU: lambda out, x, T, y: None})
    assert rt.explain(EXPAND).platforms[0].winner.impl_name == "reference-cpu"


def test_given_an_override_that_raises_then_the_launch_raises_that_exception(rt):
    class Boom(ValueError):
        pass

    def silu_and_mul(out, x, T, H):
        raise Boom("no good")

    out, x = silu_data()
    with rt.register_kernels({SILU: silu_and_mul}):
        with pytest.raises(Boom, match="no good"):
            rt.kernel(SILU)(out, x, 2, 16)
        # The next launch is clean (nothing left pending).
    rt.kernel(SILU)(out, x, 2, 16)
    np.testing.assert_allclose(out, silu_reference(x), rtol=1e-6)


def test_given_an_override_that_launches_another_kernel_then_both_run(rt):
    out, x = silu_data()
    reference = rt.kernel(SILU).on(platform="cpu")
    inner_calls = []

    def expand(output, x, cu_num_tokens, replace_from, replace_to, MAX_NUM_TOKENS):
        inner_calls.append(output)
        reference(out, globals_x, 2, 16)  # a nested launch, its own arguments

    globals_x = x
    with rt.register_kernels({EXPAND: expand}):
        rt.kernel(EXPAND)(np.zeros(2, np.int32), np.zeros(1, np.int32), np.ones(1, np.int32),
                          5, 0, 8)
    assert len(inner_calls) == 1
    np.testing.assert_allclose(out, silu_reference(x), rtol=1e-6)


def test_given_every_holder_of_a_handle_then_an_override_is_seen_at_once(rt):
    kernel = rt.kernel(SILU)
    bound = kernel.on(platform="cpu")
    calls = []
    out, x = silu_data()
    with rt.register_kernels({SILU: lambda out, x, T, H: calls.append(H)}):
        kernel(out, x, 2, 16)
        bound(out, x, 2, 17 + 15)
    assert calls == [16, 32]


def test_given_the_override_stream_outside_an_override_then_it_is_none():
    assert jitwarm.current_launch_stream() is None
