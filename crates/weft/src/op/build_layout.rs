//! Constructors of layout ops: copies, views, reshapes, permutes, row gathers, set/acc,
//! concat, pad, upscale and the generators (arange, timestep embedding).

use super::build_basic::Out;
use crate::context::Context;
use crate::op::Op;
use crate::tensor::{contiguous_strides, fmt_shape, Tensor, MAX_DIMS};
use crate::types::Type;
use crate::{ensure, Error, Result};

impl Context {
    /// ggml_cpy: copy a into b (converting type); the result is a view of b.
    pub fn cpy(&self, a: &Tensor, b: &Tensor) -> Result<Tensor> {
        ensure!(
            a.nelements() == b.nelements(),
            "cpy: a has {} elements {} but b has {} {}",
            a.nelements(),
            fmt_shape(&a.ne()),
            b.nelements(),
            fmt_shape(&b.ne())
        );
        let name = if b.name().is_empty() {
            format!("{} (copy)", a.name())
        } else {
            format!("{} (copy of {})", b.name(), a.name())
        };
        self.view_of(b, Op::Cpy, vec![Some(a.clone()), Some(b.clone())], b.ne(), b.nb(), 0, name, "cpy")
    }

    /// ggml_cast: a copy of a in another type. (ggml makes the result its own src[1]; weft
    /// leaves that slot empty, since a node cannot hold itself.)
    pub fn cast(&self, a: &Tensor, ty: Type) -> Result<Tensor> {
        let t = self.op_node("cast", Out::New(ty, a.ne()), Op::Cpy, vec![Some(a.clone())])?;
        t.set_name(&format!("{} (copy)", a.name()));
        Ok(t)
    }

    /// ggml_cont: a contiguous copy of a.
    pub fn cont(&self, a: &Tensor) -> Result<Tensor> {
        self.cont_4d(a, a.ne()[0], a.ne()[1], a.ne()[2], a.ne()[3])
    }
    pub fn cont_1d(&self, a: &Tensor, ne0: i64) -> Result<Tensor> {
        self.cont_4d(a, ne0, 1, 1, 1)
    }
    pub fn cont_2d(&self, a: &Tensor, ne0: i64, ne1: i64) -> Result<Tensor> {
        self.cont_4d(a, ne0, ne1, 1, 1)
    }
    pub fn cont_3d(&self, a: &Tensor, ne0: i64, ne1: i64, ne2: i64) -> Result<Tensor> {
        self.cont_4d(a, ne0, ne1, ne2, 1)
    }
    /// ggml_cont_4d: a contiguous copy of a with a new shape of as many elements.
    pub fn cont_4d(&self, a: &Tensor, ne0: i64, ne1: i64, ne2: i64, ne3: i64) -> Result<Tensor> {
        let ne = [ne0, ne1, ne2, ne3];
        ensure!(
            ne.iter().try_fold(1i64, |acc, &n| acc.checked_mul(n)) == Some(a.nelements()),
            "cont: new shape {} must hold a's {} elements",
            fmt_shape(&ne),
            a.nelements()
        );
        let t = self.op_node("cont", Out::New(a.ty(), ne), Op::Cont, vec![Some(a.clone())])?;
        t.set_name(&format!("{} (cont)", a.name()));
        Ok(t)
    }

    /// ggml_reshape: view of contiguous a with b's shape.
    pub fn reshape(&self, a: &Tensor, b: &Tensor) -> Result<Tensor> {
        self.reshape_to("reshape", a, b.ne())
    }
    pub fn reshape_1d(&self, a: &Tensor, ne0: i64) -> Result<Tensor> {
        self.reshape_to("reshape1d", a, [ne0, 1, 1, 1])
    }
    pub fn reshape_2d(&self, a: &Tensor, ne0: i64, ne1: i64) -> Result<Tensor> {
        self.reshape_to("reshape2d", a, [ne0, ne1, 1, 1])
    }
    pub fn reshape_3d(&self, a: &Tensor, ne0: i64, ne1: i64, ne2: i64) -> Result<Tensor> {
        self.reshape_to("reshape3d", a, [ne0, ne1, ne2, 1])
    }
    pub fn reshape_4d(&self, a: &Tensor, ne0: i64, ne1: i64, ne2: i64, ne3: i64) -> Result<Tensor> {
        self.reshape_to("reshape4d", a, [ne0, ne1, ne2, ne3])
    }

