// Helpers of the Scheduler tests: the small graph most of them run, built from the same
// values in a scheduler's graph (weights placed by the test, inputs left to the scheduler)
// and in a CPU-only reference computed by Backend.compute.
import type * as Weft from '../index.js'
import { weft, randomFloats, backendNames } from './helpers.ts'

const { Context, Backend } = weft

export const hasGpu = backendNames().includes('WebGPU0')

export interface Net {
  ctx: Weft.Context
  x: Weft.Tensor
  w: Weft.Tensor
  g: Weft.Tensor
  mm: Weft.Tensor
  h: Weft.Tensor
  sm: Weft.Tensor
  v: Weft.Tensor
  out: Weft.Tensor
  graph: Weft.Graph
  buffers: Weft.BackendBuffer[]
}

/** x: [8, nTok] input; w: [8, 4] weights; g: [4] gain.
 *  mm = w·x, h = mm * g, sm = softMax(h), v = reshape(sm) to one row, out = 2 v. */
function build(ctx: Weft.Context, wctx: Weft.Context, gctx: Weft.Context, nTok: number): Omit<Net, 'buffers'> {
  const x = ctx.newTensor2d('f32', 8, nTok)
  const w = wctx.newTensor2d('f32', 8, 4)
  const g = gctx.newTensor1d('f32', 4)
  const mm = ctx.mulMat(w, x)
  const h = ctx.mul(mm, g)
  const sm = ctx.softMax(h)
  const v = ctx.reshape2d(sm, 4 * nTok, 1)
  const out = ctx.scale(v, 2)
  const names: [Weft.Tensor, string][] = [[x, 'x'], [w, 'w'], [g, 'g'], [mm, 'mm'], [h, 'h'], [sm, 'sm'], [v, 'v'], [out, 'out']]
  for (const [t, n] of names) t.name = n
  const graph = ctx.newGraph()
  graph.buildForwardExpand(out)
  return { ctx, x, w, g, mm, h, sm, v, out, graph }
}

const ctxOf = () => new Context({ memSize: 1 << 20, noAlloc: true })

/** The graph with w in a `wOn` buffer and g in a `gOn` buffer (both usage 'weights'), and x
 *  an unallocated graph input. */
export function placedNet(wOn: Weft.Backend, gOn: Weft.Backend, nTok: number): Net {
  const [wctx, gctx] = [ctxOf(), ctxOf()]
  const n = build(ctxOf(), wctx, gctx, nTok)
  n.x.setInput()
  n.out.setOutput()
  const buffers = [wOn.allocCtxTensors(wctx)!, gOn.allocCtxTensors(gctx)!]
  for (const b of buffers) b.usage = 'weights'
  n.w.fromFloat32(randomFloats(32, 1))
  n.g.fromFloat32(randomFloats(4, 2))
  return { ...n, buffers }
}

/** Every node's values computed by the CPU backend alone, by name. */
export async function reference(nTok: number, x: Float32Array): Promise<Map<string, Float32Array>> {
  const ctx = ctxOf()
  const n = build(ctx, ctx, ctx, nTok)
  const cpu = Backend.init('CPU')
  cpu.allocCtxTensors(ctx)
  n.x.fromFloat32(x)
  n.w.fromFloat32(randomFloats(32, 1))
  n.g.fromFloat32(randomFloats(4, 2))
  await cpu.compute(n.graph)
  return new Map([n.mm, n.h, n.sm, n.v, n.out].map((t) => [t.name, t.toFloat32()]))
}

/** Each split as [backend, input names, node names]. */
export function splitList(s: Weft.Scheduler): [string, string[], string[]][] {
  return s.splits().map((sp) => [sp.backend, sp.inputs.map((t) => t.name), sp.nodes.map((n) => n.tensor.name)])
}

/** [backend, cause] of a tensor in the last split. */
export function placement(s: Weft.Scheduler, t: Weft.Tensor): [string, string] {
  for (const sp of s.splits()) {
    for (const n of sp.nodes) {
      if (n.tensor.name === t.name) return [n.tensor.backend, n.tensor.cause]
      for (const src of n.srcs) if (src.name === t.name) return [src.backend, src.cause]
    }
  }
  return [s.getTensorBackend(t)?.name ?? '', '']
}
