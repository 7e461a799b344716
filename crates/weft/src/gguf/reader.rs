//! The GGUF parser: header, metadata, tensor infos and data layout of a file held in memory
//! (a memory map or a buffer), validated as it goes. It copies metadata and tensor infos
//! out and leaves tensor data where it is.
//!
//! Layout (all little-endian): magic `GGUF`, u32 version, u64 tensor count, u64 kv count;
//! each kv: string key, u32 value type, value; each tensor info: string name, u32 n_dims,
//! n_dims x u64 ne, u32 ggml type, u64 offset; zero padding to the alignment; tensor data.

use std::collections::hash_map::{Entry, HashMap};
use std::ops::Range;

use super::tensor::{check_name, data_size, TensorInfo};
use super::value::{Array, Value, ValueType};
use super::wire::{get_all, shown, Cursor};
use super::{ALIGNMENT_KEY, DEFAULT_ALIGNMENT, MAGIC, MAX_ARRAY_DEPTH, MAX_DIMS};
use crate::{Error, Result, Type};

/// Fewest bytes a kv can take: key length, value type, a one-byte value.
const MIN_KV_SIZE: usize = 8 + 4 + 1;
/// Fewest bytes a tensor info can take: name length, n_dims, type, offset.
const MIN_TENSOR_INFO_SIZE: usize = 8 + 4 + 4 + 8;
/// Most entries reserved up front for a count read from the file. Counts are already
/// bounded by the bytes left, but in a multi-GB model that bound is still far too much to
/// reserve on a hostile count's word; past this the vectors grow as entries really parse.
const MAX_RESERVE: usize = 4096;

/// Everything a GGUF file says, apart from the tensor data.
#[derive(Clone, Debug)]
pub(crate) struct Parsed {
    pub version: u32,
    pub alignment: usize,
    pub data_offset: usize,
    pub metadata: Vec<(String, Value)>,
    pub key_index: HashMap<String, usize>,
    pub tensors: Vec<TensorInfo>,
    pub tensor_index: HashMap<String, usize>,
    /// Where each tensor's bytes lie in the file (same order as `tensors`).
    pub ranges: Vec<Range<usize>>,
}

pub(crate) fn parse(buf: &[u8]) -> Result<Parsed> {
    let mut c = Cursor::new(buf);
    let version = read_header(&mut c)?;
    let n_tensors = c.count(MIN_TENSOR_INFO_SIZE, "tensor count")?;
    let n_kv = c.count(MIN_KV_SIZE, "kv count")?;

    let (metadata, key_index) = read_named(&mut c, n_kv, "kv", "key", |c, key| {
        let value = read_kv_value(c).map_err(|e| e.context(format!("key '{}'", shown(&key))))?;
        Ok((key, value))
    })?;
    let alignment = match key_index.get(ALIGNMENT_KEY) {
        Some(&i) => alignment_from(&metadata[i].1).map_err(Error::format)?,
        None => DEFAULT_ALIGNMENT,
    };
    let (tensors, tensor_index) =
        read_named(&mut c, n_tensors, "tensor info", "tensor name", |c, name| read_tensor_info(c, name, alignment))?;

    let data_offset =
        c.pos().checked_next_multiple_of(alignment).ok_or_else(|| Error::format("data section offset overflows"))?;
    let ranges = data_ranges(&tensors, data_offset, buf.len())?;
    Ok(Parsed { version, alignment, data_offset, metadata, key_index, tensors, tensor_index, ranges })
}

/// `n` entries that each start with a name (kvs, tensor infos), in file order, and their
/// index by name. A name seen before is an error: ggml refuses duplicate keys and tensor
/// names, and lookups by name would be ambiguous.
fn read_named<'a, T>(
    c: &mut Cursor<'a>,
    n: usize,
    entry: &str,
    name_what: &str,
    mut read_rest: impl FnMut(&mut Cursor<'a>, String) -> Result<T>,
) -> Result<(Vec<T>, HashMap<String, usize>)> {
    let mut items = Vec::with_capacity(n.min(MAX_RESERVE));
    let mut index = HashMap::with_capacity(n.min(MAX_RESERVE));
    for i in 0..n {
        let at = c.pos();
        let name = c.string(name_what).map_err(|e| e.context(format!("{entry} {i} of {n}")))?;
        match index.entry(name.clone()) {
            Entry::Occupied(first) => {
                return Err(Error::format(format!(
                    "duplicate {name_what} '{}' ({entry} {i} at byte {at}; {entry} {} has it too)",
                    shown(&name),
                    first.get()
                )))
            }
            Entry::Vacant(slot) => slot.insert(i),
        };
        items.push(read_rest(c, name)?);
    }
    Ok((items, index))
}

