//! ggml's type table: every tensor element type, with ggml's ids, names, block sizes and
//! type sizes, plus the scalar conversions every backend shares.

pub mod convert;
mod float;
pub mod quant;
pub use float::{bf16_to_f32, f16_to_f32, f32_to_bf16, f32_to_f16};

/// Elements per block of the K-quant and I-quant families (ggml's `QK_K`).
pub const QK_K: usize = 256;

macro_rules! define_types {
    ($( $variant:ident = $id:literal, $name:literal, $blck:expr, $size:expr, $quant:literal; )*) => {
        /// A tensor element type, numbered as ggml numbers `enum ggml_type` so ids in
        /// GGUF files and op params mean the same thing.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[allow(non_camel_case_types)]
        pub enum Type { $( $variant = $id, )* }

        impl Type {
            /// Every type, in ggml's id order.
            pub const ALL: &'static [Type] = &[ $( Type::$variant, )* ];

            /// ggml's `ggml_type_name` (`"f32"`, `"q4_K"`, `"iq2_xxs"` ...).
            pub const fn name(self) -> &'static str {
                match self { $( Type::$variant => $name, )* }
            }

            /// Elements per block (`ggml_blck_size`): 1 for plain types.
            pub const fn blck_size(self) -> usize {
                match self { $( Type::$variant => $blck, )* }
            }

            /// Bytes per block (`ggml_type_size`).
            pub const fn type_size(self) -> usize {
                match self { $( Type::$variant => $size, )* }
            }

            /// `ggml_is_quantized`.
            pub const fn is_quantized(self) -> bool {
                match self { $( Type::$variant => $quant, )* }
            }

            /// The type with ggml's numeric id, if weft knows it.
            pub fn from_id(id: u32) -> Option<Type> {
                match id { $( $id => Some(Type::$variant), )* _ => None }
            }

            /// The type with ggml's name (case-sensitive, as ggml prints it).
            pub fn from_name(name: &str) -> Option<Type> {
                match name { $( $name => Some(Type::$variant), )* _ => None }
            }
        }
    };
}

// Sizes are the `sizeof(block_*)` that ggml-common.h asserts; the quant block structs in
// `quant/` assert the same numbers at compile time.
define_types! {
    F32      = 0,  "f32",      1,     4,   false;
    F16      = 1,  "f16",      1,     2,   false;
    Q4_0     = 2,  "q4_0",     32,    18,  true;
    Q4_1     = 3,  "q4_1",     32,    20,  true;
    Q5_0     = 6,  "q5_0",     32,    22,  true;
    Q5_1     = 7,  "q5_1",     32,    24,  true;
    Q8_0     = 8,  "q8_0",     32,    34,  true;
    Q8_1     = 9,  "q8_1",     32,    36,  true;
    Q2_K     = 10, "q2_K",     QK_K,  84,  true;
    Q3_K     = 11, "q3_K",     QK_K,  110, true;
    Q4_K     = 12, "q4_K",     QK_K,  144, true;
    Q5_K     = 13, "q5_K",     QK_K,  176, true;
    Q6_K     = 14, "q6_K",     QK_K,  210, true;
    Q8_K     = 15, "q8_K",     QK_K,  292, true;
    IQ2_XXS  = 16, "iq2_xxs",  QK_K,  66,  true;
    IQ2_XS   = 17, "iq2_xs",   QK_K,  74,  true;
    IQ3_XXS  = 18, "iq3_xxs",  QK_K,  98,  true;
    IQ1_S    = 19, "iq1_s",    QK_K,  50,  true;
    IQ4_NL   = 20, "iq4_nl",   32,    18,  true;
    IQ3_S    = 21, "iq3_s",    QK_K,  110, true;
    IQ2_S    = 22, "iq2_s",    QK_K,  82,  true;
    IQ4_XS   = 23, "iq4_xs",   QK_K,  136, true;
    I8       = 24, "i8",       1,     1,   false;
    I16      = 25, "i16",      1,     2,   false;
    I32      = 26, "i32",      1,     4,   false;
    I64      = 27, "i64",      1,     8,   false;
    F64      = 28, "f64",      1,     8,   false;
    IQ1_M    = 29, "iq1_m",    QK_K,  56,  true;
    BF16     = 30, "bf16",     1,     2,   false;
    Q4_0_4_4 = 31, "q4_0_4x4", 32,    18,  true;
    Q4_0_4_8 = 32, "q4_0_4x8", 32,    18,  true;
    Q4_0_8_8 = 33, "q4_0_8x8", 32,    18,  true;
    TQ1_0    = 34, "tq1_0",    QK_K,  54,  true;
    TQ2_0    = 35, "tq2_0",    QK_K,  66,  true;
}

impl Type {
    /// ggml's id (`enum ggml_type` value).
    pub const fn id(self) -> u32 {
        self as u32
    }

    /// `ggml_row_size`: bytes of `ne` elements. `ne` must be a multiple of the block size
    /// (see [`Type::row_size_checked`] for untrusted input).
    pub const fn row_size(self, ne: usize) -> usize {
        self.type_size() * ne / self.blck_size()
    }

    /// Row size that refuses lengths which are not whole blocks, or that overflow.
    pub fn row_size_checked(self, ne: i64) -> Option<usize> {
        let ne = usize::try_from(ne).ok()?;
        if ne % self.blck_size() != 0 {
            return None;
        }
        (ne / self.blck_size()).checked_mul(self.type_size())
    }

    /// Float and integer types whose elements are stored one by one (no blocks).
    pub const fn is_plain(self) -> bool {
        self.blck_size() == 1
    }

    /// Integer element types.
    pub const fn is_integer(self) -> bool {
        matches!(self, Type::I8 | Type::I16 | Type::I32 | Type::I64)
    }
}

impl std::fmt::Display for Type {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_names_and_sizes_follow_ggml() {
        // Spot checks against ggml.h / ggml-common.h, worked out from the block structs.
        assert_eq!(Type::ALL.len(), 34);
        assert_eq!(Type::from_id(12), Some(Type::Q4_K));
        assert_eq!(Type::from_id(4), None); // Q4_2 was removed from ggml
        assert_eq!(Type::from_name("iq2_xxs"), Some(Type::IQ2_XXS));
        // block_q4_K: d, dmin (2 x f16) + 12 scale bytes + 128 nibble bytes
        assert_eq!(Type::Q4_K.type_size(), 2 * 2 + 12 + 256 / 2);
        // block_iq3_s: d + qs[64] + qh[8] + signs[32] + scales[4]
        assert_eq!(Type::IQ3_S.type_size(), 2 + 64 + 8 + 32 + 4);
        // block_tq1_0: qs[(256 - 4*256/64)/5] + qh[256/64] + d
        assert_eq!(Type::TQ1_0.type_size(), 48 + 4 + 2);
        assert_eq!(Type::Q8_0.row_size(64), 68);
        assert_eq!(Type::Q8_0.row_size_checked(33), None);
        for &t in Type::ALL {
            assert_eq!(Type::from_id(t.id()), Some(t));
            assert_eq!(Type::from_name(t.name()), Some(t));
            assert_eq!(t.is_quantized(), t.blck_size() > 1, "{t}");
        }
    }
}