    fn reshape_to(&self, what: &str, a: &Tensor, ne: [i64; MAX_DIMS]) -> Result<Tensor> {
        ensure!(a.is_contiguous(), "{what}: a must be contiguous");
        ensure!(
            ne.iter().try_fold(1i64, |acc, &n| acc.checked_mul(n)) == Some(a.nelements()),
            "{what}: new shape {} must hold a's {} elements",
            fmt_shape(&ne),
            a.nelements()
        );
        if ne[0] % a.ty().blck_size() as i64 != 0 {
            return Err(Error::invalid(format!(
                "{what}: ne[0]={} must be a multiple of {}'s block size",
                ne[0],
                a.ty()
            )));
        }
        let nb = contiguous_strides(a.ty(), &ne);
        self.view_of(a, Op::Reshape, vec![Some(a.clone())], ne, nb, 0, format!("{} (reshaped)", a.name()), what)
    }

    /// ggml_view_1d..4d: a strided window into a at a byte offset. Strides not given are
    /// derived as ggml derives them.
    pub fn view_1d(&self, a: &Tensor, ne0: i64, offset: usize) -> Result<Tensor> {
        let ne = [ne0, 1, 1, 1];
        self.view_nd("view1d", a, ne, None, offset)
    }
    pub fn view_2d(&self, a: &Tensor, ne0: i64, ne1: i64, nb1: usize, offset: usize) -> Result<Tensor> {
        let nb2 = nb1.saturating_mul(ne1.max(0) as usize);
        self.view_nd("view2d", a, [ne0, ne1, 1, 1], Some([nb1, nb2, nb2]), offset)
    }
    #[allow(clippy::too_many_arguments)]
    pub fn view_3d(
        &self,
        a: &Tensor,
        ne0: i64,
        ne1: i64,
        ne2: i64,
        nb1: usize,
        nb2: usize,
        offset: usize,
    ) -> Result<Tensor> {
        let nb3 = nb2.saturating_mul(ne2.max(0) as usize);
        self.view_nd("view3d", a, [ne0, ne1, ne2, 1], Some([nb1, nb2, nb3]), offset)
    }
    #[allow(clippy::too_many_arguments)]
    pub fn view_4d(
        &self,
        a: &Tensor,
        ne0: i64,
        ne1: i64,
        ne2: i64,
        ne3: i64,
        nb1: usize,
        nb2: usize,
        nb3: usize,
        offset: usize,
    ) -> Result<Tensor> {
        self.view_nd("view4d", a, [ne0, ne1, ne2, ne3], Some([nb1, nb2, nb3]), offset)
    }

    fn view_nd(
        &self,
        what: &str,
        a: &Tensor,
        ne: [i64; MAX_DIMS],
        nb123: Option<[usize; 3]>,
        offset: usize,
    ) -> Result<Tensor> {
        if ne.iter().any(|&n| n < 0) {
            return Err(Error::invalid(format!("{what}: shape {} must not be negative", fmt_shape(&ne))));
        }
        if ne[0] % a.ty().blck_size() as i64 != 0 {
            return Err(Error::invalid(format!(
                "{what}: ne[0]={} must be a multiple of {}'s block size",
                ne[0],
                a.ty()
            )));
        }
        let mut nb = contiguous_strides(a.ty(), &ne);
        if let Some([nb1, nb2, nb3]) = nb123 {
            nb[1] = nb1;
            nb[2] = nb2;
            nb[3] = nb3;
        }
        self.view_of(
            a,
            Op::View { offset },
            vec![Some(a.clone())],
            ne,
            nb,
            offset,
            format!("{} (view)", a.name()),
            what,
        )
    }

    /// ggml_permute: axis i of a becomes axis `axes[i]` of the result.
    pub fn permute(&self, a: &Tensor, axes: [i32; 4]) -> Result<Tensor> {
        for (i, &ax) in axes.iter().enumerate() {
            ensure!((0..4).contains(&ax), "permute: axis{i}={ax} must be in 0..3");
        }
        for i in 0..4 {
            for j in i + 1..4 {
                ensure!(axes[i] != axes[j], "permute: axis{i} and axis{j} are both {}", axes[i]);
            }
        }
        let (ane, anb) = (a.ne(), a.nb());
        let mut ne = [0i64; 4];
        let mut nb = [0usize; 4];
        for i in 0..4 {
            ne[axes[i] as usize] = ane[i];
            nb[axes[i] as usize] = anb[i];
        }
        self.view_of(
            a,
            Op::Permute { axes },
            vec![Some(a.clone())],
            ne,
            nb,
            0,
            format!("{} (permuted)", a.name()),
            "permute",
        )
    }

