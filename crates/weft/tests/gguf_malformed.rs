//! Malformed and hostile GGUF input: every case must be refused with a format error that
//! says what is wrong and where, never a panic, an out-of-bounds read or a huge allocation.

use weft::gguf::{Array, GgufFile, GgufWriter, Value};
use weft::{ErrorKind, Type};

/// Little-endian GGUF bytes, written field by field so a test can lie in any of them.
#[derive(Clone, Default)]
struct Raw(Vec<u8>);

impl Raw {
    fn header(version: u32, n_tensors: u64, n_kv: u64) -> Raw {
        Raw(b"GGUF".to_vec()).u32(version).u64(n_tensors).u64(n_kv)
    }
    fn u32(mut self, x: u32) -> Raw {
        self.0.extend(x.to_le_bytes());
        self
    }
    fn u64(mut self, x: u64) -> Raw {
        self.0.extend(x.to_le_bytes());
        self
    }
    fn bytes(mut self, b: &[u8]) -> Raw {
        self.0.extend_from_slice(b);
        self
    }
    fn str(self, s: &str) -> Raw {
        self.u64(s.len() as u64).bytes(s.as_bytes())
    }
    /// A kv: key, value type id, encoded value.
    fn kv(self, key: &str, ty: u32, value: &[u8]) -> Raw {
        self.str(key).u32(ty).bytes(value)
    }
    /// A tensor info: name, dims, ggml type id, offset.
    fn tensor(self, name: &str, ne: &[u64], ty: u32, offset: u64) -> Raw {
        let mut r = self.str(name).u32(ne.len() as u32);
        for &n in ne {
            r = r.u64(n);
        }
        r.u32(ty).u64(offset)
    }
    /// Zero padding to `align`, then `n` bytes of tensor data.
    fn data(mut self, align: usize, n: usize) -> Raw {
        let len = self.0.len().next_multiple_of(align) + n;
        self.0.resize(len, 0);
        self
    }
}

/// One kv of type `ty` holding `value`.
fn kv_file(key: &str, ty: u32, value: &[u8]) -> Vec<u8> {
    Raw::header(3, 0, 1).kv(key, ty, value).0
}

/// Tensor infos (name, ne, type, offset) followed by `data_len` bytes of data.
fn tensor_file(tensors: &[(&str, &[u64], u32, u64)], data_len: usize) -> Vec<u8> {
    let mut r = Raw::header(3, tensors.len() as u64, 0);
    for &(name, ne, ty, offset) in tensors {
        r = r.tensor(name, ne, ty, offset);
    }
    r.data(32, data_len).0
}

/// The message of the error parsing `bytes` gives, checked to be a format error.
fn error_of(bytes: &[u8]) -> String {
    match GgufFile::from_slice(bytes) {
        Ok(f) => panic!("parsed a malformed file: {f:?}"),
        Err(e) => {
            assert_eq!(e.kind, ErrorKind::Format, "{e}");
            assert!(e.message.starts_with("gguf: "), "{e}");
            e.message
        }
    }
}

#[track_caller]
fn assert_error(bytes: &[u8], expected: &str) {
    let msg = error_of(bytes);
    assert!(msg.contains(expected), "error {msg:?} does not say {expected:?}");
}

