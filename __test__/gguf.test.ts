// GGUF from JS: files written by gguf-py (llama.cpp's Python writer) read back with the
// values that writer was given, a round trip through weft's writer into backend tensors,
// ggml's own reference files, and malformed bytes refused with an Error.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { join, dirname } from 'node:path'
import { fileURLToPath } from 'node:url'
import { tmpdir } from 'node:os'
import { weft, randomFloats, backendNames } from './helpers.ts'

const { Gguf, GgufWriter, Context, Backend } = weft
const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const fixture = (name: string) => join(root, 'crates/weft/tests/fixtures/gguf', name)

test('reads every value type of a gguf-py file', () => {
  const g = Gguf.open(fixture('values.gguf'))
  assert.equal(g.version, 3)
  assert.equal(g.get('general.architecture'), 'weft-test')
  // The values scripts/gguf-fixtures.py wrote:
  assert.equal(g.get('test.u8'), 200)
  assert.equal(g.get('test.i16'), -30000)
  assert.equal(g.get('test.u32'), 4000000000)
  assert.equal(g.get('test.f32'), 3.25)
  assert.equal(g.get('test.bool_false'), false)
  assert.equal(g.get('test.string'), 'héllo wörld ✓')
  assert.equal(g.get('test.u64'), 2n ** 64n - 1n)
  assert.equal(g.get('test.i64'), -(2n ** 63n))
  assert.equal(g.get('test.f64'), 0.1)
  assert.deepEqual(g.get('test.arr.str'), ['a', '', 'ü'])
  assert.deepEqual(g.get('test.arr.i64'), [-(2n ** 63n), 2n ** 63n - 1n])
  assert.deepEqual(g.get('test.arr.nested_i32'), [[1, 2, 3], [4], [5, 6]])
  // Inner arrays carry their own element types, so the outer type is 'arr[arr]'.
  assert.equal(g.getType('test.arr.nested_i32'), 'arr[arr]')
  assert.equal(g.getType('test.u16'), 'u16')
  assert.equal(g.get('no.such.key'), null)
  assert.ok(g.keys().includes('test.arr.f64'))
})

test('round trip: write from JS, read back into tensors on every backend', () => {
  const w = new GgufWriter()
  w.set('general.name', 'rt')
  w.set('n.layers', 12, 'u32')
  w.set('big', 123456789012345n)
  w.set('eps', 1e-5, 'f32')
  w.set('flags', [true, false])
  w.set('ids', [1, 2, 3], 'arr', 'u16')
  w.set('nested', [[1.5, 2.5], [3.5]], 'arr')
  w.setAlignment(64)
  const src = new Context({ memSize: 1 << 20, noAlloc: false })
  const a = src.newTensor2d('f32', 5, 3)
  a.name = 'blk.0.weight'
  a.fromFloat32(randomFloats(15, 9))
  const h = src.newTensor1d('f16', 7)
  h.name = 'blk.0.bias'
  h.fromFloat32(new Float32Array([1, 2, 3, 4, 5, 6, 7]))
  w.addTensor(a)
  w.addTensor(h)
  w.addTensorData('raw.i32', 'i32', [2], new Uint8Array(new Int32Array([-1, 7]).buffer))
  const path = join(tmpdir(), `weft-rt-${process.pid}.gguf`)
  w.writeFile(path)
  assert.deepEqual(Buffer.from(w.toBytes()), readFileSync(path))

  const g = Gguf.open(path)
  assert.equal(g.alignment, 64)
  assert.equal(g.get('n.layers'), 12)
  assert.equal(g.getType('n.layers'), 'u32')
  assert.equal(g.get('big'), 123456789012345n)
  assert.equal(g.getType('eps'), 'f32')
  assert.deepEqual(g.get('ids'), [1, 2, 3])
  assert.equal(g.getType('ids'), 'arr[u16]')
  assert.deepEqual(g.get('nested'), [[1.5, 2.5], [3.5]])
  const infos = g.tensorInfos()
  assert.deepEqual(infos.map((i) => [i.name, i.type, i.shape]), [
    ['blk.0.weight', 'f32', [5, 3]],
    ['blk.0.bias', 'f16', [7]],
    ['raw.i32', 'i32', [2]],
  ])
  for (const name of backendNames()) {
    const ctx = new Context({ memSize: Context.tensorOverhead() * 4, noAlloc: true })
    const ts = g.createTensors(ctx)
    const buf = Backend.init(name).allocCtxTensors(ctx)!
    buf.usage = 'weights'
    g.loadTensors(ts)
    assert.deepEqual(Array.from(ts[0].toFloat32()), Array.from(a.toFloat32()), name)
    assert.deepEqual(Array.from(ts[1].toFloat32()), [1, 2, 3, 4, 5, 6, 7], name)
    assert.deepEqual(Array.from(new Int32Array(ts[2].get().buffer)), [-1, 7], name)
  }
  // Shape mismatches are refused by name.
  const ctx = new Context({ memSize: 1 << 16, noAlloc: false })
  const wrong = ctx.newTensor1d('f32', 4)
  wrong.name = 'blk.0.weight'
  assert.throws(() => g.loadTensors([wrong]), /'blk.0.weight' is f32 .* in the file but f32/)
  assert.throws(() => new GgufWriter().set('x', [], 'arr'), /element type for an empty array/)
  assert.throws(() => new GgufWriter().set('x', 300, 'u8'), /300 does not fit u8/)
})

test('malformed bytes are Errors that say what is wrong', () => {
  const good = readFileSync(fixture('tensors-align64.gguf'))
  // Every cut before the end of the last tensor's data must fail (padding after it may go).
  const g = Gguf.fromBytes(good)
  const end = g.dataOffset + Math.max(...g.tensorInfos().map((i) => i.offset + i.size))
  let cuts = 0
  for (let n = 0; n < end; n += 7) {
    assert.throws(
      () => Gguf.fromBytes(good.subarray(0, n)),
      (e: any) => e.code === 'WEFT_FORMAT' && /gguf/.test(e.message),
      `cut at ${n}`,
    )
    cuts++
  }
  assert.ok(cuts > 100)
  const bad = Buffer.from(good)
  bad.write('GGML', 0)
  assert.throws(() => Gguf.fromBytes(bad), /magic/)
  assert.throws(() => Gguf.open('/nonexistent/file.gguf'), (e: any) => e.code === 'WEFT_IO')
})

test("ggml's reference files open with their case names", (t) => {
  const dir = process.env.WEFT_GGML_REFERENCE ?? join(root, '..', 'shared', 'ggml-reference', 'eval')
  if (!existsSync(dir)) return t.skip(`no reference set at ${dir}`)
  const files = readdirSync(dir).filter((f) => f.endsWith('.gguf'))
  assert.ok(files.length > 800)
  for (const f of files.slice(0, 50)) {
    const g = Gguf.open(join(dir, f))
    const name = g.get('case.name') as string
    assert.equal(f, name.replace(/[^A-Za-z0-9_.=,-]/g, '_') + '.gguf')
    assert.ok(g.tensorInfos().some((i) => i.name === 'output'))
  }
})
