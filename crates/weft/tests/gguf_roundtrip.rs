//! Write → read round trips through weft's own writer and reader: every value type (edge
//! values, empty and nested arrays), every tensor type, every rank, several alignments.

use weft::gguf::{Array, GgufFile, GgufWriter, TensorInfo, Value, ValueType, MAX_ARRAY_DEPTH};
use weft::{ErrorKind, Type};

/// Deterministic pseudo-random bytes (an LCG: no dependency, same bytes every run).
fn bytes(n: usize, seed: u64) -> Vec<u8> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (s >> 56) as u8
        })
        .collect()
}

fn nested(depth: usize) -> Array {
    if depth == 1 {
        Array::from(vec![depth as u32])
    } else {
        Array::Array(vec![nested(depth - 1)])
    }
}

/// Every value type with edge values, then arrays of every element type (empty ones too).
fn all_values() -> Vec<(String, Value)> {
    let mut kv: Vec<(String, Value)> = vec![
        ("u8".into(), u8::MAX.into()),
        ("i8".into(), i8::MIN.into()),
        ("u16".into(), u16::MAX.into()),
        ("i16".into(), i16::MIN.into()),
        ("u32".into(), u32::MAX.into()),
        ("i32".into(), i32::MIN.into()),
        ("f32".into(), f32::MIN_POSITIVE.into()),
        ("f32.inf".into(), f32::NEG_INFINITY.into()),
        ("bool".into(), false.into()),
        ("str".into(), "tab\tnul\0 emoji 🦀 and ünïcode".into()),
        ("str.empty".into(), "".into()),
        ("u64".into(), u64::MAX.into()),
        ("i64".into(), i64::MIN.into()),
        ("f64".into(), 5e-324f64.into()),
        ("".into(), "an empty key is allowed".into()),
    ];
    let arrays: Vec<Array> = vec![
        vec![0u8, 255].into(),
        vec![i8::MIN, i8::MAX].into(),
        vec![u16::MAX].into(),
        vec![i16::MIN, -1].into(),
        vec![u32::MAX, 0].into(),
        vec![i32::MIN, 0, i32::MAX].into(),
        vec![1.5f32, -0.0, f32::MAX].into(),
        vec![true, false, false, true].into(),
        vec!["", "a", "ü🦀"].into(),
        Array::Array(vec![
            vec![1i32, 2].into(),
            vec!["mixed"].into(),
            Array::Array(vec![vec![0.5f64].into(), Array::empty(ValueType::Bool)]),
            Array::empty(ValueType::String),
        ]),
        vec![u64::MAX, 1].into(),
        vec![i64::MIN, i64::MAX].into(),
        vec![f64::MIN_POSITIVE, -1e300].into(),
    ];
    for a in arrays {
        kv.push((format!("arr.{}", a.element_type()), a.clone().into()));
        kv.push((format!("arr.{}.empty", a.element_type()), Array::empty(a.element_type()).into()));
    }
    kv.push(("arr.deepest".into(), nested(MAX_ARRAY_DEPTH).into()));
    kv.push(("arr.of_empty_arrays".into(), Array::Array(vec![Array::empty(ValueType::U8); 3]).into()));
    kv
}

/// A shape of rank `rank` for type `ty`, whole blocks along ne[0].
fn shape(ty: Type, rank: usize, seed: usize) -> Vec<i64> {
    let mut ne = vec![(ty.blck_size() * (1 + seed % 3)) as i64];
    ne.extend((1..rank).map(|i| (1 + (seed + i) % 4) as i64));
    ne.truncate(rank);
    ne
}

type Tensors = Vec<(String, Type, Vec<i64>, Vec<u8>)>;

/// Every tensor type at ranks 0 to 4, plus empty tensors.
fn all_tensors() -> Tensors {
    let mut out = Vec::new();
    for (i, &ty) in Type::ALL.iter().enumerate() {
        let rank = if ty.is_plain() { i % 5 } else { 1 + i % 4 };
        let ne = shape(ty, rank, i);
        let n: i64 = ne.iter().product();
        let size = ty.row_size(n as usize);
        out.push((format!("t.{}", ty.name()), ty, ne, bytes(size, i as u64)));
    }
    out.push(("empty.f32".into(), Type::F32, vec![0], vec![]));
    out.push(("empty.q4_K".into(), Type::Q4_K, vec![256, 0, 3], vec![]));
    out
}

