// Benchmarks that print ratios measured in the same run against a peer on this machine:
// elementwise ops against the machine's own memory bandwidth (a plain copy); an f32 512^3
// matrix product against numpy's sgemm, and every type's n = 1 MUL_MAT (ggml's perf shape)
// as weight bytes/s against an OpenBLAS f32 mat-vec, the two taking turns burst by burst
// (bench/blas-peer.ts), when python3 with numpy is installed: once with one matrix called
// over and over (cached where it fits the last-level cache), once with every weight from
// DRAM (copies cycled, as a model's layers stream theirs).
//
//   npm run bench
//   npm run bench -- --vs-ggml PATH ...   ggml's perf mode against weft's (bench/vs-ggml.ts)
//   npm run bench -- --webgpu [DEVICE]    WebGPU MUL_MAT kernels against their peers (bench/webgpu.ts)
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { totalmem } from 'node:os'
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

/** 16 rows of small random values in `t`'s type (quantized or converted once), to tile `t` with. */
function randomRows(t: Weft.Tensor): Uint8Array {
  const k = t.ne[0]!
  const rows = Math.min(16, t.nrows)
  const data = new Float32Array(k * rows).map(() => Math.random() * 2 - 1)
  if (t.type === 'f32') return new Uint8Array(data.buffer)
  if (t.type === 'f16' || t.type === 'bf16') {
    const conv = t.type === 'f16' ? f32ToF16 : f32ToBf16
    return new Uint8Array(Uint16Array.from(data, conv).buffer)
  }
  return quantize(t.type, data, rows, k, requiresImatrix(t.type) ? new Float32Array(k).fill(1) : null)
}

/** Fill `t` with `rows` (from randomRows) repeated. */
function tile(t: Weft.Tensor, rows: Uint8Array): void {
  for (let off = 0; off < t.nbytes; off += rows.byteLength) t.set(rows.subarray(0, Math.min(rows.byteLength, t.nbytes - off)), off)
}

/** Fill a tensor of any type with small random values: 16 rows quantized (or converted) once, tiled. */
function fillRandom(t: Weft.Tensor): void {
  tile(t, randomRows(t))
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

/** The last-level cache's size in bytes (Linux sysfs), or 64 MiB where it cannot be read. */
function lastLevelCacheBytes(): number {
  const units: Record<string, number> = { K: 1 << 10, M: 1 << 20, G: 1 << 30 }
  let best = 0
  for (let i = 0; i < 8; i++) {
    try {
      const size = readFileSync(`/sys/devices/system/cpu/cpu0/cache/index${i}/size`, 'utf8').trim()
      const m = /^(\d+)([KMG]?)$/.exec(size)
      if (m) best = Math.max(best, Number(m[1]) * (units[m[2]!] ?? 1))
    } catch {
      break
    }
  }
  return best || 64 << 20
}

/**
 * Bytes of distinct weights a DRAM-resident measurement cycles through: three times the
 * last-level cache (so no copy is still cached when its turn comes again), at least 512 MiB,
 * at most an eighth of the machine's memory.
 */
function dramBytes(llc: number): number {
  return Math.min(Math.max(3 * llc, 512 << 20), totalmem() / 8)
}

/**
 * Every type's n = 1 MUL_MAT (ggml's perf shape) as weight bytes/s, against an OpenBLAS f32
 * mat-vec, two ways:
 * - cached: the same matrix call after call, as ggml's perf mode runs it. A quantized
 *   4096 x 14336 matrix (19-62 MB) then stays in a last-level cache of that size (300 MiB
 *   on this project's Intel VM) while OpenBLAS's 235 MB f32 one mostly does not: the ratio
 *   compares a cache's bandwidth with DRAM's there.
 * - DRAM: one graph of R mat-vecs over R different copies of the matrix (R copies about
 *   three times the last-level cache), against numpy cycling through copies of its own, so
 *   every weight comes from memory on both sides, as a model's layers stream theirs: the
 *   ratio a model's token generation sees.
 */
async function matvec(peer: BlasPeer | null, types: readonly Weft.GgmlType[]): Promise<void> {
  const [m, k] = [4096, 14336]
  const cpu = Backend.init('CPU')
  const llc = lastLevelCacheBytes()
  const dram = dramBytes(llc)
  const peerCopies = Math.max(2, Math.ceil(dram / (4 * m * k)))
  console.log(`n=1 MUL_MAT m=${m} k=${k}: weight bytes/s, ratio to OpenBLAS f32 mat-vec in the same run (target >= 0.90)`)
  const mib = (x: number) => `${(x / 2 ** 20).toFixed(0)} MiB`
  console.log(`  cached: one matrix, call after call; DRAM: ${mib(dram)} of copies cycled (last-level cache ${mib(llc)}), numpy ${peerCopies} f32 copies`)
  console.log(`  type        cached: weft   OpenBLAS  ratio    DRAM: weft   OpenBLAS  ratio`)
  const gb = (x: number) => x.toFixed(2).padStart(6)
  for (const type of types) {
    const ctx = new Context({ memSize: 1 << 22, noAlloc: true })
    const b = ctx.newTensor2d('f32', k, 1)
    const first = ctx.newTensor2d(type, k, m)
    const size = first.nbytes
    const copies = Math.max(2, Math.ceil(dram / size))
    const as = [first, ...Array.from({ length: copies - 1 }, () => ctx.newTensor2d(type, k, m))]
    const outs = as.map((a) => ctx.mulMat(a, b))
    const [one, all] = [ctx.newGraph(), ctx.newGraph()]
    one.buildForwardExpand(outs[0]!)
    outs.forEach((o) => all.buildForwardExpand(o))
    const buf = cpu.allocCtxTensors(ctx)
    const rows = randomRows(as[0]!)
    as.forEach((a) => tile(a, rows))
    fillRandom(b)
    const peerWarm = peer ? () => peer.gemv(m, k, BURST) : async () => NaN
    const peerDram = peer ? () => peer.gemvCopies(m, k, peerCopies, 1) : async () => NaN
    const [w, p] = await interleaved(5, () => cpu.compute(one), peerWarm)
    const [wd, pd] = await interleaved(3, () => cpu.compute(all), peerDram)
    const [wb, pb] = [size / w / 1e9, (4 * m * k) / p / 1e9]
    const [wdb, pdb] = [(size * copies) / wd / 1e9, (4 * m * k) / pd / 1e9]
    const ratio = (x: number, y: number) => (peer ? (x / y).toFixed(2) : '   -')
    console.log(
      `  ${type.padEnd(8)}        ${gb(wb)}   ${gb(pb)}   ${ratio(wb, pb)}         ${gb(wdb)}   ${gb(pdb)}   ${ratio(wdb, pdb)}`,
    )
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
