"""The specialization rules from Python (specialize_integer and its
representative), compile keys (text, hash, encoding, params), and schemas
defined in Python with the keys a request produces for them."""
import pytest

import jitwarm


@pytest.mark.parametrize("value, spec", [
    (1, ("i32", "one")), (0, ("i32", "div16")), (16, ("i32", "div16")), (17, ("i32", "none")),
    (-16, ("i32", "div16")), (2**31 - 1, ("i32", "none")), (2**31, ("i64", "div16")),
    (-2**31 - 1, ("i64", "none")), (2**63, ("u64", "div16")), (2**64 - 1, ("u64", "none")),
])
def test_given_integers_then_type_and_class_follow_the_rules(value, spec):
    s = jitwarm.specialize_integer(value)
    assert (s.type, s.value_class) == spec
    rep = jitwarm.scalar_specialization_rep(s)
    assert jitwarm.specialize_integer(rep) == s


def test_given_do_not_specialize_then_only_the_type_is_kept():
    s = jitwarm.specialize_integer(1, do_not_specialize=True)
    assert (s.type, s.value_class) == ("i32", "none")
    assert jitwarm.specialize_integer(2**40, True) == jitwarm.IntSpec("i64", "none")


def test_given_representatives_then_they_are_the_documented_values():
    rep = jitwarm.scalar_specialization_rep
    assert rep(jitwarm.IntSpec("i32", "div16")) == 16 and rep(jitwarm.IntSpec("i32", "none")) == 2
    assert rep(jitwarm.IntSpec("i64", "none")) == 2**31 + 1
    assert rep(jitwarm.IntSpec("u64", "div16")) == 2**63
    assert rep(jitwarm.IntSpec("u64", "one")) == 1
    assert repr(jitwarm.IntSpec("u64", "one")) == "IntSpec('u64', 'one')"


def test_given_bad_values_then_they_are_refused():
    for value in (2**64, -2**63 - 1, 10**40):
        with pytest.raises(jitwarm.InvalidArgumentError, match="overflows"):
            jitwarm.specialize_integer(value)
    with pytest.raises(jitwarm.InvalidArgumentError, match="is not an integer"):
        jitwarm.specialize_integer(1.5)
    with pytest.raises(jitwarm.InvalidArgumentError, match="is not an integer"):
        jitwarm.specialize_integer(True)
    with pytest.raises(jitwarm.InvalidArgumentError, match="unknown integer type 'i16'"):
        jitwarm.IntSpec("i16", "none")
    with pytest.raises(jitwarm.InvalidArgumentError, match="unknown integer value class"):
        jitwarm.IntSpec("i32", "even")


def scale_schema():
    return jitwarm.KernelSchema("ns.scale", [
        {"name": "out", "kind": "tensor", "dtypes": ["float32", "float16"], "same_dtype_as": "x",
         "output": True},
        {"name": "x", "kind": "tensor", "dtypes": ["float32", "float16"]},
        {"name": "n", "kind": "int"},
        {"name": "alpha", "kind": "float"},
        {"name": "BLOCK", "kind": "constexpr", "default": 128},
    ], summary="out = alpha * x")


def test_given_a_schema_from_python_then_requests_produce_keys_and_inputs(rt):
    schema = scale_schema()
    assert schema.name == "ns.scale" and schema.origin == "python"
    assert schema.params[0].same_dtype_as == "x" and schema.params[4].default == 128
    request = jitwarm.WarmupRequest("ns.scale", params={"x": ["float32", "float16"],
                                                        "n": [1, 16, 17]})
    keys = jitwarm.enumerate_warmup_keys(schema, request, "cuda:sm_90")
    assert len(keys) == 6 and len({k.hash for k in keys}) == 6
    (key,) = [k for k in keys if "x:fp32*" in k.text and "n:i32:D" in k.text]
    assert key.text == "scale[cuda:sm_90](out:fp32*:a16, x:fp32*:a16, n:i32:D, alpha:fp32, BLOCK=128) via python"
    assert (key.kernel_name, key.impl_name, key.target) == ("ns.scale", "python", "cuda:sm_90")
    assert len(key.hash) == 32 and isinstance(key.encoding, bytes)
    x = key.params[1]
    assert (x.name, x.kind, x.dtype, x.alignment) == ("x", "tensor", "float32", "a16")
    assert key.params[2].int_spec == jitwarm.IntSpec("i32", "div16")
    assert key.params[3].float_type == "fp32" and key.params[4].value == 128
    out, x, n, alpha, block = jitwarm.warmup_inputs_for(schema, key)
    assert isinstance(x, jitwarm.WarmupTensor) and x.dtype == "float32" and x.aligned
    assert (n, alpha, block) == (16, 0.0, 128)
    decoded = jitwarm.CompileKey.decode(key.encoding)
    assert decoded == key and hash(decoded) == hash(key)
    assert str(key) == key.text and all(k != key for k in keys if k.text != key.text)