fn build<'a>(kv: &[(String, Value)], tensors: &'a Tensors, alignment: Option<u32>) -> GgufWriter<'a> {
    let mut w = GgufWriter::new();
    for (k, v) in kv {
        w.set(k.clone(), v.clone()).unwrap();
    }
    if let Some(a) = alignment {
        w.set_alignment(a).unwrap();
    }
    for (name, ty, ne, data) in tensors {
        w.add_tensor(name.clone(), *ty, ne, data.as_slice()).unwrap();
    }
    w
}

fn check_round_trip(w: &GgufWriter, kv: &[(String, Value)], tensors: &Tensors, f: &GgufFile) {
    assert_eq!(f.version(), 3);
    assert_eq!(f.alignment(), w.alignment());
    assert_eq!(f.data_offset(), w.meta_bytes().len());
    assert_eq!(f.data_offset() % f.alignment(), 0);
    // Metadata in order (the alignment key, when set, comes last).
    assert_eq!(&f.metadata()[..kv.len()], kv);
    assert_eq!(f.metadata(), w.metadata());
    assert_eq!(f.tensors(), w.tensors().as_slice());
    for (t, (name, ty, ne, data)) in f.tensors().iter().zip(tensors) {
        assert_eq!((&t.name, t.ty, t.shape(), t.size), (name, *ty, ne.as_slice(), data.len()));
        assert_eq!(t.n_dims, ne.len());
        assert_eq!(t.offset % f.alignment() as u64, 0);
        assert_eq!(f.tensor_data(t), data.as_slice(), "{name}");
        assert_eq!(t.n_elements(), ne.iter().product::<i64>());
    }
}

#[test]
fn everything_round_trips_at_several_alignments() {
    let kv = all_values();
    let tensors = all_tensors();
    for alignment in [None, Some(1), Some(8), Some(64), Some(4096)] {
        let w = build(&kv, &tensors, alignment);
        let written = w.to_bytes().unwrap();
        let f = GgufFile::from_slice(&written).unwrap();
        check_round_trip(&w, &kv, &tensors, &f);
        // Writing what was read gives the same bytes again.
        assert_eq!(GgufWriter::from_gguf(&f).unwrap().to_bytes().unwrap(), written);
    }
}

