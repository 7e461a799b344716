// Autodiff through the binding: gradients of a small graph against values worked by hand,
// graph reset, accumulation, the AdamW step, and the errors wrong use gets.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { weft, backendNames, randomFloats, throwsWith } from './helpers.ts'
import type { Backend, Context as ContextT, Graph, Tensor } from '../index.js'

const { Context } = weft

interface Small {
  ctx: ContextT
  w: Tensor
  x: Tensor
  y: Tensor
  loss: Tensor
  gf: Graph
  gb: Graph
}

// loss = sum((w x)^2) with w [2 in, 2 out] and x [2]: y_i = sum_k w[k,i] x[k],
// dL/dw[k,i] = 2 y_i x[k], dL/dx[k] = sum_i 2 y_i w[k,i].
function small(accumulate = false): Small {
  const ctx = new Context({ memSize: 1 << 20, noAlloc: true })
  const w = ctx.newTensor2d('f32', 2, 2)
  const x = ctx.newTensor2d('f32', 2, 1)
  w.setParam()
  x.setParam()
  const y = ctx.mulMat(w, x)
  const loss = ctx.sum(ctx.sqr(y))
  loss.setLoss()
  const gf = ctx.newGraphCustom(64, true)
  gf.buildForwardExpand(loss)
  const gb = ctx.graphDup(gf)
  ctx.buildBackwardExpand(gf, gb, accumulate)
  return { ctx, w, x, y, loss, gf, gb }
}

const W = new Float32Array([1, 2, 3, 4]) // w[0,0]=1 w[1,0]=2 w[0,1]=3 w[1,1]=4
const X = new Float32Array([1, -1])
// y = [1 - 2, 3 - 4] = [-1, -1]; loss = 2
const DW = [-2, 2, -2, 2] // 2 y_i x_k
const DX = [-8, -12] // 2(-1)(1) + 2(-1)(3), 2(-1)(2) + 2(-1)(4)

/** Give s's tensors CPU memory, load W and X and reset gb: ready to compute. */
function ready(s: Small): Backend {
  const cpu = weft.Backend.init('CPU')
  cpu.allocCtxTensors(s.ctx)
  s.w.fromFloat32(W)
  s.x.fromFloat32(X)
  s.gb.reset()
  return cpu
}

test('gradients of a small graph, worked by hand', async () => {
  const s = small()
  assert.ok(s.w.grad !== null && s.x.grad !== null)
  assert.ok(s.gb.nNodes > s.gf.nNodes)
  assert.notEqual(s.w.grad!.op, 'NONE')
  assert.ok(s.gb.hasGrads)
  const cpu = ready(s)
  await cpu.compute(s.gf)
  await cpu.compute(s.gb)
  assert.deepEqual(Array.from(s.loss.toFloat32()), [2])
  assert.deepEqual(Array.from(s.w.grad!.toFloat32()), DW)
  assert.deepEqual(Array.from(s.x.grad!.toFloat32()), DX)
  // The gradient of y is 2y, of the loss 1.
  assert.deepEqual(Array.from(s.y.grad!.toFloat32()), [-2, -2])
  assert.deepEqual(Array.from(s.loss.grad!.toFloat32()), [1])
})

test('no gradients before buildBackwardExpand', () => {
  const ctx = new Context({ memSize: 1 << 20, noAlloc: true })
  const a = ctx.newTensor1d('f32', 3)
  a.setParam()
  assert.equal(a.grad, null)
  assert.equal(a.flags & 4, 4)
})

test('reset: loss gradient 1, every other gradient 0', async () => {
  const s = small()
  const cpu = ready(s)
  // Fill everything with garbage, gradients and their placeholders included.
  s.ctx.tensors().forEach((t, i) => {
    if (!t.isView() && t.type === 'f32') t.fromFloat32(randomFloats(t.nelements, i + 1))
  })
  s.gb.reset()
  for (const n of s.gb.nodes()) {
    const g = n.grad
    if (!g) continue
    const want = n.equals(s.loss) ? 1 : 0
    assert.ok(g.toFloat32().every((v) => v === want), `gradient of ${n.name}`)
  }
  // And the computed gradients are right whatever was there before.
  s.w.fromFloat32(W)
  s.x.fromFloat32(X)
  await cpu.compute(s.gb)
  assert.deepEqual(Array.from(s.w.grad!.toFloat32()), DW)
})