    /// ggml_transpose: swap the first two axes.
    pub fn transpose(&self, a: &Tensor) -> Result<Tensor> {
        let (mut ne, mut nb) = (a.ne(), a.nb());
        ne.swap(0, 1);
        nb.swap(0, 1);
        self.view_of(
            a,
            Op::Transpose,
            vec![Some(a.clone())],
            ne,
            nb,
            0,
            format!("{} (transposed)", a.name()),
            "transpose",
        )
    }

    /// ggml_get_rows: rows of a picked by the i32 indices in b (b may be 3-D: a.ne[2] == b.ne[1]).
    pub fn get_rows(&self, a: &Tensor, b: &Tensor) -> Result<Tensor> {
        ensure!(a.ne()[2] == b.ne()[1], "getRows: a.ne[2]={} must equal b.ne[1]={}", a.ne()[2], b.ne()[1]);
        ensure!(b.ne()[3] == 1, "getRows: b.ne[3]={} must be 1", b.ne()[3]);
        ensure!(b.ty() == Type::I32, "getRows: b.type={} must be i32", b.ty());
        let ty = if a.ty() == Type::I32 { Type::I32 } else { Type::F32 };
        let ne = [a.ne()[0], b.ne()[0], b.ne()[1], b.ne()[2]];
        self.op_node("getRows", Out::New(ty, ne), Op::GetRows, vec![Some(a.clone()), Some(b.clone())])
    }

    /// ggml_get_rows_back: scatter-add the rows of a (gradients) into c's shape.
    pub fn get_rows_back(&self, a: &Tensor, b: &Tensor, c: &Tensor) -> Result<Tensor> {
        let what = "getRowsBack";
        ensure!(a.is_matrix(), "{what}: a must be a matrix, got {}", fmt_shape(&a.ne()));
        ensure!(
            b.is_vector() && b.ty() == Type::I32,
            "{what}: b must be an i32 vector, got {} {}",
            b.ty(),
            fmt_shape(&b.ne())
        );
        ensure!(c.is_matrix(), "{what}: c must be a matrix, got {}", fmt_shape(&c.ne()));
        ensure!(a.ne()[0] == c.ne()[0], "{what}: a.ne[0]={} must equal c.ne[0]={}", a.ne()[0], c.ne()[0]);
        self.op_node(
            what,
            Out::New(Type::F32, [c.ne()[0], c.ne()[1], 1, 1]),
            Op::GetRowsBack,
            vec![Some(a.clone()), Some(b.clone())],
        )
    }

    /// ggml_diag: a row vector spread onto a diagonal matrix.
    pub fn diag(&self, a: &Tensor) -> Result<Tensor> {
        ensure!(a.ne()[1] == 1, "diag: a.ne[1]={} must be 1", a.ne()[1]);
        let ne = [a.ne()[0], a.ne()[0], a.ne()[2], a.ne()[3]];
        self.op_node("diag", Out::New(a.ty(), ne), Op::Diag, vec![Some(a.clone())])
    }

    /// ggml_set: write b into a view of a (strides nb1..nb3, byte offset); returns a
    /// modified copy of a, or a itself when inplace.
    #[allow(clippy::too_many_arguments)]
    pub fn set(
        &self,
        a: &Tensor,
        b: &Tensor,
        nb1: usize,
        nb2: usize,
        nb3: usize,
        offset: usize,
        inplace: bool,
    ) -> Result<Tensor> {
        let what = if inplace { "setInplace" } else { "set" };
        ensure!(
            a.nelements() >= b.nelements(),
            "{what}: b has {} elements, more than a's {}",
            b.nelements(),
            a.nelements()
        );
        ensure!(offset < (1 << 30), "{what}: offset={offset} must be below 2^30");
        check_window(what, a, b, [nb1, nb2, nb3], offset)?;
        let out = if inplace { Out::InplaceOf(a) } else { Out::Like(a) };
        self.op_node(what, out, Op::Set { nb1, nb2, nb3, offset, inplace }, vec![Some(a.clone()), Some(b.clone())])
    }
    pub fn set_1d(&self, a: &Tensor, b: &Tensor, offset: usize, inplace: bool) -> Result<Tensor> {
        let nb = a.nb();
        self.set(a, b, nb[1], nb[2], nb[3], offset, inplace)
    }
    pub fn set_2d(&self, a: &Tensor, b: &Tensor, nb1: usize, offset: usize, inplace: bool) -> Result<Tensor> {
        let nb = a.nb();
        self.set(a, b, nb1, nb[2], nb[3], offset, inplace)
    }

