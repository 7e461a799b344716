// Regression tests for issue 14: no JS input crashes Node, and a buffer in use by a running
// compute is never read, written or freed under it. Each reproducer from the issue is here;
// those that used to crash the process run in a child process, so a regression fails one
// test instead of ending the run.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { weft, throwsWith } from './helpers.ts'
import { describeEnd, runIsolated } from './isolated.ts'

const { Context, Backend, GgufWriter, Gguf } = weft

/** Run `body` in a child; it must exit normally and print `expected` (one line each). */
function survives(body: string, expected: string[], env: Record<string, string> = {}): void {
  const r = runIsolated(body, env)
  assert.equal(r.signal, null, `killed by ${r.signal}: ${describeEnd(r)}`)
  assert.equal(r.status, 0, describeEnd(r))
  const lines = r.stdout.trim().split('\n')
  assert.deepEqual(lines, expected, describeEnd(r))
}

/** JS that prints `label code` for what `f` throws or rejects with. */
const report = `
globalThis.report = async (label, f) => {
  try { await f(); console.log(label, 'ok') } catch (e) { console.log(label, e.code ?? 'NO_CODE') }
}
`

test('1: a read length far past the tensor is an error before anything is allocated', () => {
  survives(
    `${report}
    const t = new weft.Context().newTensor1d('f32', 4)
    await report('get', () => t.get(0, 2 ** 40))
    await report('getAsync', () => t.getAsync(0, 2 ** 40))
    await report('getAsync offset', () => t.getAsync(2 ** 40))`,
    ['get WEFT_INVALID_ARGUMENT', 'getAsync WEFT_INVALID_ARGUMENT', 'getAsync offset WEFT_INVALID_ARGUMENT'],
  )
})

test('2: reading an unallocated large tensor is an error before its bytes are allocated', () => {
  survives(
    `${report}
    const t = new weft.Context({ noAlloc: true }).newTensor2d('f32', 2 ** 20, 2 ** 20)
    await report('toFloat32', () => t.toFloat32())
    await report('get', () => t.get())
    await report('toFloat32Async', () => t.toFloat32Async())
    await report('getAsync', () => t.getAsync())
    await report('addTensor', () => new weft.GgufWriter().addTensor(t))`,
    [
      'toFloat32 WEFT_INVALID_ARGUMENT',
      'get WEFT_INVALID_ARGUMENT',
      'toFloat32Async WEFT_INVALID_ARGUMENT',
      'getAsync WEFT_INVALID_ARGUMENT',
      'addTensor WEFT_INVALID_ARGUMENT',
    ],
  )
})

test('3: a tensor without elements reads as none, however wide its other dims', () => {
  survives(
    `const t = new weft.Context().newTensor2d('f32', 2 ** 40, 0)
    console.log(t.toFloat32().length, (await t.toFloat32Async()).length, t.get().length)
    t.fromFloat32(new Float32Array(0))`,
    ['0 0 0'],
  )
})

test('4: a deeply nested array is refused before the binding recurses into it', () => {
  survives(
    `${report}
    let a = [1]
    for (let i = 0; i < 30000; i++) a = [a]
    await report('set', () => new weft.GgufWriter().set('k', a))
    await report('set arr', () => new weft.GgufWriter().set('k', a, 'arr'))`,
    ['set WEFT_INVALID_ARGUMENT', 'set arr WEFT_INVALID_ARGUMENT'],
  )
  // 32 levels, the most GGUF readers accept, still work.
  let a: unknown = [1]
  for (let i = 1; i < 32; i++) a = [a]
  const w = new GgufWriter()
  w.set('k', a as unknown[])
  let back: unknown = Gguf.fromBytes(w.toBytes()).get('k')
  let depth = 0
  for (; Array.isArray(back); depth++) back = back[0]
  assert.equal(depth, 32)
  assert.equal(back, 1)
})