/// Magic and version; returns the version.
fn read_header(c: &mut Cursor) -> Result<u32> {
    let magic: [u8; 4] = c.take(4, "magic")?.try_into().unwrap_or_default();
    if magic != MAGIC {
        return Err(Error::format(format!(
            "not a GGUF file: magic is \"{}\" (expected \"GGUF\")",
            magic.escape_ascii()
        )));
    }
    let version = c.u32("version")?;
    match version {
        2 | 3 => Ok(version),
        1 => Err(Error::format("GGUF v1 is no longer supported (only v2 and v3 are); convert the file again")),
        // A big-endian file (gguf-py can write them) has its version byte-swapped.
        v if matches!(v.swap_bytes(), 2 | 3) => Err(Error::format(format!(
            "this is a big-endian GGUF v{} file; only little-endian files are supported",
            v.swap_bytes()
        ))),
        v => Err(Error::format(format!("unsupported GGUF version {v} (only v2 and v3 are supported)"))),
    }
}

/// The value type id and value of one kv.
fn read_kv_value(c: &mut Cursor) -> Result<Value> {
    let ty = read_value_type(c, "value type")?;
    read_value(c, ty)
}

fn read_value_type(c: &mut Cursor, what: &str) -> Result<ValueType> {
    let at = c.pos();
    let id = c.u32(what)?;
    ValueType::from_id(id).ok_or_else(|| Error::format(format!("unknown {what} {id} at byte {at} (known: 0..=12)")))
}

fn read_value(c: &mut Cursor, ty: ValueType) -> Result<Value> {
    Ok(match ty {
        ValueType::U8 => Value::U8(c.get("u8 value")?),
        ValueType::I8 => Value::I8(c.get("i8 value")?),
        ValueType::U16 => Value::U16(c.get("u16 value")?),
        ValueType::I16 => Value::I16(c.get("i16 value")?),
        ValueType::U32 => Value::U32(c.get("u32 value")?),
        ValueType::I32 => Value::I32(c.get("i32 value")?),
        ValueType::F32 => Value::F32(c.get("f32 value")?),
        ValueType::U64 => Value::U64(c.get("u64 value")?),
        ValueType::I64 => Value::I64(c.get("i64 value")?),
        ValueType::F64 => Value::F64(c.get("f64 value")?),
        ValueType::Bool => {
            let at = c.pos();
            Value::Bool(read_bools(c.take(1, "bool value")?, at)?[0])
        }
        ValueType::String => Value::String(c.string("string value")?),
        ValueType::Array => Value::Array(read_array(c, 1)?),
    })
}

/// An array's element type, length and elements; `depth` is its nesting level (1 for an
/// array that is a kv's value). Nesting is capped so a hostile file cannot recurse deep
/// enough to overflow the stack.
fn read_array(c: &mut Cursor, depth: usize) -> Result<Array> {
    if depth > MAX_ARRAY_DEPTH {
        return Err(Error::format(format!("arrays nest more than {MAX_ARRAY_DEPTH} deep at byte {}", c.pos())));
    }
    let ty = read_value_type(c, "array element type")?;
    let n = c.count(ty.min_size(), &format!("arr[{ty}] length"))?;
    // Fixed-size elements are decoded straight from their bytes. `count` checked
    // n * min_size <= bytes left, and min_size is their size, so this cannot overflow.
    let at = c.pos();
    let data = match ty.fixed_size() {
        Some(size) => c.take(n * size, &format!("arr[{ty}] data"))?,
        None => &[],
    };
    Ok(match ty {
        ValueType::U8 => Array::U8(data.to_vec()),
        ValueType::I8 => Array::I8(get_all(data)),
        ValueType::U16 => Array::U16(get_all(data)),
        ValueType::I16 => Array::I16(get_all(data)),
        ValueType::U32 => Array::U32(get_all(data)),
        ValueType::I32 => Array::I32(get_all(data)),
        ValueType::F32 => Array::F32(get_all(data)),
        ValueType::U64 => Array::U64(get_all(data)),
        ValueType::I64 => Array::I64(get_all(data)),
        ValueType::F64 => Array::F64(get_all(data)),
        ValueType::Bool => Array::Bool(read_bools(data, at)?),
        ValueType::String => Array::String(read_elements(c, n, |c| c.string("string"))?),
        ValueType::Array => Array::Array(read_elements(c, n, |c| read_array(c, depth + 1))?),
    })
}

/// `n` variable-size array elements, growing the vector as they parse (see `MAX_RESERVE`).
fn read_elements<'a, T>(
    c: &mut Cursor<'a>,
    n: usize,
    mut read: impl FnMut(&mut Cursor<'a>) -> Result<T>,
) -> Result<Vec<T>> {
    let mut out = Vec::with_capacity(n.min(MAX_RESERVE));
    for i in 0..n {
        out.push(read(c).map_err(|e| e.context(format!("element {i} of {n}")))?);
    }
    Ok(out)
}