    /// ggml_acc: a copy of a with b added into a view of it (strides nb1..nb3, byte offset).
    #[allow(clippy::too_many_arguments)]
    pub fn acc(
        &self,
        a: &Tensor,
        b: &Tensor,
        nb1: usize,
        nb2: usize,
        nb3: usize,
        offset: usize,
        inplace: bool,
    ) -> Result<Tensor> {
        let what = if inplace { "accInplace" } else { "acc" };
        ensure!(
            b.nelements() <= a.nelements(),
            "{what}: b has {} elements, more than a's {}",
            b.nelements(),
            a.nelements()
        );
        ensure!(a.is_contiguous(), "{what}: a must be contiguous");
        ensure!(a.ty() == Type::F32, "{what}: a.type={} must be f32", a.ty());
        ensure!(b.ty() == Type::F32, "{what}: b.type={} must be f32", b.ty());
        check_window(what, a, b, [nb1, nb2, nb3], offset)?;
        let out = if inplace { Out::InplaceOf(a) } else { Out::Like(a) };
        self.op_node(what, out, Op::Acc { nb1, nb2, nb3, offset, inplace }, vec![Some(a.clone()), Some(b.clone())])
    }

    /// ggml_concat: a and b joined along `dim`; all other dims must match.
    pub fn concat(&self, a: &Tensor, b: &Tensor, dim: i32) -> Result<Tensor> {
        ensure!((0..4).contains(&dim), "concat: dim={dim} must be in 0..3");
        ensure!(a.ty() == b.ty(), "concat: a.type={} and b.type={} must match", a.ty(), b.ty());
        let (an, bn) = (a.ne(), b.ne());
        let mut ne = an;
        for (d, n) in ne.iter_mut().enumerate() {
            if d == dim as usize {
                *n = an[d] + bn[d];
            } else {
                ensure!(an[d] == bn[d], "concat: a.ne[{d}]={} must equal b.ne[{d}]={}", an[d], bn[d]);
            }
        }
        self.op_node("concat", Out::New(a.ty(), ne), Op::Concat { dim }, vec![Some(a.clone()), Some(b.clone())])
    }

    /// ggml_pad: zeros appended at the end of each dim.
    pub fn pad(&self, a: &Tensor, p0: i32, p1: i32, p2: i32, p3: i32) -> Result<Tensor> {
        let p = [p0, p1, p2, p3];
        ensure!(p.iter().all(|&x| x >= 0), "pad: paddings {:?} must not be negative", p);
        let mut ne = a.ne();
        for i in 0..4 {
            ne[i] += p[i] as i64;
        }
        self.op_node("pad", Out::New(a.ty(), ne), Op::Pad, vec![Some(a.clone())])
    }

    /// ggml_upscale: nearest-neighbour upscale of dims 0 and 1 by an integer factor.
    pub fn upscale(&self, a: &Tensor, scale_factor: i32) -> Result<Tensor> {
        ensure!(scale_factor > 0, "upscale: scaleFactor={scale_factor} must be positive");
        let ne = a.ne();
        self.upscale_ext(a, ne[0] as i32 * scale_factor, ne[1] as i32 * scale_factor, ne[2] as i32, ne[3] as i32)
    }

    /// ggml_upscale_ext: nearest-neighbour upscale to the given shape.
    pub fn upscale_ext(&self, a: &Tensor, ne0: i32, ne1: i32, ne2: i32, ne3: i32) -> Result<Tensor> {
        let ne = [ne0 as i64, ne1 as i64, ne2 as i64, ne3 as i64];
        for (i, (&have, &want)) in a.ne().iter().zip(&ne).enumerate() {
            ensure!(have <= want, "upscaleExt: a.ne[{i}]={have} must not exceed ne{i}={want}");
        }
        self.op_node("upscaleExt", Out::New(a.ty(), ne), Op::Upscale, vec![Some(a.clone())])
    }

