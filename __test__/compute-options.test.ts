// Async methods keep their word: every failure rejects the Promise (never a synchronous
// throw), compute(graph, { signal }) stops between nodes with an AbortError, and
// onProgress(nodesDone, nodesTotal) reports before the Promise settles.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { getEventListeners } from 'node:events'
import { weft, rejectsWith, backendNames } from './helpers.ts'
import type { Backend as BackendT, Context as ContextT, Graph, Tensor } from '../index.js'

const { Backend, Context } = weft

/** x (4 elements) doubled n times: node i holds x * 2^(i+1). Allocated on `backend`. */
function doublingChain(backend: BackendT, n: number) {
  const ctx = new Context({ memSize: 4 << 20, noAlloc: true })
  const x = ctx.newTensor1d('f32', 4)
  const nodes: Tensor[] = []
  let t = x
  for (let i = 0; i < n; i++) nodes.push((t = ctx.scale(t, 2)))
  const g = ctx.newGraph()
  g.buildForwardExpand(t)
  backend.allocCtxTensors(ctx)
  x.fromFloat32(new Float32Array([1, -2, 0.5, 3]))
  for (const node of nodes) node.fromFloat32(new Float32Array(4).fill(-7)) // sentinel
  return { ctx, x, nodes, g }
}

/** A graph heavy enough that it cannot finish before the next JS statement runs. */
function heavyGraph(backend: BackendT): { ctx: ContextT; g: Graph; n: number } {
  const ctx = new Context({ memSize: 8 << 20, noAlloc: true })
  const a = ctx.newTensor2d('f32', 128, 128)
  let t = a
  for (let i = 0; i < 300; i++) t = ctx.scale(ctx.mulMat(a, t), 1 / 128)
  const g = ctx.newGraph()
  g.buildForwardExpand(t)
  backend.allocCtxTensors(ctx)
  a.fromFloat32(new Float32Array(128 * 128).fill(1))
  return { ctx, g, n: g.nNodes }
}

test('compute rejects, never throws: bad arguments, busy buffers, unallocated graphs, disposed objects', async () => {
  const cpu = Backend.init('CPU')
  const { g, ctx } = doublingChain(cpu, 3)
  await rejectsWith(() => cpu.compute(undefined as any), 'WEFT_INVALID_ARGUMENT', 'compute: graph must be a Graph')
  await rejectsWith(() => cpu.compute(ctx as any), 'WEFT_INVALID_ARGUMENT', 'compute: graph must be a Graph')
  await rejectsWith(() => cpu.compute(g, 5 as any), 'WEFT_INVALID_ARGUMENT', 'options must be an object')
  await rejectsWith(() => cpu.compute(g, { signal: {} as any }), 'WEFT_INVALID_ARGUMENT', 'options.signal must be an AbortSignal')
  await rejectsWith(() => cpu.compute(g, { onProgress: 1 as any }), 'WEFT_INVALID_ARGUMENT', 'options.onProgress must be a function')

  // a second compute over the same buffers while the first runs
  const first = cpu.compute(g)
  await rejectsWith(() => cpu.compute(g), 'WEFT_BUSY', 'in use by a running compute')
  await first

  const ctx2 = new Context({ memSize: 1 << 20, noAlloc: true })
  const g2 = ctx2.newGraph()
  g2.buildForwardExpand(ctx2.sqr(ctx2.newTensor1d('f32', 2)))
  await rejectsWith(() => cpu.compute(g2), 'WEFT_INVALID_ARGUMENT', 'not allocated')

  const gone = Backend.init('CPU')
  gone.dispose()
  await rejectsWith(() => gone.compute(g), 'WEFT_INVALID_ARGUMENT', 'Backend has been disposed')
  const g3 = ctx.newGraph()
  g3.dispose()
  await rejectsWith(() => cpu.compute(g3), 'WEFT_INVALID_ARGUMENT', 'disposed')
})

