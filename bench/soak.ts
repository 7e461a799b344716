// Soak: does memory stay flat over many compute loops? On every backend, two loops:
//  - dispose: build a small graph, allocate, fill, compute, read, then dispose everything;
//    prints the RSS and V8 external-memory slopes (bytes per iteration, least squares
//    after a warm-up). Target: RSS slope under 100 B/iteration over 100,000 iterations.
//  - gc-only: the same with 8 MiB tensors and no dispose at all, so only garbage collection
//    frees them (weft reports native memory to V8); prints the peak RSS. Target: under 1 GiB.
//
//   npm run soak -- [--iterations 100000] [--gc-iterations 1000] [--backends CPU,WebGPU0]
import { createRequire } from 'node:module'
import { parseArgs } from 'node:util'
import type * as Weft from '../index.js'

const require = createRequire(import.meta.url)
const weft: typeof Weft = require('../index.js')

const { values } = parseArgs({
  options: {
    iterations: { type: 'string', default: '100000' },
    'gc-iterations': { type: 'string', default: '1000' },
    backends: { type: 'string' },
  },
})
const MiB = 1 << 20

/** Least-squares slope of y over x. */
function slope(xs: number[], ys: number[]): number {
  const n = xs.length
  const mx = xs.reduce((a, b) => a + b, 0) / n
  const my = ys.reduce((a, b) => a + b, 0) / n
  let num = 0
  let den = 0
  for (let i = 0; i < n; i++) {
    num += (xs[i] - mx) * (ys[i] - my)
    den += (xs[i] - mx) ** 2
  }
  return den > 0 ? num / den : 0
}

interface Samples {
  at: number[]
  rss: number[]
  external: number[]
  peak: number
}

function sampler(): Samples & { take(i: number): void } {
  const s = {
    at: [] as number[],
    rss: [] as number[],
    external: [] as number[],
    peak: 0,
    take(i: number) {
      const m = process.memoryUsage()
      s.at.push(i)
      s.rss.push(m.rss)
      s.external.push(m.external + m.arrayBuffers)
      s.peak = Math.max(s.peak, m.rss)
    },
  }
  return s
}

/** One iteration: a graph over `n` floats on `backend`; everything disposed if `dispose`. */
async function iteration(be: Weft.Backend, n: number, dispose: boolean, i: number): Promise<void> {
  const ctx = new weft.Context({ memSize: MiB, noAlloc: true })
  const a = ctx.newTensor1d('f32', n)
  const b = ctx.newTensor1d('f32', n)
  const y = ctx.mul(ctx.add(a, b), a)
  const g = ctx.newGraph()
  g.buildForwardExpand(y)
  const buf = be.allocCtxTensors(ctx)!
  if (n <= 4096) {
    a.fromFloat32(new Float32Array(n).fill(i % 7))
    b.fromFloat32(new Float32Array(n).fill(1))
  } else {
    a.memset(i & 63) // big tensors: touch every page without a JS-side copy
    b.memset(1)
  }
  await be.compute(g)
  const head = y.get(0, 16)
  if (head.length !== 16) throw new Error('short read')
  if (dispose) {
    buf.dispose()
    g.dispose()
    for (const t of [a, b, y]) t.dispose()
    ctx.dispose()
  }
}

async function soak(name: string, iterations: number, n: number, dispose: boolean): Promise<Samples> {
  const be = weft.Backend.init(name)
  const s = sampler()
  const every = Math.max(1, Math.floor(iterations / 400))
  const warmup = Math.floor(iterations / 10)
  for (let i = 0; i < iterations; i++) {
    await iteration(be, n, dispose, i)
    if (i >= warmup && i % every === 0) s.take(i)
  }
  s.take(iterations)
  be.dispose()
  return s
}

async function main(): Promise<void> {
  const names = values.backends
    ? values.backends.split(',')
    : weft.Backend.devices()
        .map((d) => d.name)
        .filter((n) => n === 'CPU' || n === 'WebGPU0')
  const iters = Number(values.iterations)
  const gcIters = Number(values['gc-iterations'])
  for (const name of names) {
    const t0 = performance.now()
    const d = await soak(name, iters, 1024, true)
    const sec = (performance.now() - t0) / 1000
    console.log(
      `soak ${name} dispose: ${iters} iterations in ${sec.toFixed(0)} s: RSS slope ${slope(d.at, d.rss).toFixed(1)} B/iteration ` +
        `(${(d.rss[0] / MiB).toFixed(0)} -> ${(d.rss[d.rss.length - 1] / MiB).toFixed(0)} MiB), ` +
        `V8 external slope ${slope(d.at, d.external).toFixed(1)} B/iteration [target: RSS slope < 100]`,
    )
    const t1 = performance.now()
    const g = await soak(name, gcIters, 2 * MiB, false) // 2M floats: 8 MiB per tensor
    const gsec = (performance.now() - t1) / 1000
    console.log(
      `soak ${name} gc-only (8 MiB tensors, never disposed): ${gcIters} iterations in ${gsec.toFixed(0)} s: ` +
        `peak RSS ${(g.peak / MiB).toFixed(0)} MiB, RSS slope ${slope(g.at, g.rss).toFixed(0)} B/iteration [target: peak < 1024 MiB]`,
    )
  }
}

void main()
