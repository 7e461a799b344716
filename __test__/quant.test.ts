// Quantization from JS: round trips and dot products with test-quantize-fns' data and bounds,
// quantizeChunk's start, quantized tensors read and written as floats, and the errors.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import type { GgmlType } from '../index.js'
import { weft, throwsWith } from './helpers.ts'

const { Context, Backend, quantize, quantizeChunk, dequantize, requiresImatrix, validateRowData } = weft

const TEST_SIZE = 32 * 128

/** test-quantize-fns' generate_data: 0.1 + 2 cos(i + offset), summed in double, stored as float. */
function generateData(offset: number, n: number): Float32Array {
  const out = new Float32Array(n)
  for (let i = 0; i < n; i++) out[i] = 0.1 + 2 * Math.fround(Math.cos(i + offset))
  return out
}

/** test-quantize-fns' array_rmse: sqrt of the summed squared differences, over n. */
function arrayRmse(a: Float32Array, b: Float32Array): number {
  let sum = 0
  for (let i = 0; i < a.length; i++) sum += (a[i]! - b[i]!) ** 2
  return Math.sqrt(sum) / a.length
}

// test-quantize-fns' thresholds (MAX_QUANTIZATION_TOTAL_ERROR* and MAX_DOT_PRODUCT_ERROR*);
// the four types without a from_float, which it skips, get the engine's bounds
// (types/quant/tests.rs), except iq1_m's dot error: the dot test writes a with fromFloat32,
// which quantizes iq1_m without importance weights as ggml's quantize_iq1_m(NULL) does
// (0.164 on this data; 0.029 with unit weights).
const TOTAL = 0.002
const BITS2 = 0.0075
const DOT = 0.02
const DOT_LOWBIT = 0.04
const BOUNDS: Record<string, [total: number, dot: number]> = {
  q4_0: [TOTAL, DOT], q4_1: [TOTAL, DOT], q5_0: [TOTAL, DOT], q5_1: [TOTAL, DOT], q8_0: [TOTAL, DOT],
  q2_K: [BITS2, DOT_LOWBIT], q3_K: [0.004, DOT], q4_K: [TOTAL, DOT], q5_K: [TOTAL, DOT], q6_K: [TOTAL, DOT],
  iq2_s: [BITS2, DOT_LOWBIT], iq3_xxs: [0.005, DOT_LOWBIT], iq3_s: [0.004, DOT_LOWBIT],
  iq4_nl: [TOTAL, DOT], iq4_xs: [TOTAL, DOT], tq1_0: [0.01, 0.15], tq2_0: [0.01, 0.15],
  iq2_xxs: [BITS2, 0.06], iq2_xs: [BITS2, DOT_LOWBIT], iq1_s: [0.015, DOT_LOWBIT], iq1_m: [0.015, 0.2],
}
const TYPES = Object.keys(BOUNDS) as GgmlType[]

/** One weight per column, for the types that need importance weights. */
function weightsFor(type: GgmlType, n: number): Float32Array | null {
  return requiresImatrix(type) ? new Float32Array(n).fill(1) : null
}

test('round trip of every quantized type stays within test-quantize-fns bounds', () => {
  const data = generateData(0, TEST_SIZE)
  for (const type of TYPES) {
    const q = quantize(type, data, 1, TEST_SIZE, weightsFor(type, TEST_SIZE))
    const traits = weft.typeTraits().find((t) => t.name === type)!
    assert.equal(q.length, (TEST_SIZE / traits.blckSize) * traits.typeSize, type)
    validateRowData(type, q)
    const rmse = arrayRmse(data, dequantize(type, q, TEST_SIZE))
    assert.ok(rmse < BOUNDS[type]![0], `${type}: rmse ${rmse} >= ${BOUNDS[type]![0]}`)
  }
})

test('the dot product path (a one-column mulMat) stays within test-quantize-fns bounds', async () => {
  const x = generateData(0, TEST_SIZE)
  const y = generateData(1, TEST_SIZE)
  let exact = 0
  for (let i = 0; i < TEST_SIZE; i++) exact += Math.fround(x[i]! * y[i]!)
  const cpu = Backend.init('CPU')
  for (const type of TYPES) {
    const ctx = new Context({ memSize: 1 << 20, noAlloc: true })
    const a = ctx.newTensor2d(type, TEST_SIZE, 1)
    const b = ctx.newTensor2d('f32', TEST_SIZE, 1)
    const out = ctx.mulMat(a, b)
    const g = ctx.newGraph()
    g.buildForwardExpand(out)
    assert.ok(cpu.supportsOp(out), type)
    const buf = cpu.allocCtxTensors(ctx)!
    // fromFloat32 quantizes as ggml's from_float (what test-quantize-fns does); the types
    // without one are quantized with unit importance weights.
    a.fromFloat32(x)
    b.fromFloat32(y)
    await cpu.compute(g)
    const err = Math.abs(out.toFloat32()[0]! - exact) / TEST_SIZE
    assert.ok(err < BOUNDS[type]![1], `${type}: dot error ${err} >= ${BOUNDS[type]![1]}`)
    buf.dispose()
    ctx.dispose()
  }
})

