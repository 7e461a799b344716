// What a user sees of the API: tensors that print themselves (util.inspect), typed reads of
// integer tensors, Symbol.dispose on every class that holds native memory, the enum objects
// index.js exports as values, and index.d.ts's doc comments.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { inspect } from 'node:util'
import { weft, throwsWith } from './helpers.ts'

const { Backend, Context, GraphAllocator, GgufWriter } = weft

test('console.log(tensor) shows name, type, shape, op, buffer and the values of small host tensors', async () => {
  const ctx = new Context({ memSize: 1 << 20, noAlloc: true })
  const a = ctx.newTensor2d('f32', 3, 2)
  a.name = 'a'
  const idx = ctx.newTensor1d('i32', 3)
  const big = ctx.newTensor1d('f32', 2000)
  const sq = ctx.sqr(a)
  const gelu = ctx.gelu(a)
  assert.equal(inspect(a), "Tensor { name: 'a', type: 'f32', shape: [ 3, 2 ], op: 'NONE', buffer: null }")
  const cpu = Backend.init('CPU')
  cpu.allocCtxTensors(ctx)
  a.fromFloat32(new Float32Array([1, 2, 3, 4, 5, 6]))
  idx.set(new Int32Array([7, -1, 0]))
  assert.equal(
    inspect(a),
    "Tensor {\n  name: 'a',\n  type: 'f32',\n  shape: [ 3, 2 ],\n  op: 'NONE',\n  buffer: 'CPU',\n  values: Float32Array(6) [ 1, 2, 3, 4, 5, 6 ]\n}",
  )
  assert.match(inspect(idx), /type: 'i32'.*values: Int32Array\(3\) \[ 7, -1, 0 \]/s)
  assert.match(inspect(sq), /op: 'SQR'/)
  assert.match(inspect(gelu), /op: 'GELU'/) // ggml_op_desc: the unary op's name
  assert.doesNotMatch(inspect(big), /values/) // too large to print
  assert.match(inspect(big), /shape: \[ 2000 \]/)
  // while a compute holds the buffer, printing leaves the values out instead of throwing
  const g = ctx.newGraph()
  g.buildForwardExpand(sq)
  const running = cpu.compute(g)
  assert.doesNotMatch(inspect(a), /values/)
  await running
  assert.match(inspect(sq), /values: Float32Array\(6\) \[ 1, 4, 9, 16, 25, 36 \]/)
  // colors and depth come from the caller's options, as for any object
  assert.match(inspect(a, { colors: true }), /\u001b\[32m'a'\u001b\[39m/)
  a.dispose()
  assert.equal(inspect(a), 'Tensor(disposed)')
})

test('toInt32 and toBigInt64 read integer tensors in logical order', async () => {
  const ctx = new Context({ memSize: 1 << 20, noAlloc: true })
  const m = ctx.newTensor2d('f32', 3, 2) // rows [1, 5, 2] and [7, 0, 3]
  const am = ctx.argmax(m)
  const as = ctx.argsort(m, 'desc')
  const ce = ctx.countEqual(am, am)
  const i32 = ctx.newTensor2d('i32', 3, 2)
  const tr = ctx.transpose(i32)
  const i16 = ctx.newTensor1d('i16', 3)
  const g = ctx.newGraph()
  g.buildForwardExpand(as)
  g.buildForwardExpand(ce)
  const cpu = Backend.init('CPU')
  cpu.allocCtxTensors(ctx)
  m.fromFloat32(new Float32Array([1, 5, 2, 7, 0, 3]))
  i32.set(new Int32Array([0, 1, 2, 3, 4, 5]))
  i16.set(new Int16Array([-3, 0, 32767]))
  await cpu.compute(g)
  // worked by hand: the index of each row's maximum, each row's order from largest down
  assert.deepEqual(Array.from(am.toInt32()), [1, 0])
  assert.deepEqual(Array.from(as.toInt32()), [1, 2, 0, 0, 2, 1])
  assert.equal(ce.type, 'i64')
  assert.deepEqual(Array.from(ce.toBigInt64()), [2n])
  // a transposed view: element (i0, i1) of the view is element (i1, i0) of i32
  assert.deepEqual(Array.from(tr.toInt32()), [0, 3, 1, 4, 2, 5])
  assert.deepEqual(Array.from(i16.toInt32()), [-3, 0, 32767])
  assert.deepEqual(Array.from(i16.toBigInt64()), [-3n, 0n, 32767n])
  throwsWith(() => m.toInt32(), 'WEFT_INVALID_ARGUMENT', 'toInt32', "is f32", 'i8, i16, i32')
  throwsWith(() => ce.toInt32(), 'WEFT_INVALID_ARGUMENT', 'toInt32', 'is i64')
  throwsWith(() => m.toBigInt64(), 'WEFT_INVALID_ARGUMENT', 'toBigInt64')
})

test('GraphAllocator and GgufWriter have Symbol.dispose like the other native classes', () => {
  const cpu = Backend.init('CPU')
  for (const cls of [Backend, weft.BackendBuffer, Context, weft.Gguf, GgufWriter, weft.Graph, GraphAllocator, weft.Tensor]) {
    assert.equal(typeof cls.prototype[Symbol.dispose], 'function', cls.name)
  }
  const ga = new GraphAllocator(cpu)
  assert.equal(ga.bufferSize(), 0)
  ga[Symbol.dispose]()
  throwsWith(() => ga.bufferSize(), 'WEFT_INVALID_ARGUMENT', 'GraphAllocator has been disposed')
  const w = new GgufWriter()
  w.set('general.name', 'x')
  assert.ok(w.toBytes().length > 0)
  w[Symbol.dispose]()
  throwsWith(() => w.toBytes(), 'WEFT_INVALID_ARGUMENT', 'GgufWriter has been disposed')
  throwsWith(() => w.set('a', 1), 'WEFT_INVALID_ARGUMENT', 'GgufWriter has been disposed')
})

test('enum objects are exported as values and agree with the string unions', () => {
  assert.equal(weft.GgmlType.F32, 'f32')
  assert.equal(weft.GgmlType.Q4_K, 'q4_K')
  assert.equal(weft.UnaryOp.Gelu, 'GELU')
  assert.equal(weft.BufferUsage.Weights, 'weights')
  assert.equal(weft.DeviceType.Cpu, 'cpu')
  assert.equal(Backend.devices()[0].type, weft.DeviceType.Cpu)
  const ctx = new Context({ memSize: 1 << 20, noAlloc: true })
  const t = ctx.newTensor1d(weft.GgmlType.F16, 8)
  assert.equal(t.type, 'f16')
  assert.deepEqual(new Set(Object.values(weft.GgmlType)), new Set(weft.typeTraits().map((x) => x.name)))
  const buf = Backend.init('CPU').allocCtxTensors(ctx)!
  buf.usage = weft.BufferUsage.Compute
  assert.equal(buf.usage, 'compute')
  throwsWith(() => (buf.usage = 'scratch' as any), 'WEFT_INVALID_ARGUMENT', "'scratch' is not one of any, weights, compute")
})

test("index.d.ts: doc comments are clean, every runtime enum object is declared as a value", () => {
  const dts = readFileSync(new URL('../index.d.ts', import.meta.url), 'utf8')
  assert.doesNotMatch(dts, /\/\*\* r"|^\s*\* r"/m)
  for (const [name, value] of Object.entries(weft)) {
    if (typeof value !== 'object' || value === null) continue
    assert.match(dts, new RegExp(`export declare const ${name}: \\{`), name)
    assert.match(dts, new RegExp(`export type ${name} = `), name)
  }
  const ops = weft.opNames()
  assert.ok(dts.includes(`export type OpName = ${ops.map((o) => `'${o}'`).join(' | ')}\n`), 'OpName lists the op table')
})