/// A small valid file with every value type, nested and empty arrays, and three tensors,
/// the last one ending exactly on the alignment, so that no byte of it is optional.
fn valid_file() -> Vec<u8> {
    let mut w = GgufWriter::new();
    w.set("general.name", "malformed tests").unwrap();
    w.set("u8", 1u8).unwrap();
    w.set("i8", -1i8).unwrap();
    w.set("u16", 2u16).unwrap();
    w.set("i16", -2i16).unwrap();
    w.set("u32", 3u32).unwrap();
    w.set("i32", -3i32).unwrap();
    w.set("f32", 0.5f32).unwrap();
    w.set("bool", true).unwrap();
    w.set("u64", 4u64).unwrap();
    w.set("i64", -4i64).unwrap();
    w.set("f64", 0.25f64).unwrap();
    w.set("strs", vec!["a", "bc"]).unwrap();
    w.set("bools", vec![true, false]).unwrap();
    w.set("empty", Array::empty(weft::gguf::ValueType::I16)).unwrap();
    w.set("nested", Array::Array(vec![vec![1u64].into(), vec!["x"].into(), Array::Array(vec![])])).unwrap();
    w.add_tensor("a", Type::F32, &[3], vec![1; 12]).unwrap();
    w.add_tensor("b", Type::Q8_0, &[32, 2], vec![2; 68]).unwrap();
    w.add_tensor("c", Type::F16, &[16], vec![3; 32]).unwrap();
    let bytes = w.to_bytes().unwrap();
    let f = GgufFile::from_slice(&bytes).unwrap();
    let last = f.tensors().last().unwrap();
    assert_eq!(f.data_offset() + last.offset as usize + last.size, bytes.len());
    bytes
}

#[test]
fn truncation_at_every_byte_is_an_error() {
    let bytes = valid_file();
    let mut kinds = std::collections::BTreeMap::<&str, usize>::new();
    for len in 0..bytes.len() {
        let msg = error_of(&bytes[..len]);
        let kind = if msg.contains("(truncated?)") {
            "field cut short"
        } else if msg.contains("cannot fit in the") {
            "count or length past the end"
        } else if msg.contains("runs past the end of the file") {
            "tensor data past the end"
        } else {
            panic!("truncated to {len} bytes: unexpected error {msg:?}")
        };
        *kinds.entry(kind).or_default() += 1;
    }
    println!("{} truncations refused: {kinds:?}", bytes.len());
    assert_eq!(kinds.len(), 3, "every kind of truncation is met: {kinds:?}");
    assert_eq!(error_of(&[]), "gguf: magic at byte 0 needs 4 bytes but the file has only 0 left (truncated?)");
    // Short prefixes cannot hold the 3 tensor infos and 16 kvs the header promises.
    assert_eq!(
        error_of(&bytes[..30]),
        "gguf: tensor count 3 at byte 8 cannot fit in the 14 bytes left (each needs at least 24)"
    );
    let cut = error_of(&bytes[..bytes.len() - 1]);
    assert!(cut.starts_with("gguf: tensor 'c': data at offset 128 + 32 bytes runs past"), "{cut}");
}

#[test]
fn corrupting_any_byte_never_panics() {
    let bytes = valid_file();
    let (mut ok, mut err) = (0, 0);
    for i in 0..bytes.len() {
        for v in [0x00, 0xff, 0x7f, 0x80, bytes[i] ^ 1, bytes[i].wrapping_add(16)] {
            let mut b = bytes.clone();
            b[i] = v;
            match GgufFile::from_slice(&b) {
                Ok(f) => {
                    ok += 1;
                    // Whatever parsed must hand out in-bounds data.
                    for t in f.tensors() {
                        assert_eq!(f.tensor_data(t).len(), t.size);
                    }
                }
                Err(e) => {
                    assert_eq!(e.kind, ErrorKind::Format);
                    err += 1;
                }
            }
        }
    }
    println!("{} corrupted files: {ok} still valid, {err} refused", ok + err);
    assert!(err > 0 && ok > 0);
}