test('reset works on every backend\'s buffers', async () => {
  for (const name of backendNames()) {
    const s = small(true)
    const backend = weft.Backend.init(name)
    backend.allocCtxTensors(s.ctx)
    s.ctx.tensors().forEach((t, i) => {
      if (!t.isView() && t.type === 'f32') t.fromFloat32(randomFloats(t.nelements, i + 7))
    })
    s.gb.reset()
    for (const n of s.gb.nodes()) {
      const want = n.equals(s.loss) ? 1 : 0
      if (n.grad) assert.ok(n.grad.toFloat32().every((v) => v === want), `${name}: gradient of ${n.name}`)
    }
    // Where the backend has every kernel, the gradients come out as on the CPU.
    if (s.gb.nodes().every((n) => backend.supportsOp(n))) {
      s.w.fromFloat32(W)
      s.x.fromFloat32(X)
      await backend.compute(s.gb)
      assert.deepEqual(Array.from(s.w.grad!.toFloat32()), DW, name)
    }
  }
})

test('accumulate: gradients add up over computes until reset', async () => {
  const s = small(true)
  const cpu = ready(s)
  await cpu.compute(s.gb)
  await cpu.compute(s.gb)
  assert.deepEqual(Array.from(s.w.grad!.toFloat32()), DW.map((v) => 2 * v))
  assert.deepEqual(Array.from(s.x.grad!.toFloat32()), DX.map((v) => 2 * v))
  s.gb.reset()
  assert.deepEqual(Array.from(s.w.grad!.toFloat32()), [0, 0, 0, 0])
  await cpu.compute(s.gb)
  assert.deepEqual(Array.from(s.w.grad!.toFloat32()), DW)
})

test('buildOptAdamw: one step moves every parameter by alpha against its gradient', async () => {
  const s = small()
  const before = s.gb.nNodes
  s.ctx.buildOptAdamw(s.gf, s.gb, { alpha: 0.5, beta1: 0.9, beta2: 0.999, eps: 1e-8, wd: 0 })
  assert.equal(s.gb.nNodes, before + 2)
  assert.equal(s.gb.node(-1)!.op, 'OPT_STEP_ADAMW')
  const cpu = ready(s)
  await cpu.compute(s.gb)
  // First step: bias-corrected moments are g and g^2, so the step is alpha * sign(g).
  const moved = Array.from(W, (v, i) => v - 0.5 * Math.sign(DW[i]!))
  const close = (got: Float32Array, want: number[]) =>
    assert.ok(want.every((v, i) => Math.abs(got[i]! - v) < 1e-6), `${Array.from(got)} != ${want}`)
  close(s.w.toFloat32(), moved)
  close(s.x.toFloat32(), [1 + 0.5, -1 + 0.5])
})

test('the backward nodes may go into the forward graph itself', async () => {
  const ctx = new Context({ memSize: 1 << 20, noAlloc: true })
  const a = ctx.newTensor1d('f32', 2)
  a.setParam()
  const loss = ctx.sum(ctx.sqr(a))
  loss.setLoss()
  const g = ctx.newGraphCustom(64, true)
  g.buildForwardExpand(loss)
  const n = g.nNodes
  ctx.buildBackwardExpand(g, g, false)
  assert.ok(g.nNodes > n)
  const cpu = weft.Backend.init('CPU')
  cpu.allocCtxTensors(ctx)
  a.fromFloat32(new Float32Array([3, -1]))
  g.reset()
  await cpu.compute(g)
  assert.deepEqual(Array.from(a.grad!.toFloat32()), [6, -2])
})

