// Benchmarks that print ratios measured in the same run against a peer on this machine:
// elementwise ops against the machine's own memory bandwidth (a plain copy), and matrix
// multiplication against numpy (OpenBLAS) when python3 with numpy is installed.
//
//   npm run bench
import { createRequire } from 'node:module'
import { execFileSync } from 'node:child_process'
import type * as Weft from '../index.js'

const require = createRequire(import.meta.url)
const { Backend, Context }: typeof Weft = require('../index.js')

/** Median seconds of `runs` timed calls after one warm-up. */
async function time(runs: number, f: () => unknown | Promise<unknown>): Promise<number> {
  await f()
  const t: number[] = []
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now()
    await f()
    t.push((performance.now() - t0) / 1000)
  }
  t.sort((a, b) => a - b)
  return t[Math.floor(t.length / 2)]
}

async function elementwise(): Promise<void> {
  const n = 1 << 24 // 64 MiB of f32 per tensor
  const src = new Float32Array(n).fill(1)
  const dst = new Float32Array(n)
  const copySec = await time(5, () => dst.set(src))
  const copyGBs = (2 * n * 4) / copySec / 1e9 // read + write

  const ctx = new Context({ memSize: 1 << 20, noAlloc: true })
  const a = ctx.newTensor1d('f32', n)
  const b = ctx.newTensor1d('f32', n)
  const c = ctx.add(a, b)
  const g = ctx.newGraph()
  g.buildForwardExpand(c)
  const cpu = Backend.init('CPU')
  cpu.allocCtxTensors(ctx)
  const addSec = await time(5, () => cpu.compute(g))
  const addGBs = (3 * n * 4) / addSec / 1e9 // two reads + one write
  console.log(`memory copy (peer):  ${copyGBs.toFixed(2)} GB/s`)
  console.log(`weft CPU add f32:    ${addGBs.toFixed(2)} GB/s   ratio to copy bandwidth: ${(addGBs / copyGBs).toFixed(2)}`)
}

function numpyGflops(n: number): number | null {
  const script = `
import numpy as np, time
n=${n}; a=np.random.rand(n,n).astype(np.float32); b=np.random.rand(n,n).astype(np.float32)
a@b
t=[]
for _ in range(5):
    t0=time.perf_counter(); a@b; t.append(time.perf_counter()-t0)
t.sort(); print(2*n**3/t[2]/1e9)
`
  try {
    // Some machines pin OpenBLAS to an old core type for safety; that slows it down, so the
    // peer runs without those two settings.
    const env = { ...process.env }
    delete env.OPENBLAS_CORETYPE
    delete env.OPENBLAS_L2_SIZE
    const out = execFileSync('python3', ['-c', script], { encoding: 'utf8', env, stdio: ['ignore', 'pipe', 'ignore'] })
    return Number(out)
  } catch {
    return null
  }
}

async function matmul(): Promise<void> {
  const n = 512
  const ctx = new Context({ memSize: 1 << 20, noAlloc: true })
  const a = ctx.newTensor2d('f32', n, n)
  const b = ctx.newTensor2d('f32', n, n)
  const c = ctx.mulMat(a, b)
  const g = ctx.newGraph()
  g.buildForwardExpand(c)
  const cpu = Backend.init('CPU')
  cpu.allocCtxTensors(ctx)
  const sec = await time(5, () => cpu.compute(g))
  const gflops = (2 * n ** 3) / sec / 1e9
  const peer = numpyGflops(n)
  const ratio = peer ? `   ratio to numpy: ${(gflops / peer).toFixed(2)}` : '   (numpy not installed: no peer)'
  if (peer) console.log(`numpy f32 matmul ${n}^3 (peer): ${peer.toFixed(2)} GFLOP/s`)
  console.log(`weft CPU mul_mat f32 ${n}^3:   ${gflops.toFixed(2)} GFLOP/s${ratio}`)
}

async function main(): Promise<void> {
  await elementwise()
  await matmul()
}

main().catch((e) => {
  console.error(e)
  process.exitCode = 1
})
