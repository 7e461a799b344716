// The JS API: construction, shapes and strides, the type and op tables, and the errors
// wrong input gets (message names the op and the condition; nothing crashes).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { weft, throwsWith } from './helpers.ts'
import type { GgmlType } from '../index.js'

const { Context } = weft

test('type table follows ggml', () => {
  const types = weft.typeTraits()
  assert.equal(types.length, 34)
  const byName = new Map(types.map((t) => [t.name, t]))
  // Worked from ggml-common.h: block_q4_K = 2 f16 + 12 scale bytes + 128 nibble bytes.
  assert.deepEqual(byName.get('q4_K'), { name: 'q4_K', id: 12, blckSize: 256, typeSize: 144, isQuantized: true })
  assert.deepEqual(byName.get('bf16'), { name: 'bf16', id: 30, blckSize: 1, typeSize: 2, isQuantized: false })
  // Every engine type is accepted by the JS enum: a tensor of one block of each.
  const ctx = new Context({ memSize: 1 << 20, noAlloc: true })
  for (const t of types) {
    const x = ctx.newTensor1d(t.name as GgmlType, t.blckSize)
    assert.equal(x.type, t.name)
    assert.equal(x.nbytes, t.typeSize)
  }
})

test('op table lists ggml ops in ggml order', () => {
  const ops = weft.opNames()
  assert.equal(ops[0], 'NONE')
  assert.ok(ops.indexOf('MUL_MAT') < ops.indexOf('MUL_MAT_ID'))
  assert.ok(ops.includes('FLASH_ATTN_EXT') && ops.includes('OPT_STEP_ADAMW'))
  assert.equal(new Set(ops).size, ops.length)
})

test('shapes, strides, views and names', () => {
  const ctx = new Context({ memSize: 1 << 20, noAlloc: true })
  const a = ctx.newTensor3d('f32', 4, 3, 2)
  assert.deepEqual(a.ne, [4, 3, 2, 1])
  assert.deepEqual(a.shape, [4, 3, 2])
  assert.deepEqual(a.nb, [4, 16, 48, 96])
  assert.equal(a.nbytes, 96)
  assert.equal(a.nelements, 24)
  assert.equal(a.nrows, 6)
  assert.ok(a.isContiguous())
  const t = ctx.transpose(a)
  assert.deepEqual(t.ne, [3, 4, 2, 1])
  assert.deepEqual(t.nb, [16, 4, 48, 96])
  assert.ok(t.isTransposed() && !t.isContiguous() && t.isView())
  assert.ok(t.viewSrc!.equals(a))
  const p = ctx.permute(a, 2, 0, 1, 3)
  assert.deepEqual(p.ne, [3, 2, 4, 1])
  const v = ctx.view2d(a, 2, 3, 16, 8)
  assert.deepEqual(v.nb.slice(0, 2), [4, 16])
  assert.equal(v.viewOffs, 8)
  a.name = 'x'.repeat(100)
  assert.equal(a.name.length, 63) // ggml's GGML_MAX_NAME
  const q = ctx.newTensor2d('q4_0', 64, 2)
  assert.deepEqual(q.nb, [18, 36, 72, 72])
  const sum = ctx.add(a, ctx.newTensor1d('f32', 4))
  assert.equal(sum.op, 'ADD')
  assert.equal(sum.src(0)!.id, a.id)
  assert.equal(ctx.gelu(a).opDesc, 'GELU')
})

test('graphs order nodes sources first and name them like ggml', () => {
  const ctx = new Context({ memSize: 1 << 20, noAlloc: true })
  const a = ctx.newTensor1d('f32', 4)
  const b = ctx.newTensor1d('f32', 4)
  const ab = ctx.add(a, b)
  const out = ctx.mul(ab, ctx.sqr(a))
  const g = ctx.newGraph()
  g.buildForwardExpand(out)
  assert.equal(g.nNodes, 3)
  assert.equal(g.nLeafs, 2)
  assert.deepEqual(g.nodes().map((n) => n.op), ['ADD', 'SQR', 'MUL'])
  assert.equal(g.node(-1)!.name, 'node_2')
  assert.equal(g.leafs()[0].name, 'leaf_0')
  assert.equal(g.size, 2048)
  assert.equal(g.view(1, 3).nNodes, 2)
})

