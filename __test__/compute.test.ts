// Compute through the binding: results worked out by hand on CPU, every other backend
// against CPU, the event loop staying live, and buffers guarded while in use.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { weft, randomFloats, assertClose, backendNames } from './helpers.ts'

const { Context, Backend, GraphAllocator } = weft

test('matmul, softmax and norm on CPU, by hand', async () => {
  const ctx = new Context({ memSize: 1 << 20, noAlloc: true })
  const a = ctx.newTensor2d('f32', 3, 2)
  const b = ctx.newTensor2d('f32', 3, 2)
  const mm = ctx.mulMat(a, b)
  const sm = ctx.softMax(mm)
  const nm = ctx.norm(mm, 0)
  const g = ctx.newGraph()
  g.buildForwardExpand(sm)
  g.buildForwardExpand(nm)
  const cpu = Backend.init('CPU')
  const buf = cpu.allocCtxTensors(ctx)!
  assert.ok(buf.size >= 8 * 4)
  a.fromFloat32(new Float32Array([1, 2, 3, 4, 5, 6]))
  b.fromFloat32(new Float32Array([1, 0, -1, 2, 1, 0]))
  await cpu.compute(g)
  // rows of a . rows of b: [-2, -2] and [4, 13]
  assert.deepEqual(Array.from(mm.toFloat32()), [-2, -2, 4, 13])
  const e = Math.exp(4 - 13)
  assertClose(sm.toFloat32(), [0.5, 0.5, e / (1 + e), 1 / (1 + e)], 1e-6, 'softmax')
  // norm of [-2,-2] is [0,0] (zero variance, eps 0 gives 0/0 -> NaN in ggml too); of [4,13] is [-1, 1]
  assertClose(nm.toFloat32().slice(2), [-1, 1], 1e-6, 'norm')
})

test('every backend matches CPU on the same graph', async () => {
  const names = backendNames()
  const results = new Map<string, Float32Array>()
  for (const name of names) {
    const ctx = new Context({ memSize: 1 << 20, noAlloc: true })
    const x = ctx.newTensor2d('f32', 64, 8)
    const w = ctx.newTensor2d('f32', 64, 16)
    const bias = ctx.newTensor1d('f32', 16)
    const h = ctx.add(ctx.mulMat(w, x), bias)
    const out = ctx.rmsNorm(ctx.softMax(ctx.scale(h, 0.125)), 1e-6)
    const g = ctx.newGraph()
    g.buildForwardExpand(out)
    const be = Backend.init(name)
    if (!g.nodes().every((n) => be.supportsOp(n))) continue
    be.allocCtxTensors(ctx)
    x.fromFloat32(randomFloats(64 * 8, 1))
    w.fromFloat32(randomFloats(64 * 16, 2))
    bias.fromFloat32(randomFloats(16, 3))
    await be.compute(g)
    results.set(name, out.toFloat32())
  }
  const ref = results.get('CPU')!
  assert.ok(ref.length === 16 * 8)
  for (const [name, r] of results) assertClose(r, ref, 1e-5, name)
})

test('compute does not block the event loop', async () => {
  // The chain grows until one compute lasts long enough to observe the loop ticking
  // beside it: a fast GEMM finishes four 512x512 products in a few milliseconds.
  for (const chain of [4, 16, 64]) {
    const ctx = new Context({ memSize: 1 << 20, noAlloc: true })
    const n = 512
    const a = ctx.newTensor2d('f32', n, n)
    const b = ctx.newTensor2d('f32', n, n)
    let t = ctx.mulMat(a, b)
    for (let i = 1; i < chain; i++) t = ctx.scale(ctx.mulMat(a, t), 1 / 16)
    const g = ctx.newGraph()
    g.buildForwardExpand(t)
    const cpu = Backend.init('CPU')
    cpu.allocCtxTensors(ctx)
    a.fromFloat32(randomFloats(n * n, 4))
    b.fromFloat32(randomFloats(n * n, 5))
    let ticks = 0
    const timer = setInterval(() => ticks++, 5)
    const t0 = performance.now()
    const done = cpu.compute(g)
    // While it runs, the buffers are guarded: writes and reads throw instead of racing.
    assert.throws(() => a.fromFloat32(new Float32Array(n * n)), (e: any) => e.code === 'WEFT_BUSY')
    assert.throws(() => t.toFloat32(), (e: any) => e.code === 'WEFT_BUSY')
    await done
    const ms = performance.now() - t0
    clearInterval(timer)
    assert.equal(t.toFloat32().length, n * n)
    if (ms <= 30 && chain < 64) continue
    assert.ok(ms > 30, `compute of ${chain} products took ${ms} ms: too short to observe`)
    // A blocked loop would see no ticks until the end; a live one sees them throughout.
    assert.ok(ticks >= Math.min(5, Math.floor(ms / 20)), `${ticks} timer ticks in ${ms.toFixed(0)} ms`)
    return
  }
})

