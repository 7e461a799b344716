// weft quickstart: list the devices, build a small two-layer ggml graph, and run it
// through a Scheduler over every device (GPUs first, the CPU last), with each layer's
// weights on a different device; print how the scheduler split the graph and compare the
// result with the CPU backend alone.
//
//   npm start
import { createRequire } from 'node:module'
import type * as Weft from '../../index.js'

const require = createRequire(import.meta.url)
const { Backend, Context, Scheduler }: typeof Weft = require('../../index.js')

// x: 4 tokens of 8 features. h = rmsNorm(w1 x); out = softMax(w2 h / sqrt(8)).
const [nIn, nHid, nOut, nTok] = [8, 8, 6, 4]
const x0 = Float32Array.from({ length: nIn * nTok }, (_, i) => Math.sin(i))
const w10 = Float32Array.from({ length: nIn * nHid }, (_, i) => Math.cos(i * 0.7))
const w20 = Float32Array.from({ length: nHid * nOut }, (_, i) => Math.sin(i * 0.3 + 1))

/** The graph, with w1 and w2 made in their own contexts so each can live on a device. */
function build(ctx: Weft.Context, c1: Weft.Context, c2: Weft.Context) {
  const x = ctx.newTensor2d('f32', nIn, nTok)
  const w1 = c1.newTensor2d('f32', nIn, nHid)
  const w2 = c2.newTensor2d('f32', nHid, nOut)
  const h = ctx.rmsNorm(ctx.mulMat(w1, x), 1e-6)
  const out = ctx.softMax(ctx.scale(ctx.mulMat(w2, h), 1 / Math.sqrt(nIn)))
  const named: [Weft.Tensor, string][] = [[x, 'x'], [w1, 'w1'], [w2, 'w2'], [h, 'h'], [out, 'out']]
  for (const [t, n] of named) t.name = n
  const graph = ctx.newGraph()
  graph.buildForwardExpand(out)
  return { x, w1, w2, out, graph }
}

const newCtx = () => new Context({ memSize: 1 << 20, noAlloc: true })

async function main(): Promise<void> {
  console.log('devices:')
  for (const d of Backend.devices()) {
    const gib = (d.memoryTotal / 2 ** 30).toFixed(1)
    console.log(`  ${d.name.padEnd(8)} ${d.type.padEnd(4)} ${d.description} (${gib} GiB)`)
  }

  // The reference: the CPU backend alone.
  const cpu = Backend.init('CPU')
  const rctx = newCtx()
  const ref = build(rctx, rctx, rctx)
  cpu.allocCtxTensors(rctx)
  ref.x.fromFloat32(x0)
  ref.w1.fromFloat32(w10)
  ref.w2.fromFloat32(w20)
  await cpu.compute(ref.graph)
  const want = ref.out.toFloat32()

  // The scheduler: every device, GPUs first (priority order), the CPU last. Layer 1's
  // weights go to the first device, layer 2's to the last GPU (the CPU if there is none).
  const names = Backend.devices().map((d) => d.name)
  const backends = [...names.filter((n) => n !== 'CPU'), 'CPU'].map((n) => (n === 'CPU' ? cpu : Backend.init(n)))
  const gpus = backends.slice(0, -1)
  const [dev1, dev2] = [backends[0], gpus.length > 0 ? gpus[gpus.length - 1] : cpu]
  const [c1, c2] = [newCtx(), newCtx()]
  const net = build(newCtx(), c1, c2)
  for (const [c, dev] of [[c1, dev1], [c2, dev2]] as const) dev.allocCtxTensors(c)!.usage = 'weights'
  net.w1.fromFloat32(w10)
  net.w2.fromFloat32(w20)
  net.x.setInput()

  const sched = new Scheduler({ backends })
  sched.allocGraph(net.graph) // assign, split, place; then set the inputs
  net.x.fromFloat32(x0)
  const t0 = performance.now()
  await sched.compute(net.graph)
  const ms = performance.now() - t0
  const got = net.out.toFloat32()

  console.log(`\nscheduler over ${backends.map((b) => b.name).join(', ')}: ${sched.nSplits} split(s)`)
  console.log(`  w1 on ${dev1.name}, w2 on ${dev2.name}; x is a graph input (the CPU's)`)
  for (const [i, s] of sched.splits().entries()) {
    const inputs = s.inputs.map((t) => `${t.name} from ${t.backend}`).join(', ') || 'none'
    console.log(`  split ${i} on ${s.backend}: inputs copied in: ${inputs}`)
    for (const n of s.nodes) console.log(`    ${n.op.padEnd(9)} ${n.tensor.name.padEnd(8)} (${n.tensor.cause})`)
  }
  console.log('\nas GGML_SCHED_DEBUG=2 prints it:')
  console.log(sched.describe(true))

  console.log(`softMax(w2 rmsNorm(w1 x) / sqrt(${nIn})), token 0 (${nOut} values):`)
  const row = (v: Float32Array) => Array.from(v.slice(0, nOut), (x) => x.toFixed(5).padStart(8)).join(' ')
  console.log(`  CPU alone  ${row(want)}`)
  console.log(`  scheduler  ${row(got)}   (${ms.toFixed(2)} ms)`)
  const maxDiff = got.reduce((m, v, i) => Math.max(m, Math.abs(v - want[i])), 0)
  const ok = maxDiff <= 1e-5
  console.log(`  scheduler vs CPU: max |diff| = ${maxDiff.toExponential(2)} ${ok ? '(equal within 1e-5)' : '(MISMATCH)'}`)
  if (!ok) process.exitCode = 1
  sched.dispose()
}

main().catch((e) => {
  console.error(e)
  process.exitCode = 1
})
