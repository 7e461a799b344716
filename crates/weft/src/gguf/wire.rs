//! GGUF's byte-level encoding, both ways: a bounds-checked little-endian reader over a byte
//! slice, and the matching writers. Every read says what it was reading, so a truncated or
//! hostile file gets an error naming the field and the byte offset, never a panic or an
//! out-of-bounds read.

use crate::{Error, Result};

/// A fixed-size number as GGUF stores it: little-endian, `SIZE` bytes.
pub(crate) trait Le: Copy {
    const SIZE: usize;
    fn put(self, out: &mut Vec<u8>);
    /// Decodes `bytes`, which the caller has cut to exactly `SIZE` bytes.
    fn get(bytes: &[u8]) -> Self;
}

macro_rules! le_numbers {
    ($($t:ty),*) => {$(
        impl Le for $t {
            const SIZE: usize = std::mem::size_of::<$t>();
            fn put(self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }
            fn get(bytes: &[u8]) -> Self {
                let mut raw = [0u8; std::mem::size_of::<$t>()];
                raw.copy_from_slice(bytes);
                <$t>::from_le_bytes(raw)
            }
        }
    )*};
}

le_numbers!(u8, i8, u16, i16, u32, i32, f32, u64, i64, f64);

/// Decodes a run of little-endian numbers (`bytes.len()` a multiple of `T::SIZE`).
pub(crate) fn get_all<T: Le>(bytes: &[u8]) -> Vec<T> {
    bytes.chunks_exact(T::SIZE).map(T::get).collect()
}

/// A name for an error message: whole if short, else its first 64 bytes and "…" (a hostile
/// key can be as long as the file).
pub(crate) fn shown(name: &str) -> String {
    if name.len() <= 64 {
        return name.to_string();
    }
    let mut end = 64;
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &name[..end])
}

/// Appends a GGUF string: u64 byte length, then the UTF-8 bytes.
pub(crate) fn put_string(out: &mut Vec<u8>, s: &str) {
    (s.len() as u64).put(out);
    out.extend_from_slice(s.as_bytes());
}

pub(crate) struct Cursor<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    pub fn new(buf: &'a [u8]) -> Self {
        Cursor { buf, pos: 0 }
    }

    /// Offset of the next byte to read.
    pub fn pos(&self) -> usize {
        self.pos
    }

    /// Bytes left after `pos`.
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// The next `n` bytes.
    pub fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8]> {
        let left = self.remaining();
        if n > left {
            return Err(Error::format(format!(
                "{what} at byte {} needs {n} bytes but the file has only {left} left (truncated?)",
                self.pos
            )));
        }
        let bytes = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(bytes)
    }

    /// The next little-endian number.
    pub fn get<T: Le>(&mut self, what: &str) -> Result<T> {
        self.take(T::SIZE, what).map(T::get)
    }

    pub fn u32(&mut self, what: &str) -> Result<u32> {
        self.get(what)
    }

    pub fn u64(&mut self, what: &str) -> Result<u64> {
        self.get(what)
    }

    /// A count read from the file, checked against the bytes left: `count` items of at least
    /// `min_size` bytes each must fit, so no hostile count can make the caller allocate more
    /// than the file could hold.
    pub fn count(&mut self, min_size: usize, what: &str) -> Result<usize> {
        let at = self.pos;
        let n = self.u64(what)?;
        let left = self.remaining();
        match usize::try_from(n).ok().and_then(|n| n.checked_mul(min_size)) {
            Some(bytes) if bytes <= left => Ok(n as usize),
            _ => Err(Error::format(format!(
                "{what} {n} at byte {at} cannot fit in the {left} bytes left \
                 (each needs at least {min_size})"
            ))),
        }
    }

    /// A GGUF string: u64 length, then that many bytes of UTF-8 (not NUL-terminated).
    pub fn string(&mut self, what: &str) -> Result<String> {
        let at = self.pos;
        let len = self.count(1, &format!("{what} length"))?;
        let bytes = self.take(len, what)?;
        match std::str::from_utf8(bytes) {
            Ok(s) => Ok(s.to_string()),
            Err(e) => Err(Error::format(format!(
                "{what} at byte {at} is not valid UTF-8 (bad byte at {})",
                at + 8 + e.valid_up_to()
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_little_endian_and_refuses_to_run_past_the_end() {
        let bytes = [1, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 9];
        let mut c = Cursor::new(&bytes);
        assert_eq!(c.u32("a").unwrap(), 1);
        assert_eq!(c.u64("b").unwrap(), 2);
        let e = c.u32("the field").unwrap_err();
        assert_eq!(e.message, "the field at byte 12 needs 4 bytes but the file has only 1 left (truncated?)");
        assert_eq!(c.pos(), 12, "a failed read consumes nothing");
    }

    #[test]
    fn long_names_are_cut_in_messages() {
        assert_eq!(shown("short"), "short");
        assert_eq!(shown(&"é".repeat(40)), format!("{}…", "é".repeat(32)));
    }

    #[test]
    fn writers_and_readers_agree() {
        let mut out = Vec::new();
        (-2i16).put(&mut out);
        1.5f64.put(&mut out);
        put_string(&mut out, "né");
        let mut c = Cursor::new(&out);
        assert_eq!(c.get::<i16>("a").unwrap(), -2);
        assert_eq!(c.get::<f64>("b").unwrap(), 1.5);
        assert_eq!(c.string("c").unwrap(), "né");
        assert_eq!(c.remaining(), 0);
        assert_eq!(get_all::<u16>(&[1, 0, 2, 1]), vec![1, 258]);
    }

    #[test]
    fn counts_are_checked_against_what_is_left() {
        let mut bytes = u64::MAX.to_le_bytes().to_vec();
        bytes.extend([0; 16]);
        let e = Cursor::new(&bytes).count(1, "array length").unwrap_err();
        assert!(e.message.contains("array length 18446744073709551615 at byte 0 cannot fit"));
        let mut bytes = 3u64.to_le_bytes().to_vec();
        bytes.extend([0; 16]);
        assert_eq!(Cursor::new(&bytes).count(5, "n").unwrap(), 3);
        assert!(Cursor::new(&bytes).count(6, "n").is_err());
    }

    #[test]
    fn strings_must_be_utf8_and_in_bounds() {
        let mut bytes = 2u64.to_le_bytes().to_vec();
        bytes.extend(b"hi");
        assert_eq!(Cursor::new(&bytes).string("key").unwrap(), "hi");
        bytes[9] = 0xff;
        let e = Cursor::new(&bytes).string("key").unwrap_err();
        assert_eq!(e.message, "key at byte 0 is not valid UTF-8 (bad byte at 9)");
        let e = Cursor::new(&bytes[..9]).string("key").unwrap_err();
        assert!(e.message.starts_with("key length 2 at byte 0 cannot fit in the 1 bytes left"));
    }
}