def test_given_bad_schemas_then_they_are_refused():
    with pytest.raises(jitwarm.InvalidArgumentError, match="unknown parameter kind 'str'"):
        jitwarm.KernelSchema("ns.k", [{"name": "a", "kind": "str"}])
    with pytest.raises(jitwarm.InvalidArgumentError, match="unknown field 'flavour'"):
        jitwarm.KernelSchema("ns.k", [{"name": "a", "kind": "int", "flavour": 1}])
    with pytest.raises(jitwarm.InvalidArgumentError):
        jitwarm.KernelSchema("ns.k", [{"name": "a", "kind": "int"}, {"name": "a", "kind": "int"}])
    with pytest.raises(jitwarm.InvalidArgumentError):
        jitwarm.CompileKey.decode(b"not a key")
    with pytest.raises(jitwarm.Error, match="parameter 'x'"):
        jitwarm.enumerate_warmup_keys(scale_schema(), jitwarm.WarmupRequest(
            "ns.scale", params={"x": 3}), "cpu:x86_64")


def test_given_dtype_names_then_every_spelling_maps_to_one_name():
    import numpy as np
    assert jitwarm.dtype_name("bf16") == "bfloat16"
    assert jitwarm.dtype_name(np.float16) == "float16"
    assert jitwarm.dtype_name(np.dtype("int64")) == "int64"
    with pytest.raises(jitwarm.InvalidArgumentError, match="is not a dtype"):
        jitwarm.dtype_name(3)
    with pytest.raises(jitwarm.InvalidArgumentError, match="NumPy dtype complex64"):
        jitwarm.dtype_name(np.complex64)


def test_given_a_typed_target_then_parse_target_reads_it_as_the_command_does():
    assert [jitwarm.parse_target(t) for t in ("sm_90", "gfx942", "cpu:x86_64", "compute_90")] \
        == ["cuda:sm_90", "hip:gfx942", "cpu:x86_64", "cuda:compute_90"]
    with pytest.raises(jitwarm.InvalidArgumentError, match="unknown target 'sm90'"):
        jitwarm.parse_target("sm90")


def test_given_a_dtype_then_its_short_name_and_size_are_the_cores():
    import numpy as np
    assert [jitwarm.dtype_short_name(d) for d in ("bool", "bfloat16", np.float16, "float32",
                                                    "int64", "uint8")] == \
        ["i1", "bf16", "fp16", "fp32", "i64", "u8"]
    assert [jitwarm.dtype_size(d) for d in ("bool", "bf16", "float64", np.int32)] == [1, 2, 8, 4]
    with pytest.raises(jitwarm.InvalidArgumentError, match="is not a dtype"):
        jitwarm.dtype_short_name(3)


def test_given_a_layout_generic_schema_then_warmup_tensor_strides_enter_the_key():
    schema = jitwarm.KernelSchema("ns.copy", [
        {"name": "x", "kind": "tensor", "dtypes": ["float32"], "rank": 2,
         "specialize_strides": True},
    ])
    request = jitwarm.WarmupRequest("ns.copy", params={
        "x": [jitwarm.WarmupTensor("float32", (4, 4), strides=(16, 1)),
              jitwarm.WarmupTensor("float32", (4, 4), strides=(32, 1)),   # same classes
              {"dtype": "float32", "strides": [[17, 1], [1, 16]]}]})
    keys = jitwarm.enumerate_warmup_keys(request=request, schema=schema, target="cpu:x86_64")
    assert len(keys) == 3
    specs = [[(s.type, s.value_class) for s in k.params[0].stride_specs] for k in keys]
    assert specs == [[("i32", "div16"), ("i32", "one")], [("i32", "none"), ("i32", "one")],
                     [("i32", "one"), ("i32", "div16")]]