test('graphDup and cpy keep the grads setting', () => {
  const s = small()
  const d = s.ctx.graphDup(s.gb)
  assert.ok(d.hasGrads)
  assert.equal(d.nNodes, s.gb.nNodes)
  assert.ok(d.nodes().every((n, i) => n.equals(s.gb.node(i)!)))
  const plain = s.ctx.newGraph()
  assert.equal(plain.hasGrads, false)
  throwsWith(() => s.gb.cpy(plain), 'WEFT_INVALID_ARGUMENT', 'gradients')
  const big = s.ctx.newGraphCustom(2048, true)
  s.gb.cpy(big)
  assert.equal(big.nNodes, s.gb.nNodes)
})

test('wrong use is an Error with a code and a reason', async () => {
  const ctx = new Context({ memSize: 1 << 20, noAlloc: true })
  const a = ctx.newTensor1d('f32', 4)
  const loss = ctx.sum(ctx.sqr(a))
  const gf = ctx.newGraphCustom(64, true)
  gf.buildForwardExpand(loss)
  const gb = ctx.graphDup(gf)
  throwsWith(() => ctx.buildBackwardExpand(gf, gb, false), 'WEFT_INVALID_ARGUMENT', 'no parameter')
  throwsWith(() => ctx.buildOptAdamw(gf, gb, { alpha: 1e-3, beta1: 0.9, beta2: 0.999, eps: 1e-8, wd: 0 }),
    'WEFT_INVALID_ARGUMENT', 'no parameter')
  throwsWith(() => a.setLoss(), 'WEFT_INVALID_ARGUMENT', 'setLoss', 'must be a scalar f32')

  // Parameters are marked before the forward graph is built (a leaf stays a leaf).
  a.setParam()
  throwsWith(() => ctx.buildBackwardExpand(gf, gb, false), 'WEFT_INVALID_ARGUMENT', 'no parameter', 'after buildForwardExpand')
  const plain = ctx.newGraph()
  plain.buildForwardExpand(loss)
  throwsWith(() => ctx.buildBackwardExpand(plain, gb, false), 'WEFT_INVALID_ARGUMENT', 'without grads')
  throwsWith(() => plain.reset(), 'WEFT_INVALID_ARGUMENT', 'without grads')

  // A backward graph whose gradients have no memory yet.
  const gf1 = ctx.newGraphCustom(64, true)
  gf1.buildForwardExpand(loss)
  const gb1 = ctx.graphDup(gf1)
  ctx.buildBackwardExpand(gf1, gb1, false)
  throwsWith(() => gb1.reset(), 'WEFT_INVALID_ARGUMENT', 'not allocated')

  // In-place ops overwrite what the backward pass needs.
  const b = ctx.newTensor1d('f32', 4)
  b.setParam()
  const g2 = ctx.newGraphCustom(64, true)
  g2.buildForwardExpand(ctx.sum(ctx.sqrInplace(ctx.scale(b, 2))))
  throwsWith(() => ctx.buildBackwardExpand(g2, ctx.graphDup(g2), false), 'WEFT_INVALID_ARGUMENT', 'in place')

  // An op without a backward rule.
  const c = ctx.newTensor2d('f32', 2, 2)
  c.setParam()
  const g3 = ctx.newGraphCustom(64, true)
  g3.buildForwardExpand(ctx.sum(ctx.upscale(c, 2)))
  throwsWith(() => ctx.buildBackwardExpand(g3, ctx.graphDup(g3), false), 'WEFT_NOT_IMPLEMENTED', 'UPSCALE has no backward rule')
  assert.equal(c.grad, null, 'a failed expand leaves no gradients behind')

  // Graphs disposed are refused, not crashed on.
  const g4 = ctx.newGraphCustom(64, true)
  g4.dispose()
  throwsWith(() => ctx.buildBackwardExpand(g4, gb, false), 'WEFT_INVALID_ARGUMENT', 'disposed')
})
