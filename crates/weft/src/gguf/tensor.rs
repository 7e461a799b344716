//! Tensor infos: what GGUF says about each tensor, and the shape rules the reader and the
//! writer both enforce (so whatever the writer accepts, the reader reads back).

use super::{MAX_DIMS, MAX_NAME};
use crate::tensor::contiguous_strides;
use crate::Type;

/// One tensor of a GGUF file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TensorInfo {
    pub name: String,
    pub ty: Type,
    /// Dimensions the file lists (0..=4). ggml writes `ggml_n_dims`, i.e. drops trailing 1s.
    pub n_dims: usize,
    /// Elements per dimension, `ne[0]` fastest, padded with 1s to 4 dimensions.
    pub ne: [i64; MAX_DIMS],
    /// Byte offset of the data from the start of the data section (a multiple of the
    /// alignment); add [`GgufFile::data_offset`](super::GgufFile::data_offset) for the
    /// offset in the file.
    pub offset: u64,
    /// Bytes of data: `ggml_nbytes` of a contiguous tensor of this type and shape.
    pub size: usize,
}

impl TensorInfo {
    /// The shape as the file lists it (`ne[..n_dims]`).
    pub fn shape(&self) -> &[i64] {
        &self.ne[..self.n_dims.min(MAX_DIMS)]
    }

    /// `ggml_nelements`.
    pub fn n_elements(&self) -> i64 {
        self.ne.iter().fold(1i64, |acc, &n| acc.saturating_mul(n))
    }

    /// Byte strides of the contiguous layout ggml gives a new tensor of this type and shape
    /// (`nb[0]` = type size, `nb[1]` = row size, then each the previous times `ne`): the
    /// layout of [`GgufFile::tensor_data`](super::GgufFile::tensor_data), and of a tensor
    /// made with `Context::new_tensor(info.ty, &info.ne)`.
    pub fn nb(&self) -> [usize; MAX_DIMS] {
        contiguous_strides(self.ty, &self.ne)
    }
}

/// Checks a tensor name against ggml's limit: ggml refuses longer names in GGUF files, and
/// weft, like `ggml_set_name`, would cut them to 63 bytes, so two long names could collide.
pub(crate) fn check_name(name: &str) -> Result<(), String> {
    if name.len() >= MAX_NAME {
        return Err(format!("name is {} bytes long (at most {})", name.len(), MAX_NAME - 1));
    }
    Ok(())
}

/// Checks that `ne` (at most 4 dims) is a shape a tensor of type `ty` can have and returns
/// its data size in bytes; on failure, says what is wrong (the caller names the tensor).
///
/// The rules are ggml's: no negative dimension, rows of whole blocks (`ne[0]` a multiple of
/// the block size), and element count and byte strides that fit in 64 bits. Zero-sized
/// dimensions are allowed, as newer ggml allows them.
pub(crate) fn data_size(ty: Type, ne: &[i64]) -> Result<usize, String> {
    if ne.len() > MAX_DIMS {
        return Err(format!("has {} dimensions (at most {MAX_DIMS})", ne.len()));
    }
    if let Some(i) = ne.iter().position(|&n| n < 0) {
        return Err(format!("dimension {i} is negative ({})", ne[i]));
    }
    let ne0 = ne.first().copied().unwrap_or(1);
    if ne0 % ty.blck_size() as i64 != 0 {
        return Err(format!("ne[0] = {ne0} is not a multiple of the {} block size {}", ty.name(), ty.blck_size()));
    }
    // Zero dimensions count as 1 here, so a zero early in the shape cannot hide huge later
    // ones from the overflow check (ggml computes strides from every dimension).
    let overflow = || format!("shape {ne:?} overflows 64 bits");
    let mut elements: i64 = 1;
    let row_bytes = usize::try_from(ne0 / ty.blck_size() as i64)
        .ok()
        .and_then(|blocks| blocks.checked_mul(ty.type_size()))
        .ok_or_else(overflow)?;
    let mut stride = row_bytes;
    let mut size = row_bytes;
    for (i, &n) in ne.iter().enumerate() {
        elements = elements.checked_mul(n.max(1)).ok_or_else(overflow)?;
        if i > 0 {
            let n = usize::try_from(n).map_err(|_| overflow())?;
            stride = stride.checked_mul(n.max(1)).ok_or_else(overflow)?;
            size = size.checked_mul(n).ok_or_else(overflow)?;
        }
    }
    if i64::try_from(stride).is_err() {
        return Err(overflow());
    }
    Ok(size)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_follow_ggml_nbytes() {
        assert_eq!(data_size(Type::F32, &[3, 2]), Ok(24));
        assert_eq!(data_size(Type::F32, &[]), Ok(4), "0 dims is a scalar");
        assert_eq!(data_size(Type::Q8_0, &[64, 3]), Ok(2 * 34 * 3));
        assert_eq!(data_size(Type::Q4_K, &[256, 1, 2, 3]), Ok(144 * 6));
        assert_eq!(data_size(Type::F16, &[4, 0, 5]), Ok(0));
    }

    #[test]
    fn bad_shapes_say_what_is_wrong() {
        assert_eq!(data_size(Type::F32, &[1, 2, 3, 4, 5]).unwrap_err(), "has 5 dimensions (at most 4)");
        assert_eq!(data_size(Type::F32, &[4, -1]).unwrap_err(), "dimension 1 is negative (-1)");
        assert_eq!(data_size(Type::Q8_0, &[33]).unwrap_err(), "ne[0] = 33 is not a multiple of the q8_0 block size 32");
        assert!(data_size(Type::F32, &[1 << 40, 1 << 40]).unwrap_err().contains("overflows"));
        assert!(data_size(Type::F32, &[i64::MAX]).unwrap_err().contains("overflows"));
        assert!(data_size(Type::I8, &[0, i64::MAX, 2]).unwrap_err().contains("overflows"));
    }

    #[test]
    fn names_keep_to_ggmls_limit() {
        assert_eq!(check_name(&"x".repeat(63)), Ok(()));
        assert_eq!(check_name(&"x".repeat(64)).unwrap_err(), "name is 64 bytes long (at most 63)");
    }

    #[test]
    fn strides_are_ggmls() {
        let info =
            TensorInfo { name: "t".into(), ty: Type::Q8_0, n_dims: 3, ne: [64, 3, 2, 1], offset: 0, size: 2 * 34 * 6 };
        assert_eq!(info.nb(), [34, 68, 204, 408]);
        assert_eq!(info.n_elements(), 384);
        assert_eq!(info.shape(), &[64, 3, 2]);
    }
}