test('5: compute refuses a graph not yet allocated, so nothing allocated later is freed under it', () => {
  // The reproducer: queued behind a long compute, the second graph's tensors were
  // allocated and their buffer disposed while the compute ran over them (use after free).
  survives(
    `const be = weft.Backend.init('CPU'), N = 1 << 22
    const bc = new weft.Context({ memSize: 32 << 20 }); let y = bc.newTensor1d('f32', N)
    for (let k = 0; k < 24; k++) y = bc.sinInplace(y)
    const gb = bc.newGraph(); gb.buildForwardExpand(y)
    const ctx = new weft.Context({ noAlloc: true }); let x = ctx.newTensor1d('f32', N)
    for (let k = 0; k < 8; k++) x = ctx.sin(x)
    const g = ctx.newGraph(); g.buildForwardExpand(x)
    const first = be.compute(gb); const p = be.compute(g); const buf = be.allocCtxTensors(ctx)
    const disposed = new Promise((res) => setTimeout(() => { buf.dispose(); res() }, 330))
    await first
    await p.then(() => console.log('computed'), (e) => console.log(e.code, /not allocated/.test(e.message)))
    await disposed
    console.log(weft.caughtPanics())`,
    ['WEFT_INVALID_ARGUMENT true', '0'],
    { UV_THREADPOOL_SIZE: '1' },
  )
})

test('5: an allocated graph holds its buffers from the call until the Promise settles', async () => {
  const ctx = new Context({ noAlloc: true })
  const a = ctx.newTensor1d('f32', 1 << 16)
  let x = a
  for (let k = 0; k < 4; k++) x = ctx.sin(x)
  const g = ctx.newGraph()
  g.buildForwardExpand(x)
  const be = Backend.init('CPU')
  const buf = be.allocCtxTensors(ctx)!
  const p = be.compute(g)
  throwsWith(() => buf.dispose(), 'WEFT_BUSY', 'in use by a running compute')
  throwsWith(() => a.fromFloat32(new Float32Array(1 << 16)), 'WEFT_BUSY', 'in use by a running compute')
  throwsWith(() => x.toFloat32(), 'WEFT_BUSY', 'in use by a running compute')
  await assert.rejects(x.toFloat32Async(), (e: any) => e.code === 'WEFT_BUSY' && /running compute/.test(e.message))
  await p
  buf.dispose()
})

test('6: a mapped GGUF file that shrinks gives an error, not SIGBUS', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'weft-sigbus-'))
  const file = path.join(dir, 'shrinks.gguf')
  try {
    survives(
      `${report}
      const fs = await import('node:fs')
      const p = ${JSON.stringify(file)}
      const write = () => {
        const w = new weft.GgufWriter()
        w.addTensorData('a', 'f32', [1 << 20], new Uint8Array(4 << 20).fill(7))
        w.writeFile(p)
      }
      write()
      let g = weft.Gguf.open(p)
      new weft.GgufWriter().writeFile(p) // rewritten shorter under the map
      await report('rewritten', () => g.tensorData('a'))
      write(); g = weft.Gguf.open(p)
      fs.truncateSync(p, 0)
      await report('truncated', () => g.tensorData('a'))
      write(); g = weft.Gguf.open(p)
      const ctx = new weft.Context(); const t = ctx.newTensor1d('f32', 1 << 20); t.name = 'a'
      fs.truncateSync(p, 4096)
      await report('loadTensors', () => g.loadTensors([t]))
      write(); g = weft.Gguf.open(p)
      console.log(g.tensorData('a')[123], g.keys().length)`,
      ['rewritten WEFT_IO', 'truncated WEFT_IO', 'loadTensors WEFT_IO', '7 0'],
    )
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
})

