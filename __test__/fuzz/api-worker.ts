// One batch of the API fuzzer, run in its own process by run.ts: `--calls N` random calls
// over every class, method, accessor and function index.d.ts declares, arguments made
// from the declared types with some hostile ones mixed in (values.ts). Each call is written
// to the journal before it runs; the tally goes to stdout as one JSON line.
//   node --import tsx __test__/fuzz/api-worker.ts --seed 1 --calls 500 [--journal FILE]
import { parseArgs } from 'node:util'
import { weft } from '../helpers.ts'
import { loadApiModel, returnedClass, type Member } from './api-model.ts'
import { exitOnHang, Journal, newTally, record, settle } from './outcome.ts'
import { FuzzRng, ObjectPool, REF, ValueMaker, show } from './values.ts'

const { values: opts } = parseArgs({
  options: {
    seed: { type: 'string', default: '1' },
    calls: { type: 'string', default: '300' },
    journal: { type: 'string' },
    hostility: { type: 'string', default: '0.15' },
  },
})
const seed = Number(opts.seed)
const rng = new FuzzRng(seed, 'api')
const model = loadApiModel()
const pool = new ObjectPool()
const journal = new Journal(opts.journal)
const tally = newTally()
const maker = new ValueMaker(model, rng, pool, Number(opts.hostility))
const exportsAny = weft as unknown as Record<string, any>
let serial = 0

/** Keep an object weft returned (or arrays of them) for later calls. */
function keep(cls: string | null, v: unknown): void {
  if (!cls) return
  for (const o of Array.isArray(v) ? v : [v]) {
    if (o !== null && typeof o === 'object') {
      try {
        Object.defineProperty(o, REF, { value: `${cls}#${++serial}`, configurable: true })
      } catch {
        // frozen or exotic: keep it unnamed
      }
      pool.add(cls, o)
    }
  }
}

/** A starting set of objects, so that early calls have receivers and arguments. */
function seedPool(): void {
  const backends = weft.Backend.devices()
    .map((d) => d.name)
    .filter((n) => n === 'CPU' || n === 'WebGPU0')
  for (const n of backends) keep('Backend', weft.Backend.init(n))
  const ctx = new weft.Context({ memSize: 16 << 20 })
  const lazy = new weft.Context({ memSize: 16 << 20, noAlloc: true })
  keep('Context', ctx)
  keep('Context', lazy)
  for (const c of [ctx, lazy]) {
    keep('Tensor', c.newTensor2d('f32', 4, 4))
    keep('Tensor', c.newTensor1d('f32', 8))
    keep('Tensor', c.newTensor1d('i32', 4))
    keep('Tensor', c.newTensor2d('q4_0', 32, 2))
    keep('Tensor', c.newTensor3d('f16', 4, 4, 2))
    keep('Graph', c.newGraph())
  }
  keep('GgufWriter', new weft.GgufWriter())
  const w = new weft.GgufWriter()
  w.set('general.name', 'fuzz')
  w.addTensorData('t', 'f32', [4], new Uint8Array(16))
  keep('Gguf', weft.Gguf.fromBytes(w.toBytes()))
}

/**
 * Members are picked uniformly, so every method has the same chance whatever its class,
 * except dispose, which would otherwise leave most later calls a disposed receiver.
 */
function pickMember(): Member {
  for (;;) {
    const m = rng.pick(model.members)
    if (!/dispose/i.test(m.name) || rng.chance(0.2)) return m
  }
}

/** The argument list for a member: declared params, sometimes one fewer or one extra. */
function makeArgs(m: Member): unknown[] {
  const args: unknown[] = []
  for (const p of m.params) {
    if (p.optional && rng.chance(0.3)) break
    args.push(maker.make(p.type))
  }
  if (rng.chance(0.03) && args.length) args.pop()
  if (rng.chance(0.03)) args.push(maker.hostile(0))
  return args
}

/** The object a member is called on: one of its class, or rarely another value. */
function receiver(m: Member): unknown {
  if (m.kind === 'static' || m.kind === 'constructor') return undefined
  if (rng.chance(0.02)) return maker.hostile(0)
  return pool.any(m.className!, rng)
}

function invoke(m: Member, self: unknown, args: unknown[]): unknown {
  if (m.className === null) return exportsAny[m.name](...args)
  const C = exportsAny[m.className]
  switch (m.kind) {
    case 'constructor':
      return Reflect.construct(C, args)
    case 'static':
      return Reflect.apply(C[m.key], C, args)
    case 'method':
      return Reflect.apply(C.prototype[m.key], self, args)
    case 'getter':
      return Reflect.apply(Object.getOwnPropertyDescriptor(C.prototype, m.key)!.get!, self, [])
    case 'setter':
      return Reflect.apply(Object.getOwnPropertyDescriptor(C.prototype, m.key)!.set!, self, args)
  }
}

const pending: { call: string; settled: ReturnType<typeof settle> }[] = []

/** Await the oldest pending Promise and record how it settled. */
async function settleOldest(): Promise<void> {
  const { call, settled } = pending.shift()!
  const r = await settled
  if (r.hung) exitOnHang(tally, journal, `${call} (left pending)`)
  record(tally, call, 'error' in r ? r.error : undefined)
}

async function main(): Promise<void> {
  seedPool()
  const calls = Number(opts.calls)
  const panicsBefore = weft.caughtPanics()
  for (let i = 0; i < calls; i++) {
    if (i % 100 === 99) seedPool() // fresh objects: earlier ones get disposed and used up
    const m = pickMember()
    const self = receiver(m)
    if (self === undefined && (m.kind === 'method' || m.kind === 'getter' || m.kind === 'setter')) continue
    const args = makeArgs(m)
    const name = m.className ? `${m.className}.${m.kind === 'constructor' ? 'new' : m.name}` : m.name
    const call = `${name}(${[...(self === undefined ? [] : [`this=${show(self)}`]), ...args.map((a) => show(a))].join(', ')})`
    journal.write(call)
    let result: unknown
    try {
      result = invoke(m, self, args)
    } catch (e) {
      record(tally, call, e)
      continue
    }
    if (result instanceof Promise) {
      // Some Promises stay pending while later calls run: the same objects are then used,
      // read, written and disposed under a running compute or read.
      if (rng.chance(0.3) && pending.length < 4) {
        pending.push({ call, settled: settle(result, 60_000) }) // handlers attached now
        continue
      }
      const r = await settle(result, 30_000)
      if (r.hung) exitOnHang(tally, journal, call)
      if ('error' in r) {
        record(tally, call, r.error)
        continue
      }
      result = r.value
    }
    record(tally, call)
    keep(returnedClass(model, m.returns), result)
    if (pending.length && rng.chance(0.2)) await settleOldest()
  }
  while (pending.length) await settleOldest()
  tally.panicCount = weft.caughtPanics() - panicsBefore
  process.stdout.write(JSON.stringify(tally) + '\n')
}

void main()
