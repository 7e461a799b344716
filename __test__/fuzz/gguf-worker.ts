// One batch of the GGUF fuzzer, run in its own process by run.ts: hostile GGUF files made
// by damaging valid ones (truncation, flipped bytes, huge counts and lengths in the header,
// bad versions and alignments, random bytes), read from memory and from disk, and every
// reader method run on what opens. A file either opens and reads, or fails with a coded
// error (WEFT_FORMAT for the file itself).
//   node --import tsx __test__/fuzz/gguf-worker.ts --seed 1 --files 200 [--journal FILE]
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { parseArgs } from 'node:util'
import type { Gguf } from '../../index.js'
import { weft } from '../helpers.ts'
import { Journal, newTally, record } from './outcome.ts'
import { FuzzRng } from './values.ts'

const { values: opts } = parseArgs({
  options: {
    seed: { type: 'string', default: '1' },
    files: { type: 'string', default: '200' },
    journal: { type: 'string' },
  },
})
const rng = new FuzzRng(Number(opts.seed), 'gguf')
const journal = new Journal(opts.journal)
const tally = newTally()
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'weft-gguf-fuzz-'))

/** Valid files to damage: every value type, nested arrays, tensors of several types. */
function validFiles(): Uint8Array[] {
  const out: Uint8Array[] = []
  for (const alignment of [32, 64, 1]) {
    const w = new weft.GgufWriter()
    if (alignment !== 32) w.setAlignment(alignment)
    w.set('general.name', 'fuzz')
    w.set('u8', 7, 'u8')
    w.set('i16', -300, 'i16')
    w.set('f32', 1.5, 'f32')
    w.set('f64', Math.PI)
    w.set('big', 2n ** 62n)
    w.set('flag', true)
    w.set('tokens', ['a', 'bb', ''])
    w.set('scores', [0.5, -1.25], 'arr', 'f32')
    w.set('nested', [[1, 2], [3]])
    w.set('empty', [], 'arr', 'i32')
    w.addTensorData('w', 'f32', [4, 2], new Uint8Array(32).fill(1))
    w.addTensorData('q', 'q4_0', [64], new Uint8Array(36).fill(2))
    w.addTensorData('h', 'f16', [3], new Uint8Array(6).fill(3))
    out.push(w.toBytes())
  }
  return out
}

/** One way of damaging a file. */
function damage(src: Uint8Array): Uint8Array {
  const b = Uint8Array.from(src)
  const dv = new DataView(b.buffer)
  switch (rng.int(0, 7)) {
    case 0:
      return b.slice(0, rng.int(0, b.length - 1)) // truncated
    case 1: {
      for (let k = rng.int(1, 8); k > 0; k--) b[rng.int(0, b.length - 1)] ^= 1 << rng.int(0, 7)
      return b
    }
    case 2: {
      // A count or length field (u64 at offsets 8 and 16, or any 8 bytes) set huge.
      const at = rng.pick([8, 16, rng.int(0, Math.max(0, b.length - 8))])
      const v = rng.pick([0xffffffffffffffffn, 1n << 62n, 1n << 32n, 0xfffffffn, 0n])
      if (at + 8 <= b.length) dv.setBigUint64(at, v, true)
      return b
    }
    case 3:
      dv.setUint32(4, rng.pick([0, 1, 2, 4, 0xffffffff]), true) // version
      return b
    case 4: {
      // A type id anywhere in the header set to something no reader knows.
      const at = rng.int(24, Math.max(24, Math.min(b.length - 4, 400)))
      if (at + 4 <= b.length) dv.setUint32(at, rng.pick([13, 255, 0xffffffff, 9]), true)
      return b
    }
    case 5:
      return Uint8Array.from({ length: rng.int(0, 200) }, () => rng.int(0, 255)) // noise
    case 6: {
      const noise = Uint8Array.from({ length: rng.int(1, 64) }, () => rng.int(0, 255))
      const at = rng.int(0, b.length - 1)
      b.set(noise.slice(0, b.length - at), at)
      return b
    }
    default:
      return Uint8Array.of(...b, ...Uint8Array.from({ length: rng.int(1, 100) }, () => rng.int(0, 255)))
  }
}

/** Every reader method on an opened file. */
function exercise(g: Gguf, label: string): void {
  const step = (what: string, f: () => unknown) => {
    const call = `${label}.${what}`
    journal.write(call)
    try {
      f()
      record(tally, call)
    } catch (e) {
      record(tally, call, e)
    }
  }
  step('version', () => g.version)
  step('alignment', () => g.alignment)
  step('dataOffset', () => g.dataOffset)
  let keys: string[] = []
  step('keys', () => (keys = g.keys()))
  for (const k of keys.slice(0, 20)) {
    step(`get(${JSON.stringify(k)})`, () => g.get(k))
    step(`getType(${JSON.stringify(k)})`, () => g.getType(k))
  }
  let infos: ReturnType<Gguf['tensorInfos']> = []
  step('tensorInfos', () => (infos = g.tensorInfos()))
  for (const t of infos.slice(0, 8)) step(`tensorData(${JSON.stringify(t.name)})`, () => g.tensorData(t.name))
  step('createTensors+loadTensors', () => {
    const ctx = new weft.Context({ memSize: 1 << 20, noAlloc: true })
    const ts = g.createTensors(ctx)
    if (ts.some((t) => Number(t.nbytes) > 1 << 24)) return // keep a damaged shape from allocating gigabytes
    weft.Backend.init('CPU').allocCtxTensors(ctx)
    g.loadTensors(ts)
  })
  step('rewrite', () => {
    const w = new weft.GgufWriter()
    for (const k of keys.slice(0, 20)) {
      const v = g.get(k)
      if (v !== null) w.set(k, v as never)
    }
    weft.Gguf.fromBytes(w.toBytes())
  })
}

function main(): void {
  const bases = validFiles()
  const panicsBefore = weft.caughtPanics()
  const n = Number(opts.files)
  for (let i = 0; i < n; i++) {
    const bytes = damage(rng.pick(bases))
    const label = `file#${i}(${bytes.length} bytes)`
    const fromDisk = rng.chance(0.3)
    journal.write(`${label} ${fromDisk ? 'open' : 'fromBytes'} ${Buffer.from(bytes.slice(0, 64)).toString('hex')}`)
    let g: Gguf
    try {
      if (fromDisk) {
        const p = path.join(dir, `f${i}.gguf`)
        fs.writeFileSync(p, bytes)
        g = weft.Gguf.open(p)
        // Now and then the file shrinks while it is open.
        if (rng.chance(0.2)) fs.truncateSync(p, rng.int(0, bytes.length))
      } else {
        g = weft.Gguf.fromBytes(bytes)
      }
      record(tally, `${label}.open`)
    } catch (e) {
      record(tally, `${label}.open`, e)
      continue
    }
    exercise(g, label)
    g.dispose()
  }
  tally.panicCount = weft.caughtPanics() - panicsBefore
  fs.rmSync(dir, { recursive: true, force: true })
  process.stdout.write(JSON.stringify(tally) + '\n')
}

main()