test('7: GGUF alignments readers do not expect are refused', () => {
  const w = new GgufWriter()
  throwsWith(() => w.setAlignment(2 ** 31), 'WEFT_INVALID_ARGUMENT', '65536')
  throwsWith(() => w.setAlignment(2 ** 17), 'WEFT_INVALID_ARGUMENT', '65536')
  throwsWith(() => w.setAlignment(48), 'WEFT_INVALID_ARGUMENT', 'power of two')
  throwsWith(() => w.setAlignment(2 ** 32), 'WEFT_INVALID_ARGUMENT', 'outside u32')
  throwsWith(() => w.set('general.alignment', 2 ** 31, 'u32'), 'WEFT_INVALID_ARGUMENT', '65536')
  w.setAlignment(65536)
  w.addTensorData('a', 'f32', [1], new Uint8Array(4))
  // Header and data each padded to 64 KiB: nothing near the 6 GB 2^31 gave.
  assert.equal(w.toBytes().length, 2 * 65536)
})

test('8: views and results without elements read as empty arrays, not a caught panic', async () => {
  const before = weft.caughtPanics()
  const ctx = new Context()
  const a = ctx.newTensor2d('f32', 4, 4)
  assert.equal(ctx.view2d(a, 0, 2, 16, 0).toFloat32().length, 0)
  assert.equal(ctx.view1d(a, 0, 8).get().length, 0)
  for (const name of backendNamesOrCpu()) {
    const c = new Context({ noAlloc: true })
    const x = c.newTensor2d('f32', 4, 4)
    const k0 = c.topK(x, 0)
    const g = c.newGraph()
    g.buildForwardExpand(k0)
    const be = Backend.init(name)
    if (!g.nodes().every((n) => be.supportsOp(n))) continue
    be.allocCtxTensors(c)
    x.fromFloat32(new Float32Array(16))
    await be.compute(g)
    assert.deepEqual(Array.from(k0.toFloat32()), [], name)
    assert.deepEqual(k0.ne, [0, 4, 1, 1], name)
  }
  assert.equal(weft.caughtPanics(), before, 'no panic was caught')
})

function backendNamesOrCpu(): string[] {
  return weft.Backend.devices().map((d) => d.name)
}

test('9: GgufWriter stores every JS value exactly, or refuses it', () => {
  const w = new GgufWriter()
  const values: Array<[string, number | bigint, string]> = [
    ['big', 1e300, 'f64'],
    ['tiny', -1e-300, 'f64'],
    ['past2^53', 2 ** 53 + 2, 'f64'],
    ['negzero', -0, 'f64'],
    ['half', 0.5, 'f64'],
    ['nan', NaN, 'f64'],
    ['int', -7, 'i32'],
    ['i32max+1', 2 ** 31, 'i64'],
    ['safe', 2 ** 53 - 1, 'i64'],
    ['bigint', -5n, 'i64'],
    ['u64', 2n ** 63n, 'u64'],
  ]
  for (const [k, v] of values) w.set(k, v)
  const g = Gguf.fromBytes(w.toBytes())
  for (const [k, v, type] of values) {
    assert.equal(g.getType(k), type, k)
    const got = g.get(k)
    if (typeof v === 'bigint') assert.equal(got, v, k)
    else if (type === 'i64') assert.equal(got, BigInt(v), k)
    else assert.ok(Object.is(got, v), `${k}: ${String(got)} is not ${v}`)
  }
  // An explicit type that cannot hold the value is an error, not a silent change.
  throwsWith(() => w.set('x', 1e300, 'f32'), 'WEFT_INVALID_ARGUMENT', "key 'x'", "f32's range")
  throwsWith(() => w.set('x', -1e-300, 'f32'), 'WEFT_INVALID_ARGUMENT', "f32's range")
  throwsWith(() => w.set('x', 2.5, 'i32'), 'WEFT_INVALID_ARGUMENT', 'not an integer')
  throwsWith(() => w.set('x', 2 ** 40, 'u32'), 'WEFT_INVALID_ARGUMENT', 'does not fit u32')
  throwsWith(() => w.set('x', 2n ** 64n), 'WEFT_INVALID_ARGUMENT', 'fits neither i64 nor u64')
  throwsWith(() => w.set('x', 2n ** 60n + 1n, 'f64'), 'WEFT_INVALID_ARGUMENT', 'not exactly representable')
  throwsWith(() => w.set('x', [1, 'a']), 'WEFT_INVALID_ARGUMENT', 'cannot hold both')
  w.set('f32', 0.1, 'f32') // rounding to the nearest f32 is what 'f32' means
  // Arrays take the narrowest type holding every element.
  w.set('ints', [1, 2 ** 40])
  w.set('mixed', [1, 2.5, -0])
  const h = Gguf.fromBytes(w.toBytes())
  assert.equal(h.getType('ints'), 'arr[i64]')
  assert.deepEqual(h.get('ints'), [1n, 2n ** 40n])
  assert.equal(h.getType('mixed'), 'arr[f64]')
  assert.ok(Object.is((h.get('mixed') as number[])[2], -0))
  assert.equal(h.get('f32'), Math.fround(0.1))
})

