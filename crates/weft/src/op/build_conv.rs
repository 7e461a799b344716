//! Constructors of convolution and pooling ops, and ggml's convolutions composed from
//! im2col + mul_mat.

use super::build_basic::Out;
use crate::context::Context;
use crate::op::{Im2colParams, Op, Pool2dParams, PoolOp};
use crate::tensor::{fmt_shape, Tensor};
use crate::types::Type;
use crate::{ensure, Result};

fn conv_output_size(ins: i64, ks: i64, s: i32, p: i32, d: i32) -> i64 {
    (ins + 2 * p as i64 - d as i64 * (ks - 1) - 1) / s as i64 + 1
}

fn pool_output_size(ins: i64, ks: i32, s: i32, p: f32) -> i64 {
    ((ins as f32 + 2.0 * p - ks as f32) / s as f32 + 1.0) as i64
}

impl Context {
    /// ggml_conv_transpose_1d (stride s0; ggml supports p0 = 0 and d0 = 1 only).
    pub fn conv_transpose_1d(&self, a: &Tensor, b: &Tensor, s0: i32, p0: i32, d0: i32) -> Result<Tensor> {
        let what = "convTranspose1d";
        ensure!(b.is_matrix(), "{what}: b must be a matrix, got {}", fmt_shape(&b.ne()));
        ensure!(a.ne()[2] == b.ne()[1], "{what}: a.ne[2]={} must equal b.ne[1]={}", a.ne()[2], b.ne()[1]);
        ensure!(a.ne()[3] == 1, "{what}: a.ne[3]={} must be 1", a.ne()[3]);
        ensure!(p0 == 0, "{what}: p0={p0} must be 0");
        ensure!(d0 == 1, "{what}: d0={d0} must be 1");
        ensure!(s0 > 0, "{what}: s0={s0} must be positive");
        let len = (b.ne()[0] - 1) * s0 as i64 + (a.ne()[0] - 1) + 1;
        let ne = [len, a.ne()[1], b.ne()[2], 1];
        self.op_node(
            what,
            Out::New(Type::F32, ne),
            Op::ConvTranspose1d { s0, p0, d0 },
            vec![Some(a.clone()), Some(b.clone())],
        )
    }

    /// ggml_im2col: unfold b's patches for a conv with kernel a, into `dst_type`.
    pub fn im2col(&self, a: &Tensor, b: &Tensor, p: Im2colParams, dst_type: Type) -> Result<Tensor> {
        let what = "im2col";
        ensure!(p.s0 > 0 && (!p.is_2d || p.s1 > 0), "{what}: strides s0={} s1={} must be positive", p.s0, p.s1);
        ensure!(p.d0 > 0 && (!p.is_2d || p.d1 > 0), "{what}: dilations d0={} d1={} must be positive", p.d0, p.d1);
        ensure!(dst_type == Type::F32 || dst_type == Type::F16, "{what}: dstType={dst_type} must be f32 or f16");
        let (an, bn) = (a.ne(), b.ne());
        if p.is_2d {
            ensure!(an[2] == bn[2], "{what}: a.ne[2]={} must equal b.ne[2]={} (channels)", an[2], bn[2]);
        } else {
            ensure!(an[1] == bn[1], "{what}: a.ne[1]={} must equal b.ne[1]={} (channels)", an[1], bn[1]);
            ensure!(bn[3] == 1, "{what}: b.ne[3]={} must be 1 for 1-D", bn[3]);
        }
        let oh = if p.is_2d { conv_output_size(bn[1], an[1], p.s1, p.p1, p.d1) } else { 0 };
        let ow = conv_output_size(bn[0], an[0], p.s0, p.p0, p.d0);
        ensure!(!p.is_2d || oh > 0, "{what}: b too small compared to a (output height {oh})");
        ensure!(ow > 0, "{what}: b too small compared to a (output width {ow})");
        let ne = if p.is_2d { [an[2] * an[1] * an[0], ow, oh, bn[3]] } else { [an[1] * an[0], ow, bn[2], 1] };
        self.op_node(what, Out::New(dst_type, ne), Op::Im2col { p }, vec![Some(a.clone()), Some(b.clone())])
    }

