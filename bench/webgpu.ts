// npm run bench -- --webgpu [DEVICE]   (DEVICE defaults to WebGPU0)
//
// The WebGPU MUL_MAT kernels against peers measured in the same run on the same adapter:
//  - the tiled GEMM against the naive one-invocation-per-output kernel it replaced, f32, at
//    one large size (the backend's `matmul` option forces the kernel shape; the two take turns);
//  - the mat-vec kernel (n = 1) as a's bytes/s against a plain copy on the adapter: a
//    CPY node where the device has one, else SCALE by 1 (a shader reading and writing
//    every element), plus the host's memcpy for reference (on lavapipe the adapter is the
//    host CPU). Sizes keep the whole run under two minutes on lavapipe.
import { createRequire } from 'node:module'
import type * as Weft from '../index.js'
import { f32ToF16 } from '../__test__/backend-ops/ggml-types.js'

const require = createRequire(import.meta.url)
const { Backend, Context, quantize }: typeof Weft = require('../index.js')

/** Small random values in t's type: a few rows converted once, tiled over the tensor. */
function fillRandom(t: Weft.Tensor): void {
  const k = t.ne[0]!
  const rows = Math.min(16, t.nrows)
  const data = new Float32Array(k * rows).map(() => Math.random() * 2 - 1)
  let block: Uint8Array
  if (t.type === 'f32') block = new Uint8Array(data.buffer)
  else if (t.type === 'f16') block = new Uint8Array(Uint16Array.from(data, f32ToF16).buffer)
  else block = quantize(t.type, data, rows, k, null)
  for (let off = 0; off < t.nbytes; off += block.byteLength) t.set(block.subarray(0, Math.min(block.byteLength, t.nbytes - off)), off)
}

/** Best seconds of each of `fs` over `rounds` turns (one call each per turn), after a warm-up. */
async function turns(rounds: number, fs: Array<() => Promise<unknown>>): Promise<number[]> {
  for (const f of fs) await f()
  const best = fs.map(() => Infinity)
  for (let r = 0; r < rounds; r++) {
    for (let i = 0; i < fs.length; i++) {
      const t0 = performance.now()
      await fs[i]!()
      best[i] = Math.min(best[i]!, (performance.now() - t0) / 1000)
    }
  }
  return best
}

/** A graph on `gpu` computing `build`'s output; its tensors allocated there. */
function gpuGraph(gpu: Weft.Backend, build: (ctx: Weft.Context) => { inputs: Weft.Tensor[]; out: Weft.Tensor }) {
  const ctx = new Context({ memSize: 1 << 20, noAlloc: true })
  const { inputs, out } = build(ctx)
  const g = ctx.newGraph()
  g.buildForwardExpand(out)
  const buf = gpu.allocCtxTensors(ctx)
  for (const t of inputs) fillRandom(t)
  return {
    out,
    run: () => gpu.compute(g),
    dispose: () => {
      buf?.dispose()
      ctx.dispose()
    },
  }
}

function withShape(gpu: Weft.Backend, shape: string, f: () => Promise<unknown>): () => Promise<unknown> {
  return async () => {
    gpu.setOption('matmul', shape)
    try {
      await f()
    } finally {
      gpu.setOption('matmul', 'auto')
    }
  }
}

async function gemm(gpu: Weft.Backend, n: number): Promise<void> {
  const mm = gpuGraph(gpu, (ctx) => {
    const a = ctx.newTensor2d('f32', n, n)
    const b = ctx.newTensor2d('f32', n, n)
    return { inputs: [a, b], out: ctx.mulMat(a, b) }
  })
  const [naive, tiled] = await turns(3, [withShape(gpu, 'naive', mm.run), withShape(gpu, 'tiled', mm.run)])
  const gf = (s: number) => ((2 * n ** 3) / s / 1e9).toFixed(2)
  console.log(`f32 GEMM ${n}^3: tiled ${gf(tiled!)} GFLOP/s, naive ${gf(naive!)} GFLOP/s   ratio tiled/naive ${(naive! / tiled!).toFixed(2)}`)
  mm.dispose()
}

async function matvec(gpu: Weft.Backend, m: number, k: number): Promise<void> {
  // The copy peer: 64 MiB of f32 read and written.
  const nCopy = 1 << 24
  const host = [new Float32Array(nCopy).fill(1), new Float32Array(nCopy)]
  const [hostSec] = await turns(3, [async () => host[1]!.set(host[0]!)])
  const hostGBs = (2 * nCopy * 4) / hostSec! / 1e9
  let peerName = 'CPY f32'
  const copy = gpuGraph(gpu, (ctx) => {
    const x = ctx.newTensor1d('f32', nCopy)
    const y = ctx.newTensor1d('f32', nCopy)
    const c = ctx.cpy(x, y)
    if (gpu.supportsOp(c)) return { inputs: [x], out: c }
    peerName = 'SCALE f32 x1'
    return { inputs: [x], out: ctx.scale(x, 1) }
  })
  const [copySec] = await turns(5, [copy.run])
  const copyGBs = (2 * nCopy * 4) / copySec! / 1e9
  copy.dispose()
  console.log(`copy on the adapter (${peerName}, 64 MiB): ${copyGBs.toFixed(2)} GB/s   host memcpy: ${hostGBs.toFixed(2)} GB/s`)
  console.log(`n=1 MUL_MAT m=${m} k=${k} (mat-vec kernel): a's bytes/s, ratio to the adapter's copy`)
  for (const type of ['f32', 'f16', 'q8_0', 'q4_0'] as Weft.GgmlType[]) {
    let a!: Weft.Tensor
    const mv = gpuGraph(gpu, (ctx) => {
      a = ctx.newTensor2d(type, k, m)
      const b = ctx.newTensor2d('f32', k, 1)
      return { inputs: [a, b], out: ctx.mulMat(a, b) }
    })
    if (!gpu.supportsOp(mv.out)) {
      console.log(`  ${type.padEnd(6)} not supported on ${gpu.name}`)
      mv.dispose()
      continue
    }
    const fs = [withShape(gpu, 'matvec', mv.run)]
    if (type === 'f32') fs.push(withShape(gpu, 'naive', mv.run))
    const [sec, naiveSec] = await turns(5, fs)
    const gbs = a.nbytes / sec! / 1e9
    const naive = naiveSec ? `   (naive kernel ${(a.nbytes / naiveSec / 1e9).toFixed(2)} GB/s)` : ''
    console.log(`  ${type.padEnd(6)} ${gbs.toFixed(2).padStart(7)} GB/s   ratio ${(gbs / copyGBs).toFixed(2)}${naive}`)
    mv.dispose()
  }
}

export async function webgpuBench(argv: string[]): Promise<number> {
  const name = argv.find((x) => !x.startsWith('--')) ?? 'WebGPU0'
  const dev = Backend.devices().find((d) => d.name === name)
  if (!dev) {
    console.error(`no device ${name}: ${Backend.devices().map((d) => d.name).join(', ')}`)
    return 1
  }
  console.log(`${name}: ${dev.description}  shader_f16=${dev.properties.shader_f16 ?? '?'}  WEFT_WEBGPU_DISABLE=${process.env.WEFT_WEBGPU_DISABLE ?? ''}`)
  const gpu = Backend.init(name)
  const t0 = performance.now()
  await gemm(gpu, 512)
  await matvec(gpu, 4096, 4096)
  console.log(`(bench ran ${((performance.now() - t0) / 1000).toFixed(1)} s)`)
  gpu.dispose()
  return 0
}