test('wrong shapes and types are Errors naming the op and the condition', () => {
  const ctx = new Context({ memSize: 1 << 20, noAlloc: true })
  const a4 = ctx.newTensor2d('f32', 4, 3)
  const b5 = ctx.newTensor2d('f32', 5, 3)
  throwsWith(() => ctx.mulMat(a4, b5), 'WEFT_INVALID_ARGUMENT', 'mulMat: a.ne[0]=4 must equal b.ne[0]=5')
  throwsWith(() => ctx.add(a4, b5), 'WEFT_INVALID_ARGUMENT', 'add:', 'must repeat to a')
  throwsWith(() => ctx.getRows(a4, ctx.newTensor1d('f32', 2)), 'WEFT_INVALID_ARGUMENT', 'getRows: b.type=f32 must be i32')
  throwsWith(() => ctx.reshape2d(a4, 5, 5), 'WEFT_INVALID_ARGUMENT', 'reshape2d', 'must hold')
  throwsWith(() => ctx.reshape1d(ctx.transpose(a4), 12), 'WEFT_INVALID_ARGUMENT', 'reshape1d: a must be contiguous')
  throwsWith(() => ctx.permute(a4, 0, 0, 1, 2), 'WEFT_INVALID_ARGUMENT', 'permute: axis0 and axis1 are both 0')
  throwsWith(() => ctx.view1d(a4, 13, 0), 'WEFT_INVALID_ARGUMENT', 'view1d', 'does not fit')
  throwsWith(() => ctx.view1d(a4, 2, -4), 'WEFT_INVALID_ARGUMENT', 'view1d: offset=-4')
  throwsWith(() => ctx.newTensor1d('q4_0', 33), 'WEFT_INVALID_ARGUMENT', "block size 32")
  throwsWith(() => ctx.newTensor('f32', [1, 2, 3, 4, 5]), 'WEFT_INVALID_ARGUMENT', '5 dims given')
  throwsWith(() => ctx.softMaxExt(a4, b5, 1, 0), 'WEFT_INVALID_ARGUMENT', 'softMaxExt: mask.ne[0]=5 must equal a.ne[0]=4')
  throwsWith(() => ctx.softMaxExt(a4, null, 1, 8), 'WEFT_INVALID_ARGUMENT', 'needs a mask')
  throwsWith(() => ctx.newTensor1d('f32', 4).setLoss(), 'WEFT_INVALID_ARGUMENT', 'setLoss', 'scalar')
  // A bad enum value is refused by the binding before it reaches the engine.
  assert.throws(() => ctx.newTensor1d('q9' as any, 4), /GgmlType/)
  assert.throws(() => (ctx as any).mulMat(a4), Error)
  assert.throws(() => (ctx as any).mulMat(1, 2), Error)
})

test('running out of context memory is an Error, not an abort', () => {
  const ctx = new Context({ memSize: Context.tensorOverhead() * 2, noAlloc: true })
  ctx.newTensor1d('f32', 1)
  ctx.newTensor1d('f32', 1)
  throwsWith(() => ctx.newTensor1d('f32', 1), 'WEFT_OUT_OF_MEMORY', "not enough space in the context's memory pool")
  const big = new Context({ memSize: 1024, noAlloc: false })
  throwsWith(() => big.newTensor1d('f32', 1 << 20), 'WEFT_OUT_OF_MEMORY', 'not enough space')
  const g = new Context({ memSize: 1024, noAlloc: true })
  throwsWith(() => g.newGraph(), 'WEFT_OUT_OF_MEMORY', 'newGraph')
  assert.equal(Context.graphOverhead(), 66192) // ggml_graph_overhead() on 64-bit hosts
})

test('disposed objects refuse further use', () => {
  const ctx = new Context({ memSize: 1 << 20, noAlloc: false })
  const a = ctx.newTensor1d('f32', 4)
  const b = ctx.newTensor1d('f32', 4)
  a.fromFloat32(new Float32Array([1, 2, 3, 4]))
  a.dispose()
  assert.ok(a.disposed)
  throwsWith(() => a.ne, 'WEFT_INVALID_ARGUMENT', 'Tensor has been disposed')
  throwsWith(() => ctx.add(a, b), 'WEFT_INVALID_ARGUMENT', 'Tensor has been disposed')
  // Freeing the context frees the memory its tensors live in: their data is gone.
  ctx.dispose()
  throwsWith(() => b.toFloat32(), 'WEFT_INVALID_ARGUMENT', 'released')
  throwsWith(() => ctx.newTensor1d('f32', 1), 'WEFT_INVALID_ARGUMENT', 'Context has been disposed')
  const g = new Context({ memSize: 1 << 20, noAlloc: true }).newGraph()
  g.dispose()
  throwsWith(() => g.nNodes, 'WEFT_INVALID_ARGUMENT', 'Graph has been disposed')
  // Symbol.dispose works with `using`-style cleanup.
  const c2 = new Context({ memSize: 1 << 16 })
  c2[Symbol.dispose]()
  throwsWith(() => c2.usedMem, 'WEFT_INVALID_ARGUMENT', 'Context has been disposed')
})

test('data in and out: bytes, f32 conversion, strides, bounds', () => {
  const ctx = new Context({ memSize: 1 << 20, noAlloc: false })
  const h = ctx.newTensor2d('f16', 3, 2)
  h.fromFloat32(new Float32Array([1, 2, 3, 4, 5, 65504]))
  assert.deepEqual(Array.from(h.toFloat32()), [1, 2, 3, 4, 5, 65504])
  // f16 bits of 1.0 are 0x3c00, little-endian.
  assert.deepEqual(Array.from(h.get(0, 2)), [0x00, 0x3c])
  // A transposed view reads in its own logical order.
  assert.deepEqual(Array.from(ctx.transpose(h).toFloat32()), [1, 4, 2, 5, 3, 65504])
  const i = ctx.newTensor1d('i32', 3)
  i.set(new Int32Array([7, -1, 16777217]))
  assert.deepEqual(Array.from(new Int32Array(i.get().buffer)), [7, -1, 16777217])
  throwsWith(() => i.set(new Int32Array(4)), 'WEFT_INVALID_ARGUMENT', 'outside tensor')
  throwsWith(() => i.get(8, 8), 'WEFT_INVALID_ARGUMENT', 'outside tensor')
  throwsWith(() => h.fromFloat32(new Float32Array(5)), 'WEFT_INVALID_ARGUMENT', 'has 6 elements, got 5')
  const un = new Context({ memSize: 1 << 16, noAlloc: true }).newTensor1d('f32', 2)
  throwsWith(() => un.toFloat32(), 'WEFT_INVALID_ARGUMENT', 'not allocated')
})