test('quantizeChunk quantizes rows from start, as ggml_quantize_chunk', () => {
  const n = 64
  const src = generateData(0.5, 5 * n)
  const whole = quantize('q4_K', generateData(0.5, 5 * 256), 5, 256)
  const rowSize = whole.length / 5
  const part = quantizeChunk('q4_K', generateData(0.5, 5 * 256), 2 * 256, 3, 256)
  assert.deepEqual(part, whole.subarray(2 * rowSize))
  // With an importance matrix: one weight per column.
  const w = new Float32Array(n).map((_, i) => 1 + (i % 3))
  const a = quantizeChunk('q4_0', src, n, 2, n, w)
  assert.deepEqual(a, quantize('q4_0', src.subarray(n, 3 * n), 2, n, w))
  assert.equal(requiresImatrix('iq2_xxs'), true)
  assert.equal(requiresImatrix('iq1_s'), true)
  assert.equal(requiresImatrix('iq1_m'), false)
  assert.equal(requiresImatrix('q4_0'), false)
})

test('quantized tensors read and write as floats (toFloat32, fromFloat32), strided rows included', () => {
  const ctx = new Context({ memSize: 1 << 20, noAlloc: true })
  const t = ctx.newTensor2d('q4_0', 64, 4)
  const view = ctx.view2d(t, 64, 2, 2 * t.nb[1]!, 0) // rows 0 and 2
  const cpu = Backend.init('CPU')
  const buf = cpu.allocCtxTensors(ctx)!
  const data = generateData(0.25, 256)
  const q = quantize('q4_0', data, 4, 64)
  t.set(q)
  const all = dequantize('q4_0', q, 256)
  assert.deepEqual(t.toFloat32(), all)
  assert.deepEqual(view.toFloat32(), Float32Array.of(...all.subarray(0, 64), ...all.subarray(128, 192)))
  // fromFloat32 quantizes like quantize() for q4_0 (ggml's from_float is its reference).
  t.fromFloat32(data)
  assert.deepEqual(t.get(), q)
  // Writing the view quantizes its rows and leaves the others alone.
  view.fromFloat32(new Float32Array(128).fill(0.5))
  const after = t.toFloat32()
  assert.deepEqual(after.subarray(64, 128), all.subarray(64, 128))
  assert.ok(after.subarray(0, 64).every((v) => Math.abs(v - 0.5) < 0.05))
  buf.dispose()
  ctx.dispose()
})

test('quantization errors name the function, the type and the condition', () => {
  const bad = 'WEFT_INVALID_ARGUMENT'
  throwsWith(() => quantize('q4_0', new Float32Array(33), 1, 33), bad, 'quantize', 'q4_0', 'whole blocks')
  throwsWith(() => quantize('q4_0', new Float32Array(64), 3, 32), bad, 'quantize', 'q4_0', 'nrows * ncols')
  throwsWith(() => quantize('iq2_xxs', new Float32Array(256), 1, 256), bad, 'quantize', 'iq2_xxs', 'importance matrix')
  throwsWith(
    () => quantize('q4_K', new Float32Array(256), 1, 256, new Float32Array(255)),
    bad,
    'quantize',
    'q4_K',
    'imatrix has 255 weights',
  )
  throwsWith(() => quantizeChunk('q8_0', new Float32Array(64), 16, 1, 32), bad, 'quantizeChunk', 'q8_0', 'multiple of nPerRow')
  throwsWith(() => quantizeChunk('q8_0', new Float32Array(64), 32, 2, 32), bad, 'quantizeChunk', 'q8_0', 'past the end')
  throwsWith(() => quantizeChunk('q8_0', new Float32Array(64), 0, 1, -1), bad, 'quantizeChunk', 'nPerRow')
  throwsWith(() => quantize('q8_0', new Float32Array(0), 2, 0), bad, 'quantize', 'q8_0', 'must be positive')
  throwsWith(() => dequantize('q4_0', new Uint8Array(17), 32), bad, 'dequantize', 'q4_0', '18 bytes')
  throwsWith(() => dequantize('q4_K', new Uint8Array(0), 32), bad, 'dequantize', 'q4_K', 'whole blocks')
  throwsWith(() => quantize('q4_0_4x4', new Float32Array(32), 1, 32), 'WEFT_NOT_SUPPORTED', 'quantize', 'q4_0_4x4')
  throwsWith(() => validateRowData('q8_0', new Uint8Array(35)), bad, 'validateRowData', 'q8_0', 'whole')
  const block = quantize('q8_0', generateData(0, 64), 1, 64)
  block.set([0x00, 0x7e], 34) // the second block's f16 scale: NaN
  throwsWith(() => validateRowData('q8_0', block), bad, 'validateRowData', 'q8_0', 'block 1')
})