    /// ggml_im2col_back: fold gradients b back to an input of shape `ne`.
    pub fn im2col_back(&self, a: &Tensor, b: &Tensor, ne: [i64; 4], p: Im2colParams) -> Result<Tensor> {
        ensure!(ne.iter().all(|&n| n >= 0), "im2colBack: shape {} must not be negative", fmt_shape(&ne));
        self.op_node(
            "im2colBack",
            Out::New(Type::F32, ne),
            Op::Im2colBack { p },
            vec![Some(a.clone()), Some(b.clone())],
        )
    }

    /// ggml_conv_1d: im2col then mul_mat.
    pub fn conv_1d(&self, a: &Tensor, b: &Tensor, s0: i32, p0: i32, d0: i32) -> Result<Tensor> {
        let p = Im2colParams { s0, s1: 0, p0, p1: 0, d0, d1: 0, is_2d: false };
        let im2col = self.im2col(a, b, p, Type::F16)?;
        let ine = im2col.ne();
        let lhs = self.reshape_2d(&im2col, ine[0], ine[2] * ine[1])?;
        let rhs = self.reshape_2d(a, a.ne()[0] * a.ne()[1], a.ne()[2])?;
        let r = self.mul_mat(&lhs, &rhs)?;
        self.reshape_3d(&r, ine[1], a.ne()[2], ine[2])
    }

    /// ggml_conv_1d_ph: conv_1d with half padding.
    pub fn conv_1d_ph(&self, a: &Tensor, b: &Tensor, s: i32, d: i32) -> Result<Tensor> {
        self.conv_1d(a, b, s, (a.ne()[0] / 2) as i32, d)
    }

    /// ggml_conv_2d: im2col then mul_mat, result [W, H, OC, N].
    #[allow(clippy::too_many_arguments)]
    pub fn conv_2d(
        &self,
        a: &Tensor,
        b: &Tensor,
        s0: i32,
        s1: i32,
        p0: i32,
        p1: i32,
        d0: i32,
        d1: i32,
    ) -> Result<Tensor> {
        let p = Im2colParams { s0, s1, p0, p1, d0, d1, is_2d: true };
        let im2col = self.im2col(a, b, p, a.ty())?;
        let ine = im2col.ne();
        let lhs = self.reshape_2d(&im2col, ine[0], ine[3] * ine[2] * ine[1])?;
        let rhs = self.reshape_2d(a, a.ne()[0] * a.ne()[1] * a.ne()[2], a.ne()[3])?;
        let r = self.mul_mat(&lhs, &rhs)?;
        let r = self.reshape_4d(&r, ine[1], ine[2], ine[3], a.ne()[3])?;
        let r = self.permute(&r, [0, 1, 3, 2])?;
        self.cont(&r)
    }

    /// ggml_conv_2d_sk_p0: stride = kernel size, no padding.
    pub fn conv_2d_sk_p0(&self, a: &Tensor, b: &Tensor) -> Result<Tensor> {
        self.conv_2d(a, b, a.ne()[0] as i32, a.ne()[1] as i32, 0, 0, 1, 1)
    }

    /// ggml_conv_2d_s1_ph: stride 1, half padding.
    pub fn conv_2d_s1_ph(&self, a: &Tensor, b: &Tensor) -> Result<Tensor> {
        self.conv_2d(a, b, 1, 1, (a.ne()[0] / 2) as i32, (a.ne()[1] / 2) as i32, 1, 1)
    }

    /// ggml_conv_depthwise_2d.
    #[allow(clippy::too_many_arguments)]
    pub fn conv_depthwise_2d(
        &self,
        a: &Tensor,
        b: &Tensor,
        s0: i32,
        s1: i32,
        p0: i32,
        p1: i32,
        d0: i32,
        d1: i32,
    ) -> Result<Tensor> {
        let (an, bn) = (a.ne(), b.ne());
        let new_a = self.reshape_4d(a, an[0], an[1], 1, an[2] * an[3])?;
        let new_b = self.reshape_4d(b, bn[0], bn[1], 1, bn[2] * bn[3])?;
        let p = Im2colParams { s0, s1, p0, p1, d0, d1, is_2d: true };
        let im2col = self.im2col(&new_a, &new_b, p, Type::F16)?;
        let ine = im2col.ne();
        let new_b = self.reshape_4d(&im2col, ine[0], ine[2] * ine[1], bn[2], bn[3])?;
        let nan = new_a.ne();
        let new_a = self.reshape_4d(&new_a, nan[0] * nan[1], nan[2], nan[3], 1)?;
        let r = self.mul_mat(&new_a, &new_b)?;
        self.reshape_4d(&r, ine[1], ine[2], bn[2], bn[3])
    }

