//! GGUF files written by another implementation (gguf-py, llama.cpp's Python package) by
//! scripts/gguf-fixtures.py. Every expectation here is what that script wrote; the tensor
//! data follows the script's formulas, recomputed here.

use std::path::PathBuf;

use weft::gguf::{Array, GgufFile, GgufWriter, Value, ValueType};
use weft::types::f32_to_f16;
use weft::Type;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/gguf").join(name)
}

fn open(name: &str) -> GgufFile {
    GgufFile::open(fixture(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn le_f32(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect()
}

/// The scalar and array values the script wrote to values.gguf, in its order.
fn expected_values() -> Vec<(&'static str, Value)> {
    let arr = |a: Array| Value::Array(a);
    vec![
        ("general.architecture", "weft-test".into()),
        ("test.u8", 200u8.into()),
        ("test.i8", (-100i8).into()),
        ("test.u16", 60000u16.into()),
        ("test.i16", (-30000i16).into()),
        ("test.u32", 4_000_000_000u32.into()),
        ("test.i32", (-2_000_000_000i32).into()),
        ("test.f32", 3.25f32.into()),
        ("test.bool_true", true.into()),
        ("test.bool_false", false.into()),
        ("test.string", "héllo wörld ✓".into()),
        ("test.empty_string", "".into()),
        ("test.u64", u64::MAX.into()),
        ("test.i64", i64::MIN.into()),
        ("test.f64", 0.1f64.into()),
        ("test.arr.u8", vec![0u8, 1, 255].into()),
        ("test.arr.i8", vec![-128i8, 0, 127].into()),
        ("test.arr.u16", vec![0u16, 65535].into()),
        ("test.arr.i16", vec![-32768i16, 32767].into()),
        ("test.arr.u32", vec![0u32, u32::MAX].into()),
        ("test.arr.i32", vec![i32::MIN, i32::MAX].into()),
        ("test.arr.f32", vec![0.5f32, -1.5, 1e-3].into()),
        ("test.arr.bool", vec![true, false, true].into()),
        ("test.arr.str", vec!["a", "", "ü"].into()),
        ("test.arr.u64", vec![0u64, u64::MAX].into()),
        ("test.arr.i64", vec![i64::MIN, i64::MAX].into()),
        ("test.arr.f64", vec![0.25f64, -1e300].into()),
        (
            "test.arr.nested_i32",
            arr(Array::Array(vec![vec![1i32, 2, 3].into(), vec![4i32].into(), vec![5i32, 6].into()])),
        ),
        ("test.arr.nested_str", arr(Array::Array(vec![vec!["x", "y"].into(), vec!["z"].into()]))),
        (
            "test.arr.nested3",
            arr(Array::Array(vec![
                Array::Array(vec![vec![1.5f32].into(), vec![2.5f32, 3.5].into()]),
                Array::Array(vec![vec![4.5f32].into()]),
            ])),
        ),
        ("test.arr.nested_mixed", arr(Array::Array(vec![vec![1i32, 2].into(), vec!["a"].into(), vec![0.5f32].into()]))),
    ]
}

#[test]
fn every_value_type_and_nested_arrays_from_gguf_py() {
    let f = open("values.gguf");
    assert_eq!(f.version(), 3);
    assert_eq!(f.alignment(), 32);
    let expected = expected_values();
    let got: Vec<(&str, &Value)> = f.metadata().iter().map(|(k, v)| (k.as_str(), v)).collect();
    assert_eq!(got.len(), expected.len());
    for ((k, v), (ek, ev)) in got.iter().zip(&expected) {
        assert_eq!((*k, *v), (*ek, ev));
    }
    // Every one of the 13 value types occurs, as a value or as an array element type.
    let mut seen: Vec<ValueType> = f.metadata().iter().map(|(_, v)| v.value_type()).collect();
    seen.extend(f.metadata().iter().filter_map(|(_, v)| Some(v.as_array()?.element_type())));
    assert!(ValueType::ALL.iter().all(|t| seen.contains(t)));

    // The typed helpers.
    assert_eq!(f.get_str("test.string"), Some("héllo wörld ✓"));
    assert_eq!(f.get_u32("test.u32"), Some(4_000_000_000));
    assert_eq!(f.get_i32("test.u32"), None, "does not fit");
    assert_eq!(f.get_i64("test.i8"), Some(-100));
    assert_eq!(f.get_u64("test.u64"), Some(u64::MAX));
    assert_eq!(f.get_f32("test.f32"), Some(3.25));
    assert_eq!(f.get_f64("test.f32"), Some(3.25));
    assert_eq!(f.get_f64("test.f64"), Some(0.1));
    assert_eq!(f.get_bool("test.bool_false"), Some(false));
    assert_eq!(f.get_str_array("test.arr.str").unwrap(), ["a", "", "ü"]);
    assert_eq!(f.get_array("test.arr.f64").unwrap().as_f64(), Some(&[0.25, -1e300][..]));
    assert_eq!(f.get_str("test.u8"), None);
    assert_eq!(f.get("missing"), None);

    // The one tensor: f32 [1, -2, 0.5] at the data section's start.
    let t = f.tensor("tiny").unwrap();
    assert_eq!((t.ty, t.n_dims, t.ne, t.offset, t.size), (Type::F32, 1, [3, 1, 1, 1], 0, 12));
    assert_eq!(f.data_offset() % 32, 0);
    assert_eq!(le_f32(f.tensor_data(t)), [1.0, -2.0, 0.5]);
}

#[test]
fn plain_and_quantized_tensors_with_alignment_64_from_gguf_py() {
    let f = open("tensors-align64.gguf");
    assert_eq!(f.alignment(), 64);
    assert_eq!(f.get("general.alignment"), Some(&Value::U32(64)));
    assert_eq!(f.data_offset() % 64, 0);
    let layout: Vec<(&str, Type, usize, [i64; 4], usize)> =
        f.tensors().iter().map(|t| (t.name.as_str(), t.ty, t.n_dims, t.ne, t.size)).collect();
    assert_eq!(
        layout,
        [
            ("f32.matrix", Type::F32, 2, [3, 2, 1, 1], 24),
            ("f16.vec", Type::F16, 1, [5, 1, 1, 1], 10),
            ("i8.vec", Type::I8, 1, [7, 1, 1, 1], 7),
            ("i16.vec", Type::I16, 1, [3, 1, 1, 1], 6),
            ("i32.vec", Type::I32, 1, [4, 1, 1, 1], 16),
            ("i64.vec", Type::I64, 1, [2, 1, 1, 1], 16),
            ("f64.vec", Type::F64, 1, [2, 1, 1, 1], 16),
            ("bf16.vec", Type::BF16, 1, [4, 1, 1, 1], 8),
            ("q8_0.weight", Type::Q8_0, 2, [64, 2, 1, 1], 4 * 34),
            ("q4_0.weight", Type::Q4_0, 2, [32, 1, 1, 1], 18),
        ]
    );
    // gguf-py pads every tensor to 64: each starts 64 bytes (or 192 after q8_0's 136) later.
    let offsets: Vec<u64> = f.tensors().iter().map(|t| t.offset).collect();
    assert_eq!(offsets, [0, 64, 128, 192, 256, 320, 384, 448, 512, 704]);

    let data = |name: &str| f.tensor_bytes(name).unwrap();
    assert_eq!(le_f32(data("f32.matrix")), [-1.0, -0.75, -0.5, -0.25, 0.0, 0.25]);
    let f16: Vec<u16> = [0.5f32, -1.0, 2.25, 65504.0, -0.0].iter().map(|&x| f32_to_f16(x)).collect();
    assert_eq!(data("f16.vec"), f16.iter().flat_map(|h| h.to_le_bytes()).collect::<Vec<_>>());
    assert_eq!(data("i8.vec"), [-128i8, -1, 0, 1, 2, 3, 127].map(|x| x as u8));
    assert_eq!(data("i16.vec"), [i16::MIN, 0, i16::MAX].iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<_>>());
    assert_eq!(data("i32.vec"), [-1i32, 0, 7, i32::MAX].iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<_>>());
    assert_eq!(data("i64.vec"), [i64::MIN, i64::MAX].iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<_>>());
    assert_eq!(data("f64.vec"), [1e300f64, -0.125].iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<_>>());
    assert_eq!(
        data("bf16.vec"),
        [0x3F80u16, 0xC000, 0, 0x7F80].iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<_>>()
    );

    // q8_0 blocks: f16 scale d = 0.0625 * 2^b, then 32 int8 quants q(b, i).
    let q8 = |b: i32, i: i32| -> i8 {
        if i == 0 {
            if b % 2 == 0 {
                127
            } else {
                -127
            }
        } else {
            ((b * 32 + i) * 37 % 255 - 127) as i8
        }
    };
    let mut want = Vec::new();
    for b in 0..4 {
        want.extend(f32_to_f16(0.0625 * (1 << b) as f32).to_le_bytes());
        want.extend((0..32).map(|i| q8(b, i) as u8));
    }
    assert_eq!(data("q8_0.weight"), want);
    assert_eq!(&data("q8_0.weight")[..3], [0x00, 0x2c, 0x7f], "as the script printed");

    // q4_0: d = 0.5, byte j holds q[j] (low nibble) and q[j + 16] (high), q[i] = i % 16.
    let mut want = f32_to_f16(0.5).to_le_bytes().to_vec();
    want.extend((0..16u8).map(|j| j | (j << 4)));
    assert_eq!(data("q4_0.weight"), want);
}

#[test]
fn metadata_only_file_from_gguf_py() {
    let f = open("metadata-only.gguf");
    assert!(f.tensors().is_empty());
    assert_eq!(f.get_str("general.name"), Some("no tensors"));
    assert_eq!(f.get("test.count"), Some(&Value::U32(0)));
    assert_eq!(f.metadata().len(), 3);
}

#[test]
fn version_2_files_read_like_version_3() {
    // v2 and v3 lay out little-endian files the same way (v3 only added big-endian files).
    let mut bytes = std::fs::read(fixture("tensors-align64.gguf")).unwrap();
    bytes[4..8].copy_from_slice(&2u32.to_le_bytes());
    let v2 = GgufFile::from_bytes(bytes).unwrap();
    let v3 = open("tensors-align64.gguf");
    assert_eq!(v2.version(), 2);
    assert_eq!(v2.tensors(), v3.tensors());
    assert_eq!(v2.metadata(), v3.metadata());
}

#[test]
fn writer_reproduces_gguf_py_files_byte_for_byte() {
    // gguf-py lays files out as ggml does, so writing back what was read gives the same
    // bytes: an independent check of the writer's encoding, padding and offsets.
    for name in ["values.gguf", "tensors-align64.gguf", "metadata-only.gguf"] {
        let f = open(name);
        let written = GgufWriter::from_gguf(&f).unwrap().to_bytes().unwrap();
        assert!(written == f.as_bytes(), "{name}: written file differs from gguf-py's");
    }
}

#[test]
fn tensor_infos_make_weft_tensors_of_the_same_layout() {
    // What a loader does: one weft tensor per info, data copied from tensor_data().
    let f = open("tensors-align64.gguf");
    let mem_size = f.tensors().len() * weft::context::tensor_overhead();
    let ctx = weft::Context::new(weft::ContextParams { mem_size, no_alloc: true }).unwrap();
    for info in f.tensors() {
        let t = ctx.new_tensor(info.ty, &info.ne).unwrap();
        t.set_name(&info.name);
        assert_eq!((t.ty(), t.ne(), t.nb(), t.nbytes()), (info.ty, info.ne, info.nb(), info.size), "{}", info.name);
        assert_eq!(f.tensor_data(info).len(), t.nbytes());
    }
    assert_eq!(ctx.get_tensor("q8_0.weight").unwrap().ne(), [64, 2, 1, 1]);
}