test('compareGraph, getAsync and toFloat32Async reject too', async () => {
  const cpu = Backend.init('CPU')
  const { g, x } = doublingChain(cpu, 2)
  await rejectsWith(() => cpu.compareGraph({} as any, g), 'WEFT_INVALID_ARGUMENT', 'compareGraph: other must be a Backend')
  await rejectsWith(() => cpu.compareGraph(cpu, null as any), 'WEFT_INVALID_ARGUMENT', 'compareGraph: graph must be a Graph')
  await rejectsWith(() => x.getAsync(-1), 'WEFT_INVALID_ARGUMENT', 'must not be negative')
  await rejectsWith(() => x.getAsync('0' as any), 'WEFT_INVALID_ARGUMENT', 'getAsync: offset must be a number')
  await rejectsWith(() => x.getAsync(0, 64), 'WEFT_INVALID_ARGUMENT', 'outside tensor')
  // both called while the compute holds the buffer (it lets go when its Promise settles)
  const running = cpu.compute(g)
  const reads = [rejectsWith(() => x.getAsync(), 'WEFT_BUSY'), rejectsWith(() => x.toFloat32Async(), 'WEFT_BUSY')]
  await Promise.all([running, ...reads])
  assert.deepEqual(Array.from(await x.toFloat32Async()), [1, -2, 0.5, 3])
  x.dispose()
  await rejectsWith(() => x.toFloat32Async(), 'WEFT_INVALID_ARGUMENT', 'Tensor has been disposed')
})

for (const name of backendNames()) {
  test(`${name}: an aborted signal stops the compute before its first node`, async () => {
    const backend = Backend.init(name)
    const { nodes, g } = doublingChain(backend, 5)
    const reason = new Error('stop here')
    const controller = new AbortController()
    controller.abort(reason)
    await assert.rejects(backend.compute(g, { signal: controller.signal }), (e: any) => {
      assert.equal(e.name, 'AbortError')
      assert.equal(e.code, 'ABORT_ERR')
      assert.equal(e.cause, reason)
      assert.match(e.message, /compute aborted after 0 of 5 nodes/)
      return true
    })
    for (const t of nodes) assert.deepEqual(Array.from(t.toFloat32()), [-7, -7, -7, -7], 'nothing computed')
    assert.equal(getEventListeners(controller.signal, 'abort').length, 0, 'listener removed')
    // the buffers are free again, and the same graph computes without a signal
    await backend.compute(g)
    assert.deepEqual(Array.from(nodes[4].toFloat32()), [32, -64, 16, 96])
  })

  test(`${name}: onProgress reports in order, the total last, all before the Promise settles`, async () => {
    const backend = Backend.init(name)
    const { nodes, g } = doublingChain(backend, 40)
    const seen: [number, number][] = []
    const controller = new AbortController()
    await backend.compute(g, { signal: controller.signal, onProgress: (done, total) => void seen.push([done, total]) })
    assert.deepEqual(seen[0], [0, 40])
    assert.deepEqual(seen.at(-1), [40, 40])
    assert.ok(seen.every(([d, t], i) => t === 40 && (i === 0 || d > seen[i - 1][0])), JSON.stringify(seen))
    assert.equal(getEventListeners(controller.signal, 'abort').length, 0, 'listener removed')
    assert.deepEqual(Array.from(nodes[39].toFloat32()).map((v) => v / 2 ** 40), [1, -2, 0.5, 3])
  })
}

test('onProgress reports at most once per percent of a long graph', async () => {
  const cpu = Backend.init('CPU')
  const { g } = doublingChain(cpu, 1000)
  let calls = 0
  let last = -1
  await cpu.compute(g, { onProgress: (done) => ((calls += 1), (last = done)) })
  assert.equal(last, 1000)
  assert.ok(calls >= 2 && calls <= 101, `${calls} calls`)
})

test('abort while computing: the Promise rejects with an AbortError before the graph ends', async () => {
  const cpu = Backend.init('CPU:n_threads=1')
  const { g, n } = heavyGraph(cpu)
  const controller = new AbortController()
  let lastDone = 0
  const p = cpu.compute(g, { signal: controller.signal, onProgress: (d) => void (lastDone = d) })
  controller.abort()
  await assert.rejects(p, (e: any) => e.name === 'AbortError' && e.cause?.name === 'AbortError')
  assert.ok(lastDone < n, `stopped at ${lastDone} of ${n} nodes`)
  await cpu.compute(g) // not busy any more
})

test('a throwing onProgress stops the compute and rejects with what it threw', async () => {
  const cpu = Backend.init('CPU')
  const { g } = doublingChain(cpu, 5)
  const boom = new Error('boom')
  await assert.rejects(
    cpu.compute(g, {
      onProgress: () => {
        throw boom
      },
    }),
    (e) => e === boom,
  )
  await cpu.compute(g)
})
