// Benchmarks that print ratios measured in the same run against a peer on this machine:
// elementwise ops against the machine's own memory bandwidth (a plain copy); an f32 512^3
// matrix product against numpy's sgemm, and every type's n = 1 MUL_MAT (ggml's perf shape)
// as weight bytes/s against an OpenBLAS f32 mat-vec, the two taking turns burst by burst
// (bench/blas-peer.ts), when python3 with numpy is installed.
//
//   npm run bench
//   npm run bench -- --vs-ggml PATH ...   ggml's perf mode against weft's (bench/vs-ggml.ts)
//   npm run bench -- --webgpu [DEVICE]    WebGPU MUL_MAT kernels against their peers (bench/webgpu.ts)
import { createRequire } from 'node:module'
import type * as Weft from '../index.js'
import { ALL_TYPES, f32ToBf16, f32ToF16 } from '../__test__/backend-ops/ggml-types.js'
import { BlasPeer } from './blas-peer.js'

const require = createRequire(import.meta.url)
const { Backend, Context, quantize, requiresImatrix }: typeof Weft = require('../index.js')

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

/**
 * A pause between the two sides' calls. OpenBLAS's idle threads spin for up to 2^28 cycles
 * after a call (its THREAD_TIMEOUT default) and rayon's briefly too; on a 2-core machine a
 * call made while the other side spins shares the cores with it (measured: every weft n=1
 * case 1.3-2.7x slower right after an OpenBLAS call). ggml's side by side run holds the
 * other process with SIGSTOP for the same reason.
 */
const settle = () => new Promise((r) => setTimeout(r, 150))

/**
 * Calls a side per turn. A product's speed is its speed in a burst, as inside a model's
 * forward pass: a single call after the settling pause also timed the threads' wake-up and
 * the idle cores' return to speed (either side's), a fixed cost (measured: the best call
 * after 150 ms idle against the best of calls back to back, q4_0 mat-vec 1.90 / 1.63 ms,
 * q4_K 1.35 / 0.96, f32 7.31 / 6.89) that weighed on a 1-3 ms quantized mat-vec far more
 * than on OpenBLAS's 8 ms f32 one.
 */
const BURST = 3

/**
 * Best seconds of weft and of the peer over `rounds` turns. Each turn weft makes `BURST`
 * calls in a row, each timed, and the peer times its own (the `peer` callback returns the
 * best of its burst of `BURST`).
 */
async function interleaved(rounds: number, weft: () => Promise<unknown>, peer: () => Promise<number>): Promise<[number, number]> {
  await weft()
  await peer()
  let [w, p] = [Infinity, Infinity]
  for (let r = 0; r < rounds; r++) {
    await settle()
    for (let c = 0; c < BURST; c++) {
      const t0 = performance.now()
      await weft()
      w = Math.min(w, (performance.now() - t0) / 1000)
    }
    await settle()
    p = Math.min(p, await peer())
  }
  return [w, p]
}

/** A graph of one MUL_MAT of an [k, m] `type` matrix by an [k, n] f32 one, allocated on the CPU. */
function mulMatGraph(cpu: Weft.Backend, type: Weft.GgmlType, m: number, n: number, k: number) {
  const ctx = new Context({ memSize: 1 << 20, noAlloc: true })
  const a = ctx.newTensor2d(type, k, m)
  const b = ctx.newTensor2d('f32', k, n)
  const g = ctx.newGraph()
  g.buildForwardExpand(ctx.mulMat(a, b))
  const buf = cpu.allocCtxTensors(ctx)
  return { ctx, a, b, g, buf }
}

/** Fill a tensor of any type with small random values: 16 rows quantized (or converted) once, tiled. */
function fillRandom(t: Weft.Tensor): void {
  const k = t.ne[0]!
  const rows = Math.min(16, t.nrows)
  const data = new Float32Array(k * rows).map(() => Math.random() * 2 - 1)
  let block: Uint8Array
  if (t.type === 'f32') block = new Uint8Array(data.buffer)
  else if (t.type === 'f16' || t.type === 'bf16') {
    const conv = t.type === 'f16' ? f32ToF16 : f32ToBf16
    block = new Uint8Array(Uint16Array.from(data, conv).buffer)
  } else block = quantize(t.type, data, rows, k, requiresImatrix(t.type) ? new Float32Array(k).fill(1) : null)
  for (let off = 0; off < t.nbytes; off += block.byteLength) t.set(block.subarray(0, Math.min(block.byteLength, t.nbytes - off)), off)
}