test('errors in compute reject the promise and release the buffers', async () => {
  const ctx = new Context({ memSize: 1 << 20, noAlloc: true })
  const emb = ctx.newTensor2d('f32', 4, 3)
  const idx = ctx.newTensor1d('i32', 2)
  const rows = ctx.getRows(emb, idx)
  const g = ctx.newGraph()
  g.buildForwardExpand(rows)
  const cpu = Backend.init('CPU')
  cpu.allocCtxTensors(ctx)
  idx.set(new Int32Array([1, 7]))
  await assert.rejects(cpu.compute(g), (e: any) => {
    assert.equal(e.code, 'WEFT_INVALID_ARGUMENT')
    assert.match(e.message, /getRows: row index 7 .* outside a.ne\[1\]=3/)
    return true
  })
  idx.set(new Int32Array([2, 0])) // writable again after the rejection
  emb.fromFloat32(new Float32Array([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]))
  await cpu.compute(g)
  assert.deepEqual(Array.from(rows.toFloat32()), [8, 9, 10, 11, 0, 1, 2, 3])
  // An unallocated graph is an error too.
  const ctx2 = new Context({ memSize: 1 << 20, noAlloc: true })
  const g2 = ctx2.newGraph()
  g2.buildForwardExpand(ctx2.sqr(ctx2.newTensor1d('f32', 2)))
  await assert.rejects(cpu.compute(g2), /not allocated/)
})

test('graph allocator reuses memory across a chain of ops', async () => {
  const ctx = new Context({ memSize: 1 << 20, noAlloc: true })
  const n = 1 << 14
  const x = ctx.newTensor1d('f32', n)
  x.setInput()
  let t = x
  for (let i = 0; i < 10; i++) t = i % 2 ? ctx.cont(t) : ctx.scale(t, 2)
  t.setOutput()
  const g = ctx.newGraph()
  g.buildForwardExpand(t)
  const cpu = Backend.init('CPU')
  const ga = new GraphAllocator(cpu)
  ga.reserve(g)
  ga.allocGraph(g)
  assert.ok(ga.bufferSize() <= 3 * n * 4, `${ga.bufferSize()} bytes for tensors of ${n * 4}`)
  x.fromFloat32(new Float32Array(n).fill(1))
  await cpu.compute(g)
  assert.ok(t.toFloat32().every((v) => v === 32)) // five doublings
})

test('buffers: dispose frees now, and is refused while a compute runs', async () => {
  const ctx = new Context({ memSize: 1 << 20, noAlloc: true })
  const a = ctx.newTensor2d('f32', 256, 256)
  const b = ctx.mulMat(a, a)
  const g = ctx.newGraph()
  g.buildForwardExpand(b)
  const cpu = Backend.init('CPU:n_threads=1')
  const buf = cpu.allocCtxTensors(ctx)!
  assert.equal(buf.usage, 'any')
  buf.usage = 'weights'
  assert.equal(buf.usage, 'weights')
  const p = cpu.compute(g)
  assert.throws(() => buf.dispose(), (e: any) => e.code === 'WEFT_BUSY')
  // A second compute over the same memory would race the first: refused (its Promise
  // rejects) until the first settles.
  await assert.rejects(cpu.compute(g), (e: any) => e.code === 'WEFT_BUSY' && /in use by a running compute/.test(e.message))
  await p
  await cpu.compute(g) // free again
  buf.dispose()
  assert.throws(() => a.toFloat32(), /released/)
  await assert.rejects(cpu.compute(g), /released/)
})