    /// ggml_conv_transpose_2d_p0.
    pub fn conv_transpose_2d_p0(&self, a: &Tensor, b: &Tensor, stride: i32) -> Result<Tensor> {
        let what = "convTranspose2dP0";
        ensure!(a.ne()[3] == b.ne()[2], "{what}: a.ne[3]={} must equal b.ne[2]={}", a.ne()[3], b.ne()[2]);
        ensure!(stride > 0, "{what}: stride={stride} must be positive");
        let out = |ins: i64, ks: i64| (ins - 1) * stride as i64 + ks;
        let ne = [out(b.ne()[0], a.ne()[0]), out(b.ne()[1], a.ne()[1]), a.ne()[2], b.ne()[3]];
        self.op_node(
            what,
            Out::New(Type::F32, ne),
            Op::ConvTranspose2d { stride },
            vec![Some(a.clone()), Some(b.clone())],
        )
    }

    /// ggml_pool_1d.
    pub fn pool_1d(&self, a: &Tensor, op: PoolOp, k0: i32, s0: i32, p0: i32) -> Result<Tensor> {
        ensure!(k0 > 0 && s0 > 0, "pool1d: k0={k0} and s0={s0} must be positive");
        let ne = [pool_output_size(a.ne()[0], k0, s0, p0 as f32), a.ne()[1], a.ne()[2], a.ne()[3]];
        ensure!(ne[0] > 0, "pool1d: output width {} must be positive", ne[0]);
        self.op_node("pool1d", Out::New(Type::F32, ne), Op::Pool1d { op, k0, s0, p0 }, vec![Some(a.clone())])
    }

    /// ggml_pool_2d: the result has room for 2*p padding on each side.
    #[allow(clippy::too_many_arguments)]
    pub fn pool_2d(
        &self,
        a: &Tensor,
        op: PoolOp,
        k0: i32,
        k1: i32,
        s0: i32,
        s1: i32,
        p0: f32,
        p1: f32,
    ) -> Result<Tensor> {
        ensure!(k0 > 0 && k1 > 0 && s0 > 0 && s1 > 0, "pool2d: kernel {k0}x{k1} and stride {s0}x{s1} must be positive");
        let ne =
            [pool_output_size(a.ne()[0], k0, s0, p0), pool_output_size(a.ne()[1], k1, s1, p1), a.ne()[2], a.ne()[3]];
        ensure!(ne[0] > 0 && ne[1] > 0, "pool2d: output {}x{} must not be empty", ne[0], ne[1]);
        let p = Pool2dParams { op, k0, k1, s0, s1, p0: p0 as i32, p1: p1 as i32 };
        self.op_node("pool2d", Out::New(Type::F32, ne), Op::Pool2d { p }, vec![Some(a.clone())])
    }

    /// ggml_pool_2d_back: a = gradient of the pool output, af = the pool's input.
    #[allow(clippy::too_many_arguments)]
    pub fn pool_2d_back(
        &self,
        a: &Tensor,
        af: &Tensor,
        op: PoolOp,
        k0: i32,
        k1: i32,
        s0: i32,
        s1: i32,
        p0: f32,
        p1: f32,
    ) -> Result<Tensor> {
        ensure!(
            k0 > 0 && k1 > 0 && s0 > 0 && s1 > 0,
            "pool2dBack: kernel {k0}x{k1} and stride {s0}x{s1} must be positive"
        );
        let p = Pool2dParams { op, k0, k1, s0, s1, p0: p0 as i32, p1: p1 as i32 };
        self.op_node(
            "pool2dBack",
            Out::New(Type::F32, af.ne()),
            Op::Pool2dBack { p },
            vec![Some(a.clone()), Some(af.clone())],
        )
    }
}