async function matmul(peer: BlasPeer | null): Promise<void> {
  const n = 512
  const cpu = Backend.init('CPU')
  const { a, b, g } = mulMatGraph(cpu, 'f32', n, n, n)
  fillRandom(a)
  fillRandom(b)
  if (!peer) {
    const sec = await time(5, () => cpu.compute(g))
    console.log(`weft CPU mul_mat f32 ${n}^3: ${((2 * n ** 3) / sec / 1e9).toFixed(2)} GFLOP/s   (numpy not installed: no peer)`)
    return
  }
  const [w, p] = await interleaved(20, () => cpu.compute(g), () => peer.gemm(n, BURST))
  const [wg, pg] = [(2 * n ** 3) / w / 1e9, (2 * n ** 3) / p / 1e9]
  console.log(`f32 GEMM ${n}^3: weft ${wg.toFixed(1)} GFLOP/s, numpy/OpenBLAS sgemm ${pg.toFixed(1)} GFLOP/s   ratio ${(wg / pg).toFixed(2)} (target >= 0.90)`)
}

/** Every type's n = 1 MUL_MAT (ggml's perf shape) as weight bytes/s, against an OpenBLAS f32 mat-vec. */
async function matvec(peer: BlasPeer | null, types: readonly Weft.GgmlType[]): Promise<void> {
  const [m, k] = [4096, 14336]
  const cpu = Backend.init('CPU')
  console.log(`n=1 MUL_MAT m=${m} k=${k}: weight bytes/s, ratio to OpenBLAS f32 mat-vec in the same run (target >= 0.90)`)
  for (const type of types) {
    const { a, b, g, buf, ctx } = mulMatGraph(cpu, type, m, 1, k)
    fillRandom(a)
    fillRandom(b)
    const peerCall = peer ? () => peer.gemv(m, k, BURST) : async () => NaN
    const [w, p] = await interleaved(5, () => cpu.compute(g), peerCall)
    const [wb, pb] = [a.nbytes / w / 1e9, (4 * m * k) / p / 1e9]
    const ratio = peer ? `   ratio ${(wb / pb).toFixed(2)}` : ''
    console.log(`  ${type.padEnd(8)} weft ${wb.toFixed(2).padStart(6)} GB/s   OpenBLAS sgemv ${peer ? pb.toFixed(2).padStart(6) : '     -'} GB/s${ratio}`)
    buf?.dispose()
    ctx.dispose()
  }
}

async function main(): Promise<void> {
  const peer = BlasPeer.start()
  try {
    await elementwise()
    await matmul(peer)
    await matvec(peer, ALL_TYPES)
  } finally {
    peer?.close()
  }
}

const argv = process.argv.slice(2)
if (argv[0] === '--webgpu') {
  // npm run bench -- --webgpu [DEVICE]: the WebGPU MUL_MAT kernels (bench/webgpu.ts)
  import('./webgpu.js')
    .then(async ({ webgpuBench }) => {
      process.exitCode = await webgpuBench(argv.slice(1))
    })
    .catch((e) => {
      console.error(e)
      process.exitCode = 1
    })
} else if (argv.length > 0) {
  // npm run bench -- --vs-ggml PATH ...: the side-by-side run against ggml's perf mode
  import('./vs-ggml.js')
    .then(async ({ parseVsArgs, vsGgml }) => {
      const o = parseVsArgs(argv)
      if (typeof o === 'string') {
        console.error(o)
        process.exitCode = 1
        return
      }
      process.exitCode = await vsGgml(o)
    })
    .catch((e) => {
      console.error(e)
      process.exitCode = 1
    })
} else {
  main().catch((e) => {
    console.error(e)
    process.exitCode = 1
  })
}