test('devices and backends by name', () => {
  const devs = Backend.devices()
  assert.equal(devs[0].name, 'CPU')
  assert.equal(devs[0].type, 'cpu')
  assert.ok(devs[0].memoryTotal > 0)
  for (const d of devs) assert.equal(Backend.init(d.name).name.length > 0, true)
  assert.throws(() => Backend.init('NOPE'), /no backend device named 'NOPE'/)
  assert.throws(() => Backend.init('CPU:n_threads=abc'), /not a number/)
  const cpu = Backend.init('CPU')
  cpu.setNThreads(1)
  assert.throws(() => cpu.setNThreads(0), /nThreads=0/)
})

test('CPU strict_cpu: every setting computes the same product, bad values are refused', async () => {
  const [k, m, n] = [37, 19, 11]
  const av = randomFloats(k * m, 3)
  const bv = randomFloats(k * n, 4)
  // The product worked here in f64, then compared at f32 rounding.
  const want = new Float64Array(m * n)
  for (let j = 0; j < n; j++) for (let i = 0; i < m; i++) for (let l = 0; l < k; l++) want[j * m + i] += av[i * k + l] * bv[j * k + l]
  for (const init of ['CPU:strict_cpu=1', 'CPU:strict_cpu=0;n_threads=3', 'CPU:n_threads=2,strict_cpu=auto']) {
    const ctx = new Context({ memSize: 1 << 20, noAlloc: true })
    const a = ctx.newTensor2d('f32', k, m)
    const b = ctx.newTensor2d('f32', k, n)
    const g = ctx.newGraph()
    g.buildForwardExpand(ctx.mulMat(a, b))
    const cpu = Backend.init(init)
    cpu.allocCtxTensors(ctx)
    a.fromFloat32(av)
    b.fromFloat32(bv)
    await cpu.compute(g)
    const got = g.node(-1)!.toFloat32()
    got.forEach((v, i) => assert.ok(Math.abs(v - want[i]) <= 1e-4 * (1 + Math.abs(want[i])), `${init}: [${i}] ${v} vs ${want[i]}`))
  }
  const cpu = Backend.init('CPU')
  assert.throws(() => cpu.setOption('strict_cpu', 'yes'), (e: any) => /^WEFT_/.test(e.code) && /strict_cpu='yes' must be auto, 1, true, 0 or false/.test(e.message))
  assert.throws(() => Backend.init('CPU:strict_cpu=2'), /strict_cpu='2'/)
  cpu.setOption('strictCpu', 'true')
  cpu.setNThreads(1)
})

test('async reads from every backend match the sync ones', async () => {
  for (const name of backendNames()) {
    const ctx = new Context({ memSize: 1 << 20, noAlloc: true })
    const a = ctx.newTensor2d('f32', 5, 3)
    const s = ctx.scale(a, 3)
    const g = ctx.newGraph()
    g.buildForwardExpand(s)
    const be = Backend.init(name)
    be.allocCtxTensors(ctx)
    const v = randomFloats(15, 6)
    a.fromFloat32(v)
    await be.compute(g)
    const f = await s.toFloat32Async()
    assertClose(f, Array.from(v, (x) => x * 3), 1e-6, name)
    const bytes = await s.getAsync(4, 8)
    assert.deepEqual(Array.from(new Float32Array(bytes.slice().buffer)), Array.from(f.slice(1, 3)), name)
    // While the read runs, the buffer is held: a write waits for it (throws WEFT_BUSY).
    const pending = s.toFloat32Async()
    assert.throws(() => a.fromFloat32(v), (e: any) => e.code === 'WEFT_BUSY')
    await pending
    await assert.rejects(s.getAsync(0, 1 << 20), /outside tensor/)
  }
})