test('10: NaN through quantized paths gives what ggml x86 gives; validateRowData reports NaN scales', async () => {
  // Expected values from ggml's x86 build at the reference commit, run outside the repo on
  // the same inputs: ggml loses the NaN (the q8_0 activation packs it to -128) and so does
  // weft, with the same numbers.
  const k = 256
  const a = Float32Array.from({ length: k * 4 }, (_, i) => Math.cos(i * 0.11))
  const b = Float32Array.from({ length: k }, (_, i) => Math.sin(i * 0.23))
  b[5] = NaN
  const ggml: Record<string, number[]> = {
    q4_0: [2.10258, -2.10137, 1.85484, -1.72222],
    q8_0: [0.253681, -1.79554, -0.297628, -1.30269],
    iq4_nl: [2.54059, -2.4797, 2.57646, -2.28641],
    q4_1: [Infinity, Infinity, Infinity, Infinity],
  }
  const be = Backend.init('CPU')
  for (const [ty, want] of Object.entries(ggml)) {
    const ctx = new Context({ memSize: 8 << 20 })
    const ta = ctx.newTensor2d(ty as never, k, 4)
    const tb = ctx.newTensor2d('f32', k, 1)
    ta.set(weft.quantize(ty as never, a, 4, k))
    tb.fromFloat32(b)
    const c = ctx.mulMat(ta, tb)
    const g = ctx.newGraph()
    g.buildForwardExpand(c)
    await be.compute(g)
    const got = Array.from(c.toFloat32())
    for (let i = 0; i < 4; i++) {
      const ok = got[i] === want[i] || Math.abs(got[i] - want[i]) <= 1e-4 * Math.abs(want[i])
      assert.ok(ok, `${ty} row ${i}: ${got[i]} vs ggml ${want[i]}`)
    }
  }
  // Quantizing NaN: finite blocks that validate (q4_0, as ggml), a NaN-scale block that does
  // not (iq4_nl, as ggml), an error where ggml aborts (iq2_s).
  const row = Float32Array.from({ length: 256 }, (_, i) => Math.sin(i * 0.37) * 2)
  row[5] = NaN
  const q4 = weft.quantize('q4_0', row, 1, 256)
  assert.ok(weft.dequantize('q4_0', q4, 256).every(Number.isFinite))
  weft.validateRowData('q4_0', q4)
  const nl = weft.quantize('iq4_nl', row, 1, 256)
  assert.ok(weft.dequantize('iq4_nl', nl, 256).slice(0, 32).every(Number.isNaN))
  throwsWith(() => weft.validateRowData('iq4_nl', nl), 'WEFT_INVALID_ARGUMENT', 'block 0', 'non-finite scale')
  throwsWith(() => weft.quantize('iq2_s', row, 1, 256), 'WEFT_INVALID_ARGUMENT', 'iq2_s')
  // A hand-made q4_0 block whose f16 scale is NaN (0x7e00).
  const block = new Uint8Array(18)
  block[0] = 0x00
  block[1] = 0x7e
  throwsWith(() => weft.validateRowData('q4_0', block), 'WEFT_INVALID_ARGUMENT', 'q4_0', 'block 0', 'NaN')
})

