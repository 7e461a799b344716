// One batch of the kernel fuzzer, run in its own process by run.ts: mostly-valid random
// graphs over every Context op (every method index.d.ts declares that takes a Tensor,
// round robin so each batch covers them all) and every tensor type, computed on every
// backend (CPU, WebGPU0). Shapes are small and mostly compatible, so most graphs pass the
// ops' shape checks and reach the kernels; index tensors sometimes point out of range.
// CPU and WebGPU0 results are compared (a count of disagreements, not a failure: some ops
// have no GPU kernel and tolerances differ by op).
//   node --import tsx __test__/fuzz/kernel-worker.ts --seed 1 --graphs 100 [--journal FILE]
import { parseArgs } from 'node:util'
import ts from 'typescript'
import type { Backend, Context, Tensor } from '../../index.js'
import { weft } from '../helpers.ts'
import { loadApiModel, type Member } from './api-model.ts'
import { exitOnHang, Journal, newTally, record, settle, type Tally } from './outcome.ts'
import { FuzzRng, ObjectPool, ValueMaker } from './values.ts'

const { values: opts } = parseArgs({
  options: {
    seed: { type: 'string', default: '1' },
    graphs: { type: 'string', default: '60' },
    journal: { type: 'string' },
  },
})
const seed = Number(opts.seed)
const model = loadApiModel()
const journal = new Journal(opts.journal)
const tally = newTally()
const backends = weft.Backend.devices()
  .map((d) => d.name)
  .filter((n) => n === 'CPU' || n === 'WebGPU0')
const traits = weft.typeTraits()
const blck = new Map(traits.map((t) => [t.name, t.blckSize]))

/** Every op: Context methods with a Tensor parameter. */
const ops: Member[] = model.members.filter(
  (m) => m.className === 'Context' && m.kind === 'method' && m.params.some((p) => p.type.getText().startsWith('Tensor')),
)
const TYPES = traits.map((t) => t.name)

/** How to make one argument: a tensor of a shape and type, or a plain value. */
type ArgSpec = { tensor: { ty: string; ne: number[]; data: number } } | { value: unknown } | { absent: true }

interface Recipe {
  op: string
  args: ArgSpec[]
}

function isTensorType(t: ts.TypeNode): boolean {
  return t.getText().startsWith('Tensor')
}

/** A shape around `base`: the same, broadcastable, transposed or random. */
function shapeLike(rng: FuzzRng, base: number[], ty: string): number[] {
  const b = blck.get(ty) ?? 1
  let ne: number[]
  const r = rng.unit()
  if (r < 0.6) ne = [...base]
  else if (r < 0.75) ne = base.map((d, i) => (i > 0 && rng.chance(0.5) ? 1 : d))
  else if (r < 0.85) ne = [base[1], base[0], base[2], base[3]]
  else ne = [rng.int(1, 9), rng.int(1, 5), rng.int(1, 3), rng.int(1, 2)]
  ne[0] = Math.max(b, Math.ceil(ne[0] / b) * b) // whole blocks
  return ne
}

function recipe(rng: FuzzRng, op: Member): Recipe {
  const ty = rng.chance(0.5) ? 'f32' : rng.pick(TYPES)
  const b = blck.get(ty) ?? 1
  const base = [b * rng.int(1, 3) * (b === 1 ? rng.int(1, 4) : 1), rng.int(1, 5), rng.int(1, 3), rng.int(1, 2)]
  if (rng.chance(0.04)) base[rng.int(0, 3)] = 0
  const maker = new ValueMaker(model, rng, new ObjectPool(), 0)
  let first = true
  const args: ArgSpec[] = op.params.map((p) => {
    if (isTensorType(p.type)) {
      if (p.optional && rng.chance(0.5)) return { absent: true }
      if (!first && rng.chance(0.15)) {
        // Indices and positions (getRows, rope, mulMatId): an i32 vector as long as a dim.
        return { tensor: { ty: 'i32', ne: [rng.pick(base.slice(1, 3))], data: rng.nextU32() } }
      }
      const t = first ? ty : rng.chance(0.8) ? 'f32' : rng.pick(['i32', 'f16', ty])
      first = false
      return { tensor: { ty: t, ne: shapeLike(rng, base, t), data: rng.nextU32() } }
    }
    if (p.optional && rng.chance(0.5)) return { absent: true }
    if (p.type.kind === ts.SyntaxKind.NumberKeyword) {
      // Mostly small integers (dims, strides, counts); now and then a float param's value.
      return { value: rng.chance(0.85) ? rng.pick([0, 1, 1, 2, 2, 3, 4]) : rng.pick([0.5, 1e-5]) }
    }
    return { value: maker.valid(p.type, 0) }
  })
  return { op: op.name, args }
}