#[test]
fn round_trip_through_a_file_on_disk() {
    let kv = all_values();
    let tensors = all_tensors();
    let w = build(&kv, &tensors, Some(128));
    let dir = std::env::temp_dir().join(format!("weft-gguf-roundtrip-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("all.gguf");
    w.write_to_file(&path).unwrap();
    let f = GgufFile::open(&path).unwrap();
    check_round_trip(&w, &kv, &tensors, &f);
    assert_eq!(f.as_bytes(), w.to_bytes().unwrap().as_slice());
    drop(f);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn empty_file_round_trips() {
    let w = GgufWriter::new();
    let bytes = w.to_bytes().unwrap();
    assert_eq!(bytes.len(), 32, "24-byte header padded to 32");
    let f = GgufFile::from_bytes(bytes).unwrap();
    assert!(f.metadata().is_empty() && f.tensors().is_empty());
    assert_eq!((f.data_offset(), f.alignment()), (32, 32));
}

#[test]
fn writer_lays_tensors_out_like_ggml() {
    let mut w = GgufWriter::new();
    w.add_tensor("a", Type::F32, &[3], vec![0; 12]).unwrap();
    w.add_tensor("b", Type::Q8_0, &[32], vec![0; 34]).unwrap();
    w.add_tensor("c", Type::I8, &[1], vec![0; 1]).unwrap();
    let offsets = |w: &GgufWriter| w.tensors().iter().map(|t| t.offset).collect::<Vec<_>>();
    assert_eq!(offsets(&w), [0, 32, 96]);
    // Changing the alignment afterwards re-lays the data.
    w.set_alignment(16).unwrap();
    assert_eq!(offsets(&w), [0, 16, 64]);
    let f = GgufFile::from_bytes(w.to_bytes().unwrap()).unwrap();
    assert_eq!(f.as_bytes().len(), f.data_offset() + 80, "last tensor padded too, as ggml does");
    let c: &TensorInfo = f.tensor("c").unwrap();
    assert_eq!((c.offset, c.size, c.ne), (64, 1, [1, 1, 1, 1]));
}

#[test]
fn set_replaces_in_place_and_remove_keeps_order() {
    let mut w = GgufWriter::new();
    w.set("a", 1u32).unwrap();
    w.set("b", "x").unwrap();
    w.set("c", 2.5f64).unwrap();
    w.set("a", "now a string").unwrap();
    assert_eq!(w.remove("b"), Some(Value::from("x")));
    assert_eq!(w.remove("b"), None);
    w.set("d", true).unwrap();
    let f = GgufFile::from_bytes(w.to_bytes().unwrap()).unwrap();
    let keys: Vec<&str> = f.metadata().iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(keys, ["a", "c", "d"]);
    assert_eq!(f.get_str("a"), Some("now a string"));
    assert_eq!(f.get_f64("c"), Some(2.5));
    assert_eq!(w.get("d"), Some(&Value::Bool(true)));
}

#[test]
fn writer_refuses_what_the_reader_would_refuse() {
    let invalid = |r: weft::Result<()>| {
        let e = r.unwrap_err();
        assert_eq!(e.kind, ErrorKind::InvalidArgument, "{e}");
        e.message
    };
    let mut w = GgufWriter::new();
    w.add_tensor("t", Type::F32, &[2], vec![0; 8]).unwrap();
    assert_eq!(invalid(w.add_tensor("t", Type::F32, &[2], vec![0; 8])), "gguf writer: duplicate tensor name 't'");
    assert_eq!(
        invalid(w.add_tensor("u", Type::F32, &[2, 3], vec![0; 8])),
        "gguf writer: tensor 'u': f32 [2, 3] needs 24 bytes of data, got 8"
    );
    assert_eq!(
        invalid(w.add_tensor("u", Type::Q4_0, &[16], vec![0; 9])),
        "gguf writer: tensor 'u': q4_0 ne[0] = 16 is not a multiple of the q4_0 block size 32"
    );
    assert_eq!(
        invalid(w.add_tensor("u", Type::F32, &[1, 1, 1, 1, 1], vec![0; 4])),
        "gguf writer: tensor 'u': f32 has 5 dimensions (at most 4)"
    );
    assert_eq!(
        invalid(w.add_tensor("u", Type::F32, &[-1], vec![])),
        "gguf writer: tensor 'u': f32 dimension 0 is negative (-1)"
    );
    assert_eq!(
        invalid(w.add_tensor("x".repeat(64), Type::F32, &[1], vec![0; 4])),
        format!("gguf writer: tensor '{}': name is 64 bytes long (at most 63)", "x".repeat(64))
    );
    assert_eq!(invalid(w.set_alignment(24)), "gguf writer: general.alignment is 24; it must be a nonzero power of two");
    // 2^31 was accepted and padded a one-tensor file to 6 GiB.
    assert_eq!(
        invalid(w.set_alignment(1 << 31)),
        "gguf writer: general.alignment=2147483648 is larger than 65536 (64 KiB); the writer pads every tensor to it"
    );
    assert_eq!(
        invalid(w.set("general.alignment", 1u32 << 17)).split(';').next(),
        Some("gguf writer: general.alignment=131072 is larger than 65536 (64 KiB)")
    );
    w.set_alignment(1 << 16).unwrap();
    w.remove("general.alignment");
    assert_eq!(
        invalid(w.set("general.alignment", 32u64)),
        "gguf writer: general.alignment must be a u32, found u64 U64(32)"
    );
    assert_eq!(
        invalid(w.set("deep", nested(MAX_ARRAY_DEPTH + 1))),
        "gguf writer: key 'deep': arrays nest 33 deep (at most 32)"
    );
    // Nothing refused was kept.
    assert_eq!(w.tensors().len(), 1);
    assert!(w.metadata().is_empty());
    assert_eq!(w.alignment(), 32);
}
