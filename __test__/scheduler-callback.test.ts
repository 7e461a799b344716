// The Scheduler's eval callback (called on the JS thread while the compute waits), the
// event loop staying live during a scheduled compute, the buffers it holds, and the
// eval-callback and quickstart examples.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { weft, randomFloats, assertClose } from './helpers.ts'
import { hasGpu, placedNet, reference } from './sched-helpers.ts'

const { Context, Backend, Scheduler } = weft
const gpuTest = hasGpu ? test : test.skip
const busy = (e: any) => e.code === 'WEFT_BUSY'

// The graph of scheduler.test.ts: splits [CPU mm] [WebGPU0 h sm v out]. Asked about
// every node in graph order, views too; each wanted node shown once computed.
gpuTest('the eval callback sees every node in order with its data', async () => {
  const [gpu, cpu] = [Backend.init('WebGPU0'), Backend.init('CPU')]
  const sched = new Scheduler({ backends: [gpu, cpu] })
  const n = placedNet(cpu, gpu, 3)
  const calls: string[] = []
  const seen = new Map<string, Float32Array>()
  sched.setEvalCallback((t, ask) => {
    calls.push(`${t.name}:${ask ? 'ask' : 'see'}`)
    if (!ask) seen.set(t.name, t.toFloat32())
    return true
  })
  sched.allocGraph(n.graph)
  const x = randomFloats(24, 40)
  n.x.fromFloat32(x)
  await sched.compute(n.graph)
  assert.deepEqual(calls, ['mm', 'h', 'sm', 'v', 'out'].flatMap((s) => [`${s}:ask`, `${s}:see`]))
  const ref = await reference(3, x)
  for (const [name, want] of ref) assertClose(seen.get(name)!, want, 1e-5, name)

  // Only some nodes wanted: the others run in one go with the next wanted one.
  calls.length = 0
  sched.setEvalCallback((t, ask) => {
    calls.push(`${t.name}:${ask ? 'ask' : 'see'}`)
    return ask ? t.name === 'sm' : undefined // undefined after: go on
  })
  await sched.compute(n.graph)
  assert.deepEqual(calls, ['mm:ask', 'h:ask', 'sm:ask', 'sm:see', 'v:ask', 'out:ask'])
  assertClose(n.out.toFloat32(), ref.get('out')!, 1e-5, 'out')
})

gpuTest('returning false stops the compute; a throw rejects its Promise with what was thrown', async () => {
  const [gpu, cpu] = [Backend.init('WebGPU0'), Backend.init('CPU')]
  const sched = new Scheduler({ backends: [gpu, cpu] })
  const n = placedNet(cpu, gpu, 3)
  sched.allocGraph(n.graph)
  n.x.fromFloat32(randomFloats(24, 41))
  const calls: string[] = []
  sched.setEvalCallback((t, ask) => {
    calls.push(`${t.name}:${ask ? 'ask' : 'see'}`)
    return ask || t.name !== 'h' // stop once h is seen
  })
  await sched.compute(n.graph)
  assert.deepEqual(calls, ['mm:ask', 'mm:see', 'h:ask', 'h:see'])
  // sm and out never ran: out does not hold the result.
  const ref = (await reference(3, randomFloats(24, 41))).get('out')!
  assert.ok(n.out.toFloat32().some((v, i) => Math.abs(v - ref[i]) > 1e-3))

  const boom = new RangeError('boom')
  sched.setEvalCallback((t, ask) => {
    if (!ask && t.name === 'sm') throw boom
  })
  await assert.rejects(sched.compute(n.graph), (e: unknown) => e === boom)
  // Settled: the scheduler and the buffers are free again.
  n.x.fromFloat32(randomFloats(24, 42))
  sched.setEvalCallback(null)
  await sched.compute(n.graph)
  // A throw of a non-Error comes back as is too.
  sched.setEvalCallback(() => {
    throw 'plain string'
  })
  await assert.rejects(sched.compute(n.graph), (e: unknown) => e === 'plain string')
})