test('12: a pending compute keeps its backend; disposing its graph handle leaves it whole', async () => {
  // The compute holds its own copy of the graph, so dropping that handle frees nothing under
  // it; the backend object is held by the pending call (WEFT_BUSY), its buffers refused.
  const ctx = new Context({ noAlloc: true })
  const a = ctx.newTensor1d('f32', 1 << 16)
  let x = a
  for (let k = 0; k < 4; k++) x = ctx.sqr(x)
  const g = ctx.newGraph()
  g.buildForwardExpand(x)
  const be = Backend.init('CPU')
  be.allocCtxTensors(ctx)
  a.fromFloat32(new Float32Array(1 << 16).fill(1.5))
  const p = be.compute(g)
  g.dispose()
  throwsWith(() => be.dispose(), 'WEFT_BUSY', 'await it first')
  throwsWith(() => a.fromFloat32(new Float32Array(1 << 16)), 'WEFT_BUSY', 'await it first')
  await p
  be.dispose()
  // 1.5^16 = 656.8408203125 exactly in f32.
  const out = x.toFloat32()
  assert.equal(out[0], 656.8408203125)
  assert.equal(out[(1 << 16) - 1], 656.8408203125)
  throwsWith(() => be.name, 'WEFT_INVALID_ARGUMENT', 'disposed')
  throwsWith(() => g.nNodes, 'WEFT_INVALID_ARGUMENT', 'disposed')
})

test('13: concurrent reads of one buffer share it; what holds a buffer is named', async () => {
  const ctx = new Context({ noAlloc: true })
  const a = ctx.newTensor1d('f32', 1024)
  const b = ctx.newTensor1d('f32', 1024)
  const s = ctx.add(a, b)
  const g = ctx.newGraph()
  g.buildForwardExpand(s)
  const be = Backend.init('CPU')
  be.allocCtxTensors(ctx)
  a.fromFloat32(new Float32Array(1024).fill(1))
  b.fromFloat32(new Float32Array(1024).fill(2))
  const [x, y] = await Promise.all([a.toFloat32Async(), b.toFloat32Async()])
  assert.equal(x[7] + y[7], 3)
  const reads = [a.toFloat32Async(), b.getAsync(0, 8)]
  assert.equal(a.toFloat32()[0], 1, 'a read on the JS thread shares too')
  throwsWith(() => a.fromFloat32(new Float32Array(1024)), 'WEFT_BUSY', 'pending getAsync/toFloat32Async')
  await assert.rejects(be.compute(g), (e: any) => e.code === 'WEFT_BUSY' && /being read by 2 pending/.test(e.message))
  await Promise.all(reads)
  await be.compute(g)
  assert.equal(s.toFloat32()[0], 3)
})

test('11: a loop that never disposes 8 MiB tensors stays bounded (V8 collects them)', () => {
  // V8 sees each Context as a small object; only the native memory they report to it
  // (napi_adjust_external_memory) makes it collect them. Node runs the finalizers that
  // free the memory between event-loop turns, so the loop awaits, as a compute loop does.
  survives(
    `let peak = 0
    const be = weft.Backend.init('CPU')
    for (let i = 0; i < 200; i++) {
      const ctx = new weft.Context({ memSize: 9 << 20 })
      const t = ctx.newTensor1d('f32', 2 << 20)
      t.memset(i & 255) // touch every page, without a JS-side buffer V8 would count
      const g = ctx.newGraph()
      g.buildForwardExpand(ctx.scaleInplace(t, 2))
      await be.compute(g)
      if (i % 10 === 0) peak = Math.max(peak, process.memoryUsage().rss)
    }
    // 200 x 9 MiB = 1.8 GiB allocated: without reports to V8 the RSS followed it.
    console.log(peak < 1024 * 1024 * 1024 ? 'bounded' : 'peak ' + peak)`,
    ['bounded'],
  )
})

test('no test in this file caused a caught panic', () => {
  assert.equal(weft.caughtPanics(), 0)
})