/// Bools are one byte, 0 or 1; anything else means the file is not what it claims.
fn read_bools(bytes: &[u8], at: usize) -> Result<Vec<bool>> {
    match bytes.iter().position(|&b| b > 1) {
        Some(i) => Err(Error::format(format!("bool at byte {} is {} (must be 0 or 1)", at + i, bytes[i]))),
        None => Ok(bytes.iter().map(|&b| b == 1).collect()),
    }
}

/// `general.alignment`'s value as an alignment: a nonzero power of two stored as u32 (the
/// type ggml reads it as).
pub(crate) fn alignment_from(value: &Value) -> std::result::Result<usize, String> {
    match *value {
        Value::U32(a) if a.is_power_of_two() => Ok(a as usize),
        Value::U32(a) => Err(format!("{ALIGNMENT_KEY} is {a}; it must be a nonzero power of two")),
        ref v => Err(format!("{ALIGNMENT_KEY} must be a u32, found {} {v:?}", v.type_desc())),
    }
}

/// One tensor info after its name. Checks what does not depend on where the data section
/// starts: dimensions, type, whole blocks, offset alignment.
fn read_tensor_info(c: &mut Cursor, name: String, alignment: usize) -> Result<TensorInfo> {
    let fail = |msg: String| Error::format(format!("tensor '{}': {msg}", shown(&name)));
    let in_tensor = |e: Error| e.context(format!("tensor '{name}'"));
    check_name(&name).map_err(fail)?;
    let at = c.pos();
    let n_dims = c.u32("n_dims").map_err(in_tensor)?;
    if n_dims as usize > MAX_DIMS {
        return Err(fail(format!("n_dims at byte {at} is {n_dims} (at most {MAX_DIMS})")));
    }
    let mut ne = [1i64; MAX_DIMS];
    for (j, dim) in ne.iter_mut().take(n_dims as usize).enumerate() {
        let at = c.pos();
        let raw = c.u64("ne").map_err(in_tensor)?;
        *dim = i64::try_from(raw).map_err(|_| fail(format!("ne[{j}] at byte {at} is negative ({})", raw as i64)))?;
    }
    let at = c.pos();
    let type_id = c.u32("type").map_err(in_tensor)?;
    let ty = Type::from_id(type_id).ok_or_else(|| fail(format!("unknown ggml type id {type_id} at byte {at}")))?;
    let at = c.pos();
    let offset = c.u64("offset").map_err(in_tensor)?;
    let size = data_size(ty, &ne[..n_dims as usize]).map_err(|m| fail(format!("{ty} {m}")))?;
    if offset % alignment as u64 != 0 {
        return Err(fail(format!("offset {offset} at byte {at} is not a multiple of the alignment {alignment}")));
    }
    Ok(TensorInfo { name, ty, n_dims: n_dims as usize, ne, offset, size })
}

/// Where each tensor's data lies in the file: inside it, and overlapping no other tensor.
/// Only a tensor's own bytes must be present, not the padding after the last one.
fn data_ranges(tensors: &[TensorInfo], data_offset: usize, file_len: usize) -> Result<Vec<Range<usize>>> {
    let mut ranges = Vec::with_capacity(tensors.len());
    for t in tensors {
        let start = usize::try_from(t.offset).ok().and_then(|o| o.checked_add(data_offset));
        let range = start.and_then(|s| Some(s..s.checked_add(t.size)?));
        match range {
            // An empty tensor needs no bytes, even where its offset points past the end.
            Some(r) if t.size == 0 || r.end <= file_len => ranges.push(r),
            _ => {
                return Err(Error::format(format!(
                    "tensor '{}': data at offset {} + {} bytes runs past the end of the file \
                     (data section starts at byte {data_offset}, file is {file_len} bytes)",
                    t.name, t.offset, t.size
                )))
            }
        }
    }
    let mut order: Vec<usize> = (0..tensors.len()).filter(|&i| tensors[i].size > 0).collect();
    order.sort_by_key(|&i| ranges[i].start);
    for pair in order.windows(2) {
        let (a, b) = (pair[0], pair[1]);
        if ranges[a].end > ranges[b].start {
            return Err(Error::format(format!(
                "tensors '{}' (data offset {}, {} bytes) and '{}' (data offset {}, {} bytes) \
                 overlap",
                tensors[a].name,
                tensors[a].offset,
                tensors[a].size,
                tensors[b].name,
                tensors[b].offset,
                tensors[b].size
            )));
        }
    }
    Ok(ranges)
}