/** Random data for a tensor: floats in [-1, 1), or small non-negative indices for i32. */
function fill(t: Tensor, seedBits: number): void {
  const rng = new FuzzRng(seedBits, 'data')
  const n = Number(t.nelements)
  if (t.type === 'i32') {
    const hi = Math.max(1, Math.min(...t.ne.filter((d) => d > 0), 8))
    // Mostly valid indices; now and then one out of range, which the kernel must refuse.
    t.set(Int32Array.from({ length: n }, () => (rng.chance(0.02) ? rng.int(-3, 100) : rng.int(0, hi - 1))))
  } else if (['i8', 'i16', 'i64', 'f64'].includes(t.type)) {
    t.memset(0)
  } else {
    t.fromFloat32(Float32Array.from({ length: n }, () => rng.uniform(-1, 1)))
  }
}

/** Build the recipe's op in a fresh context; null (recorded) when the op refuses it. */
function build(r: Recipe, ctx: Context, call: string, count: boolean): { out: Tensor; inputs: [Tensor, number][] } | null {
  const inputs: [Tensor, number][] = []
  const args: unknown[] = []
  try {
    for (const a of r.args) {
      if ('absent' in a) args.push(undefined)
      else if ('value' in a) args.push(a.value)
      else {
        const t = ctx.newTensor(a.tensor.ty as never, a.tensor.ne)
        inputs.push([t, a.tensor.data])
        args.push(t)
      }
    }
    const out = (ctx as unknown as Record<string, (...x: unknown[]) => unknown>)[r.op](...args)
    if (!(out instanceof weft.Tensor)) {
      if (count) record(tally, call)
      return null
    }
    return { out, inputs }
  } catch (e) {
    if (count) record(tally, call, e)
    return null
  }
}

function describe(r: Recipe): string {
  const arg = (a: ArgSpec) => ('tensor' in a ? `${a.tensor.ty}[${a.tensor.ne}]` : 'value' in a ? JSON.stringify(a.value) : 'undefined')
  return `${r.op}(${r.args.map(arg).join(', ')})`
}

const disagreements: string[] = []
let compared = 0

async function runOn(name: string, be: Backend, r: Recipe, call: string): Promise<Float32Array | null> {
  const ctx = new weft.Context({ memSize: 8 << 20, noAlloc: true })
  const built = build(r, ctx, `${call} on ${name}`, false)
  if (!built) return null
  const g = ctx.newGraph()
  const at = `${call} on ${name}`
  journal.write(at)
  try {
    g.buildForwardExpand(built.out)
    be.allocCtxTensors(ctx)
    for (const [t, bits] of built.inputs) fill(t, bits)
  } catch (e) {
    record(tally, `${at} (setup)`, e)
    return null
  }
  const res = await settle(be.compute(g), 120_000)
  if (res.hung) {
    exitOnHang(tally, journal, at)
  }
  if ('error' in res) {
    record(tally, at, res.error)
    return null
  }
  try {
    const v = built.out.toFloat32()
    record(tally, at)
    return v
  } catch (e) {
    record(tally, `${at} (read)`, e)
    return null
  }
}

function nmse(a: Float32Array, b: Float32Array): number {
  let num = 0
  let den = 0
  for (let i = 0; i < a.length; i++) {
    if (!Number.isFinite(a[i]) || !Number.isFinite(b[i])) continue
    num += (a[i] - b[i]) ** 2
    den += a[i] ** 2
  }
  return den > 0 ? num / den : num
}

async function main(): Promise<Tally & { compared: number; disagreements: string[] }> {
  const rng = new FuzzRng(seed, 'kernel')
  const bes = backends.map((n) => [n, weft.Backend.init(n)] as const)
  const panicsBefore = weft.caughtPanics()
  const n = Number(opts.graphs)
  const start = rng.int(0, ops.length - 1)
  for (let i = 0; i < n; i++) {
    const op = ops[(start + i) % ops.length]
    // A few tries at arguments the op accepts (each refusal is counted), then compute.
    let r = recipe(rng, op)
    for (let k = 0; k < 4 && !build(r, new weft.Context({ memSize: 1 << 20, noAlloc: true }), describe(r), true); k++) {
      r = recipe(rng, op)
    }
    const call = describe(r)
    const results = new Map<string, Float32Array | null>()
    for (const [name, be] of bes) results.set(name, await runOn(name, be, r, call))
    const cpu = results.get('CPU')
    const gpu = results.get('WebGPU0')
    if (cpu && gpu && cpu.length === gpu.length) {
      compared++
      const e = nmse(cpu, gpu)
      if (e > 1e-3 && disagreements.length < 10) disagreements.push(`${call}: nmse ${e.toExponential(2)}`)
    }
  }
  tally.panicCount = weft.caughtPanics() - panicsBefore
  return { ...tally, compared, disagreements }
}

void main().then((t) => process.stdout.write(JSON.stringify(t) + '\n'))
