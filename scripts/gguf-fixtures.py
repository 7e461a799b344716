#!/usr/bin/env python3
"""Writes the GGUF fixtures of crates/weft/tests/fixtures/gguf/ with the `gguf` Python package
(gguf-py, llama.cpp's own GGUF writer): files from a second, independent implementation for
weft's reader to parse. crates/weft/tests/gguf_fixtures.rs states every value written here as
its expectation, so keep the two in step.

    python3 -m venv /tmp/gguf-venv && /tmp/gguf-venv/bin/pip install gguf
    /tmp/gguf-venv/bin/python scripts/gguf-fixtures.py

Tensor data follows formulas the test recomputes; the quantized tensors use values that
quantize exactly (powers-of-two scales), so the test can state their bytes.
"""

import os
import sys

import numpy as np
from gguf import GGMLQuantizationType as Q
from gguf import GGUFValueType as V
from gguf import GGUFWriter
from gguf.quants import quantize

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "crates", "weft", "tests", "fixtures", "gguf")


def write(name, fill, alignment=None):
    path = os.path.join(OUT, name)
    w = GGUFWriter(path, "weft-test")
    if alignment is not None:
        w.add_custom_alignment(alignment)
    fill(w)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    print(f"{path}: {os.path.getsize(path)} bytes")


def values(w):
    """Every value type, typed arrays of each, arrays of arrays, and one small tensor."""
    w.add_uint8("test.u8", 200)
    w.add_int8("test.i8", -100)
    w.add_uint16("test.u16", 60000)
    w.add_int16("test.i16", -30000)
    w.add_uint32("test.u32", 4000000000)
    w.add_int32("test.i32", -2000000000)
    w.add_float32("test.f32", 3.25)
    w.add_bool("test.bool_true", True)
    w.add_bool("test.bool_false", False)
    w.add_string("test.string", "héllo wörld ✓")
    w.add_key_value("test.empty_string", "", V.STRING)  # add_string() skips empty strings
    w.add_uint64("test.u64", 2**64 - 1)
    w.add_int64("test.i64", -(2**63))
    w.add_float64("test.f64", 0.1)
    typed = [
        ("u8", [0, 1, 255], V.UINT8),
        ("i8", [-128, 0, 127], V.INT8),
        ("u16", [0, 65535], V.UINT16),
        ("i16", [-32768, 32767], V.INT16),
        ("u32", [0, 4294967295], V.UINT32),
        ("i32", [-2147483648, 2147483647], V.INT32),
        ("f32", [0.5, -1.5, 1e-3], V.FLOAT32),
        ("bool", [True, False, True], V.BOOL),
        ("str", ["a", "", "ü"], V.STRING),
        ("u64", [0, 2**64 - 1], V.UINT64),
        ("i64", [-(2**63), 2**63 - 1], V.INT64),
        ("f64", [0.25, -1e300], V.FLOAT64),
    ]
    for name, vals, vtype in typed:
        w.add_key_value(f"test.arr.{name}", vals, V.ARRAY, sub_type=vtype)
    # gguf-py types inner arrays by their first element: Python ints as i32, floats as f32.
    w.add_array("test.arr.nested_i32", [[1, 2, 3], [4], [5, 6]])
    w.add_array("test.arr.nested_str", [["x", "y"], ["z"]])
    w.add_array("test.arr.nested3", [[[1.5], [2.5, 3.5]], [[4.5]]])
    w.add_array("test.arr.nested_mixed", [[1, 2], ["a"], [0.5]])
    w.add_tensor("tiny", np.array([1.0, -2.0, 0.5], dtype=np.float32))


def tensors(w):
    """Plain and quantized tensors with odd sizes, so every one needs padding to 64."""
    w.add_tensor("f32.matrix", (np.arange(6, dtype=np.float32) * 0.25 - 1).reshape(2, 3))
    w.add_tensor("f16.vec", np.array([0.5, -1, 2.25, 65504, -0.0], dtype=np.float16))
    w.add_tensor("i8.vec", np.array([-128, -1, 0, 1, 2, 3, 127], dtype=np.int8))
    w.add_tensor("i16.vec", np.array([-32768, 0, 32767], dtype=np.int16))
    w.add_tensor("i32.vec", np.array([-1, 0, 7, 2147483647], dtype=np.int32))
    w.add_tensor("i64.vec", np.array([-(2**63), 2**63 - 1], dtype=np.int64))
    w.add_tensor("f64.vec", np.array([1e300, -0.125], dtype=np.float64))
    # bf16 bits of 1.0, -2.0, 0.0, +inf
    w.add_tensor("bf16.vec", np.array([0x3F80, 0xC000, 0x0000, 0x7F80], dtype=np.uint16), raw_dtype=Q.BF16)

    # q8_0, 2 rows x 64 (4 blocks): block b has scale d = 0.0625 * 2^b and quants q(b, i),
    # with |q| = 127 first so that d = amax / 127 exactly and x / d rounds to q exactly.
    def q8(b, i):
        return (127 if b % 2 == 0 else -127) if i == 0 else (b * 32 + i) * 37 % 255 - 127

    x = np.array([q8(b, i) * 0.0625 * 2**b for b in range(4) for i in range(32)], dtype=np.float32)
    w.add_tensor("q8_0.weight", quantize(x.reshape(2, 64), Q.Q8_0), raw_dtype=Q.Q8_0)

    # q4_0, one block of 32: x = (i % 16 - 8) * 0.5; the largest |x| is x[0] = -4, so
    # d = x[0] / -8 = 0.5 and every x quantizes to q = i % 16 exactly.
    x = np.array([(i % 16 - 8) * 0.5 for i in range(32)], dtype=np.float32)
    w.add_tensor("q4_0.weight", quantize(x.reshape(1, 32), Q.Q4_0), raw_dtype=Q.Q4_0)


def metadata_only(w):
    w.add_string("general.name", "no tensors")
    w.add_uint32("test.count", 0)


def main():
    os.makedirs(OUT, exist_ok=True)
    write("values.gguf", values)
    write("tensors-align64.gguf", tensors, alignment=64)
    write("metadata-only.gguf", metadata_only)
    return 0


if __name__ == "__main__":
    sys.exit(main())