    /// ggml_arange: [start, stop) by step, f32.
    pub fn arange(&self, start: f32, stop: f32, step: f32) -> Result<Tensor> {
        ensure!(stop > start, "arange: stop={stop} must be greater than start={start}");
        ensure!(step > 0.0, "arange: step={step} must be positive");
        let steps = ((stop - start) / step).ceil() as i64;
        self.op_node("arange", Out::New(Type::F32, [steps, 1, 1, 1]), Op::Arange { start, stop, step }, vec![])
    }

    /// ggml_timestep_embedding: sinusoidal embeddings [dim (rounded up to even), n].
    pub fn timestep_embedding(&self, timesteps: &Tensor, dim: i32, max_period: i32) -> Result<Tensor> {
        ensure!(dim > 0, "timestepEmbedding: dim={dim} must be positive");
        let actual = if dim % 2 != 0 { dim + 1 } else { dim };
        let ne = [actual as i64, timesteps.ne()[0], 1, 1];
        self.op_node(
            "timestepEmbedding",
            Out::New(Type::F32, ne),
            Op::TimestepEmbedding { dim, max_period },
            vec![Some(timesteps.clone())],
        )
    }

    /// ggml_win_part: split into non-overlapping w x w windows (padding as needed).
    pub fn win_part(&self, a: &Tensor, w: i32) -> Result<Tensor> {
        ensure!(w > 0, "winPart: w={w} must be positive");
        ensure!(a.ne()[3] == 1, "winPart: a.ne[3]={} must be 1", a.ne()[3]);
        ensure!(a.ty() == Type::F32, "winPart: a.type={} must be f32", a.ty());
        let w64 = w as i64;
        let px = (w64 - a.ne()[1] % w64) % w64;
        let py = (w64 - a.ne()[2] % w64) % w64;
        let npx = (px + a.ne()[1]) / w64;
        let npy = (py + a.ne()[2]) / w64;
        let ne = [a.ne()[0], w64, w64, npx * npy];
        self.op_node(
            "winPart",
            Out::New(Type::F32, ne),
            Op::WinPart { npx: npx as i32, npy: npy as i32, w },
            vec![Some(a.clone())],
        )
    }

    /// ggml_win_unpart: the reverse of win_part.
    pub fn win_unpart(&self, a: &Tensor, w0: i32, h0: i32, w: i32) -> Result<Tensor> {
        ensure!(a.ty() == Type::F32, "winUnpart: a.type={} must be f32", a.ty());
        ensure!(w > 0 && w0 >= 0 && h0 >= 0, "winUnpart: w={w}, w0={w0}, h0={h0} must be positive");
        let ne = [a.ne()[0], w0 as i64, h0 as i64, 1];
        self.op_node("winUnpart", Out::New(Type::F32, ne), Op::WinUnpart { w }, vec![Some(a.clone())])
    }

    /// ggml_get_rel_pos (SAM): relative position table, f16.
    pub fn get_rel_pos(&self, a: &Tensor, qh: i32, kh: i32) -> Result<Tensor> {
        ensure!(qh == kh, "getRelPos: qh={qh} must equal kh={kh}");
        ensure!(2 * qh as i64 - 1 == a.ne()[1], "getRelPos: a.ne[1]={} must be 2*qh-1={}", a.ne()[1], 2 * qh - 1);
        let ne = [a.ne()[0], kh as i64, qh as i64, 1];
        self.op_node("getRelPos", Out::New(Type::F16, ne), Op::GetRelPos, vec![Some(a.clone())])
    }
}

/// SET and ACC write b into a window of a given by strides and an offset: the window
/// must stay inside a (ggml trusts the caller; weft checks, so no kernel can write past a).
fn check_window(what: &str, a: &Tensor, b: &Tensor, nb123: [usize; 3], offset: usize) -> Result<()> {
    if b.is_empty() {
        return Ok(());
    }
    let ne = b.ne();
    let nb = [a.element_size(), nb123[0], nb123[1], nb123[2]];
    let span = crate::tensor::span_bytes(a.ty(), &ne, &nb);
    match span.and_then(|s| s.checked_add(offset)) {
        Some(end) if end <= a.nbytes() => Ok(()),
        _ => Err(Error::invalid(format!(
            "{what}: b {} written at offset {} with strides {:?} reaches past the end of a ({} bytes)",
            fmt_shape(&ne),
            offset,
            nb123,
            a.nbytes()
        ))),
    }
}