#[test]
fn wrong_magic_and_versions() {
    let mut b = valid_file();
    b[..4].copy_from_slice(b"GGML");
    assert_error(&b, "not a GGUF file: magic is \"GGML\" (expected \"GGUF\")");
    b[..4].copy_from_slice(&[0, 0xff, b'\n', b'G']);
    assert_error(&b, r#"magic is "\x00\xff\nG""#);

    let version = |v: u32| Raw::header(v, 0, 0).0;
    assert_error(&version(1), "GGUF v1 is no longer supported");
    assert_error(&version(0), "unsupported GGUF version 0");
    assert_error(&version(4), "unsupported GGUF version 4 (only v2 and v3 are supported)");
    assert_error(&version(3u32.swap_bytes()), "big-endian GGUF v3 file");
    assert_eq!(GgufFile::from_slice(&version(2)).unwrap().version(), 2);
}

#[test]
fn absurd_counts_are_refused_before_allocating() {
    assert_error(
        &Raw::header(3, u64::MAX, 0).0,
        "tensor count 18446744073709551615 at byte 8 cannot fit in the 8 bytes left",
    );
    assert_error(
        &Raw::header(3, 0, u64::MAX).0,
        "kv count 18446744073709551615 at byte 16 cannot fit in the 0 bytes left",
    );
    assert_error(&Raw::header(3, 1 << 40, 1 << 40).data(32, 4096).0, "tensor count 1099511627776");
    // A count that fits the bytes left but that the file does not hold: refused at the
    // first missing entry, having reserved only a bounded amount.
    let many = Raw::header(3, 0, 1000).kv("k", 0, &[1]).bytes(&[0xff; 20_000]).0;
    assert_error(&many, "kv 1 of 1000: key length 18446744073709551615 at byte 38 cannot fit");
}

#[test]
fn string_lengths_past_the_end() {
    let b = Raw::header(3, 0, 1).u64(1000).bytes(b"short").0;
    assert_error(&b, "kv 0 of 1: key length 1000 at byte 24 cannot fit in the 5 bytes left");
    let b = kv_file("name", 8, &Raw::default().u64(u64::MAX).0);
    assert_error(&b, "key 'name': string value length 18446744073709551615 at byte 40 cannot fit");
    let b = kv_file("name", 8, &Raw::default().u64(5).bytes(b"abc").0);
    assert_error(&b, "key 'name': string value length 5 at byte 40 cannot fit in the 3 bytes left");
    let b = Raw::header(3, 1, 0).u64(u64::MAX - 3).bytes(&[0; 32]).0;
    assert_error(&b, "tensor info 0 of 1: tensor name length 18446744073709551612 at byte 24");
    let b = kv_file("bad\u{7f}", 0, &[0]);
    let mut bad_utf8 = b.clone();
    bad_utf8[35] = 0xc3; // a lone lead byte
    assert_error(&bad_utf8, "kv 0 of 1: key at byte 24 is not valid UTF-8 (bad byte at 35)");
}

#[test]
fn huge_and_deep_arrays() {
    let arr = |elem: u32, n: u64, rest: &[u8]| kv_file("a", 9, &Raw::default().u32(elem).u64(n).bytes(rest).0);
    assert_error(
        &arr(0, u64::MAX, &[1, 2]),
        "key 'a': arr[u8] length 18446744073709551615 at byte 41 cannot fit in the 2 bytes left",
    );
    assert_error(
        &arr(12, 3, &[0; 16]),
        "arr[f64] length 3 at byte 41 cannot fit in the 16 bytes left (each needs at least 8)",
    );
    assert_error(&arr(8, 1 << 60, &[0; 64]), "arr[str] length 1152921504606846976");
    assert_error(&arr(9, u64::MAX / 12, &[0; 64]), "arr[arr] length");
    // Two strings promised, one present.
    let one = Raw::default().u64(1).bytes(b"x").u64(9).0;
    assert_error(&arr(8, 2, &one), "key 'a': element 1 of 2: string length 9 at byte 58 cannot fit");
    // 1000 arrays nested in each other: refused at the depth cap, not by the stack.
    let mut deep = Raw::default();
    for _ in 0..1000 {
        deep = deep.u32(9).u64(1);
    }
    assert_error(&kv_file("deep", 9, &deep.0), "arrays nest more than 32 deep");
    // Nesting up to the cap reads.
    let mut ok = Raw::default();
    for _ in 0..31 {
        ok = ok.u32(9).u64(1);
    }
    let f = GgufFile::from_bytes(kv_file("deep", 9, &ok.u32(0).u64(0).0)).unwrap();
    assert_eq!(f.get_array("deep").unwrap().depth(), 32);
}

#[test]
fn unknown_value_types_and_bad_bools() {
    assert_error(&kv_file("k", 13, &[0; 8]), "key 'k': unknown value type 13 at byte 33 (known: 0..=12)");
    assert_error(&kv_file("k", u32::MAX, &[0; 8]), "unknown value type 4294967295");
    let b = kv_file("k", 9, &Raw::default().u32(42).u64(0).0);
    assert_error(&b, "key 'k': unknown array element type 42 at byte 37");
    assert_error(&kv_file("flag", 7, &[2]), "key 'flag': bool at byte 40 is 2 (must be 0 or 1)");
    let b = kv_file("flags", 9, &Raw::default().u32(7).u64(3).bytes(&[1, 0, 9]).0);
    assert_error(&b, "key 'flags': bool at byte 55 is 9");
}

#[test]
fn duplicate_keys_and_tensor_names() {
    let b = Raw::header(3, 0, 3).kv("x", 0, &[1]).kv("y", 0, &[1]).kv("x", 0, &[2]).0;
    assert_error(&b, "duplicate key 'x' (kv 2 at byte 52; kv 0 has it too)");
    let b = tensor_file(&[("t", &[4], 0, 0), ("u", &[4], 0, 32), ("t", &[4], 0, 64)], 96);
    assert_error(&b, "duplicate tensor name 't' (tensor info 2 at byte");
}

#[test]
fn bad_alignment() {
    let align =
        |ty: u32, v: &[u8]| Raw::header(3, 1, 1).kv("general.alignment", ty, v).tensor("t", &[1], 0, 0).data(64, 4).0;
    let cases: [(u32, &[u8], &str); 4] = [
        (4, &0u32.to_le_bytes(), "general.alignment is 0; it must be a nonzero power of two"),
        (4, &48u32.to_le_bytes(), "general.alignment is 48; it must be a nonzero power of two"),
        (5, &64i32.to_le_bytes(), "general.alignment must be a u32, found i32 I32(64)"),
        (10, &64u64.to_le_bytes(), "general.alignment must be a u32, found u64"),
    ];
    for (ty, value, expected) in cases {
        assert_error(&align(ty, value), expected);
    }
    let f = GgufFile::from_bytes(align(4, &64u32.to_le_bytes())).unwrap();
    assert_eq!((f.alignment(), f.data_offset() % 64), (64, 0));
    // An offset that is not a multiple of the file's alignment.
    let b =
        Raw::header(3, 1, 1).kv("general.alignment", 4, &64u32.to_le_bytes()).tensor("t", &[1], 0, 32).data(64, 64).0;
    assert_error(&b, "tensor 't': offset 32 at byte");
    assert_error(&b, "is not a multiple of the alignment 64");
}

#[test]
fn tensor_names_longer_than_ggml_allows() {
    // GGML_MAX_NAME is 64: names of up to 63 bytes.
    let long = "n".repeat(64);
    let b = tensor_file(&[(long.as_str(), &[4], 0, 0)], 16);
    assert_error(&b, &format!("tensor '{long}': name is 64 bytes long (at most 63)"));
    let fits = "n".repeat(63);
    assert!(GgufFile::from_bytes(tensor_file(&[(fits.as_str(), &[4], 0, 0)], 16)).is_ok());
    // Messages show only the start of a hostile name (or key).
    let huge = "k".repeat(100_000);
    let msg = error_of(&tensor_file(&[(huge.as_str(), &[4], 0, 0)], 16));
    assert!(msg.len() < 200 && msg.contains(&format!("tensor '{}…'", "k".repeat(64))), "{msg}");
    let msg = error_of(&kv_file(&huge, 13, &[0; 8]));
    assert!(msg.len() < 200 && msg.contains("unknown value type 13"), "{msg}");
}

#[test]
fn bad_tensor_infos() {
    let one = |ne: &[u64], ty: u32, offset: u64| tensor_file(&[("w", ne, ty, offset)], 256);
    assert_error(&one(&[1, 1, 1, 1, 1], 0, 0), "tensor 'w': n_dims at byte 33 is 5 (at most 4)");
    assert_error(&one(&[4, u64::MAX], 0, 0), "tensor 'w': ne[1] at byte 45 is negative (-1)");
    assert_error(
        &one(&[1 << 40, 1 << 40], 0, 0),
        "tensor 'w': f32 shape [1099511627776, 1099511627776] overflows 64 bits",
    );
    assert_error(&one(&[4], 4, 0), "tensor 'w': unknown ggml type id 4 at byte");
    assert_error(&one(&[4], 36, 0), "unknown ggml type id 36");
    assert_error(&one(&[4], u32::MAX, 0), "unknown ggml type id 4294967295");
    assert_error(&one(&[33, 2], 8, 0), "tensor 'w': q8_0 ne[0] = 33 is not a multiple of the q8_0 block size 32");
    assert_error(&one(&[4], 0, 1), "tensor 'w': offset 1 at byte 49 is not a multiple of the alignment 32");
    assert_error(
        &one(&[4], 0, 1 << 40),
        "tensor 'w': data at offset 1099511627776 + 16 bytes runs past the end of the file",
    );
    assert_error(&one(&[4], 0, u64::MAX - 31), "tensor 'w': data at offset 18446744073709551584 + 16 bytes runs past");
    assert_error(
        &one(&[65, 1], 0, 0),
        "tensor 'w': data at offset 0 + 260 bytes runs past the end of the file \
         (data section starts at byte 96, file is 352 bytes)",
    );
    assert_error(&one(&[i64::MAX as u64], 24, 0), "runs past the end");
    // Zero-sized tensors need no bytes, wherever they point (newer ggml allows them).
    let f = GgufFile::from_bytes(one(&[0, 5], 0, 1 << 20)).unwrap();
    assert_eq!((f.tensors()[0].size, f.tensor_bytes("w")), (0, Some(&[][..])));
}

#[test]
fn overlapping_tensors() {
    let b = tensor_file(&[("a", &[16], 0, 0), ("b", &[8], 0, 32)], 128);
    assert_error(&b, "tensors 'a' (data offset 0, 64 bytes) and 'b' (data offset 32, 32 bytes) overlap");
    let b = tensor_file(&[("x", &[4], 0, 64), ("y", &[4], 0, 0), ("z", &[4], 0, 64)], 128);
    assert_error(&b, "tensors 'x' (data offset 64, 16 bytes) and 'z' (data offset 64, 16 bytes) overlap");
    // Out of order but disjoint is fine; so is sharing an offset with an empty tensor.
    let b = tensor_file(&[("x", &[4], 0, 64), ("y", &[4], 0, 0), ("e", &[0], 0, 0)], 128);
    let f = GgufFile::from_bytes(b).unwrap();
    assert_eq!(f.tensors().iter().map(|t| t.offset).collect::<Vec<_>>(), [64, 0, 0]);
}

#[test]
fn files_on_disk() {
    let dir = std::env::temp_dir().join(format!("weft-gguf-malformed-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("cut.gguf");
    let bytes = valid_file();
    std::fs::write(&path, &bytes[..bytes.len() - 1]).unwrap();
    let e = GgufFile::open(&path).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Format);
    assert!(e.message.starts_with(&format!("gguf: {}: tensor 'c'", path.display())), "{e}");
    std::fs::write(&path, b"").unwrap();
    assert!(GgufFile::open(&path).unwrap_err().message.contains("magic at byte 0 needs 4 bytes"));
    let e = GgufFile::open(dir.join("missing.gguf")).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Io);
    assert!(e.message.contains("missing.gguf"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn value_of_a_valid_file_is_what_was_written() {
    // The file the malformed cases start from is itself sound.
    let f = GgufFile::from_bytes(valid_file()).unwrap();
    assert_eq!(f.get("nested").unwrap().type_desc(), "arr[arr]");
    assert_eq!(f.get("empty"), Some(&Value::Array(Array::I16(vec![]))));
    assert_eq!(f.tensor_bytes("b").unwrap(), [2; 68]);
}