// While a scheduled compute runs, everything it uses refuses JS reads, writes and
// dispose, and the scheduler refuses changes; inside the eval callback the node shown
// (and its sources) can be read, nothing else, and nothing written.
gpuTest('buffers a scheduled compute uses are guarded; the shown node is readable', async () => {
  const [gpu, cpu] = [Backend.init('WebGPU0'), Backend.init('CPU')]
  const sched = new Scheduler({ backends: [gpu, cpu] })
  const n = placedNet(cpu, gpu, 3)
  sched.allocGraph(n.graph)
  n.x.fromFloat32(randomFloats(24, 43))
  const inside: string[] = []
  sched.setEvalCallback((t, ask) => {
    if (ask) return t.name === 'h'
    const tryIt = (what: string, f: () => unknown) => {
      try {
        f()
        inside.push(`${what}:ok`)
      } catch (e: any) {
        inside.push(`${what}:${e.code}`)
      }
    }
    tryIt('read h', () => t.toFloat32())
    tryIt('read src mm', () => t.src(0)!.toFloat32())
    tryIt('read out', () => n.out.toFloat32())
    tryIt('write h', () => t.fromFloat32(new Float32Array(12)))
    tryIt('write x', () => n.x.fromFloat32(new Float32Array(24)))
    tryIt('dispose weights', () => n.buffers[0].dispose())
    tryIt('nSplits', () => sched.nSplits)
    tryIt('allocGraph', () => sched.allocGraph(n.graph))
    return true
  })
  const p = sched.compute(n.graph)
  assert.throws(() => n.x.fromFloat32(new Float32Array(24)), busy)
  assert.throws(() => n.out.toFloat32(), busy)
  assert.throws(() => n.buffers[1].dispose(), busy)
  assert.throws(() => sched.reset(), busy)
  assert.throws(() => sched.dispose(), busy)
  assert.equal(sched.nSplits, 2) // queries answer from the state the compute began with
  await assert.rejects(sched.compute(n.graph), busy)
  await p
  assert.deepEqual(inside, [
    'read h:ok',
    'read src mm:ok',
    'read out:WEFT_BUSY',
    'write h:WEFT_BUSY',
    'write x:WEFT_BUSY',
    'dispose weights:WEFT_BUSY',
    'nSplits:ok',
    'allocGraph:WEFT_BUSY',
  ])
  assert.equal(n.out.toFloat32().length, 12) // free again
  sched.dispose()
  assert.throws(() => n.out.toFloat32(), /released/) // the compute buffers are gone
})

test('the event loop stays live during a scheduled compute', async () => {
  const cpu = Backend.init('CPU')
  const backends = hasGpu ? [Backend.init('WebGPU0'), cpu] : [cpu]
  const nn = 512
  const wctx = new Context({ memSize: 1 << 20, noAlloc: true })
  const w = wctx.newTensor2d('f32', nn, nn)
  // Host weights; with a GPU, a batch of 512 is offloaded to it (copies, then WebGPU).
  cpu.allocCtxTensors(wctx)!.usage = 'weights'
  w.fromFloat32(randomFloats(nn * nn, 44))
  const ctx = new Context({ memSize: 1 << 20, noAlloc: true })
  const x = ctx.newTensor2d('f32', nn, nn)
  x.setInput()
  let t = x
  for (let i = 0; i < 4; i++) t = ctx.mulMat(w, t)
  const g = ctx.newGraph()
  g.buildForwardExpand(t)
  const sched = new Scheduler({ backends })
  sched.allocGraph(g)
  x.fromFloat32(randomFloats(nn * nn, 45))
  let ticks = 0
  const timer = setInterval(() => ticks++, 5)
  const t0 = performance.now()
  await sched.compute(g)
  const ms = performance.now() - t0
  clearInterval(timer)
  assert.ok(ms > 20, `compute took ${ms} ms: too short to observe`)
  assert.ok(ticks >= Math.min(3, Math.floor(ms / 20)), `${ticks} timer ticks in ${ms.toFixed(0)} ms`)
})

function runExample(script: string): { status: number | null; out: string } {
  const r = spawnSync(process.execPath, ['--import', 'tsx', script], { encoding: 'utf8', timeout: 120_000 })
  return { status: r.status, out: r.stdout + r.stderr }
}

test('the eval-callback example prints every node of its graph', () => {
  const { status, out } = runExample('examples/eval-callback/main.ts')
  assert.equal(status, 0, out)
  for (const name of ['logits', 'probs', 'out']) assert.match(out, new RegExp(`ggml_debug: +${name} = \\(f32\\)`), out)
  assert.match(out, /sum = /)
  assert.match(out, /## SPLIT #0/)
})

test('the quickstart runs its graph through a Scheduler over every device', () => {
  const { status, out } = runExample('examples/quickstart/main.ts')
  assert.equal(status, 0, out)
  assert.match(out, /## SPLIT #0/)
  assert.match(out, /scheduler vs CPU: max \|diff\| = .* \(equal within 1e-5\)/)
})
