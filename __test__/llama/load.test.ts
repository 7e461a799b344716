// Loading is asynchronous: while Llama.load / Gguf.loadWeights map or upload the weights on
// worker threads, the event loop keeps running and progress arrives on it; a mapped load
// makes no copy (the buffer is the file's pages), and errors reject with WEFT_* codes.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { weft } from '../helpers.ts'
import { Llama } from '../../models/llama/index.ts'
import { DEFAULT_VOCAB, makeLlamaGguf } from '../../scripts/make-llama-gguf.ts'

const dir = mkdtempSync(join(tmpdir(), 'weft-llama-load-'))
process.on('exit', () => rmSync(dir, { recursive: true, force: true }))
const path = join(dir, 'tiny-f32.gguf')

/** Run `load` and count event-loop turns (setImmediate) until it settles. */
async function turnsDuring<T>(load: Promise<T>): Promise<{ value: T; turns: number }> {
  let settled = false
  let turns = 0
  const spin = () => {
    if (settled) return
    turns++
    setImmediate(spin)
  }
  setImmediate(spin)
  try {
    return { value: await load, turns }
  } finally {
    settled = true
  }
}

for (const mmap of [true, false]) {
  test(`Llama.load (${mmap ? 'mapped' : 'copied'}): the event loop runs during the load and progress arrives on it`, async (t) => {
    if (!existsSync(DEFAULT_VOCAB)) return t.skip('no llama-spm vocab (set WEFT_VOCAB_DIR)')
    if (!existsSync(path)) makeLlamaGguf(path, { type: 'f32' })
    const progress: number[] = []
    let turnsAtProgress = -1
    let turnCounter = 0
    const counting = setInterval(() => turnCounter++, 0)
    const { value: model, turns } = await turnsDuring(
      Llama.load(path, {
        mmap,
        onProgress: (f) => {
          progress.push(f)
          turnsAtProgress = turnCounter
        },
      }),
    )
    clearInterval(counting)
    t.diagnostic(`${turns} event-loop turns and ${progress.length} progress calls during the load`)
    assert.ok(turns > 0, 'the event loop kept turning')
    assert.ok(progress.length > 2, `progress calls: ${progress}`)
    assert.ok(turnsAtProgress >= 0)
    assert.ok(progress.every((f, i) => f >= 0 && f <= 1 && (i === 0 || f >= progress[i - 1])), `monotonic: ${progress}`)
    assert.equal(progress[progress.length - 1], 1)
    assert.equal(model.buffer?.name, mmap ? 'CPU_Mapped' : 'CPU')
    assert.equal(model.buffer?.usage, 'weights')
    // Mapped or copied, the same weights: the same logits.
    const ctx = model.createContext({ nCtx: 32 })
    const logits = await ctx.decode(model.tokenize('hi'))
    assert.ok(logits.every(Number.isFinite))
    ctx.dispose()
    model.dispose()
  })
}

test('Gguf.loadWeights: a throwing progress callback does not stop Llama.load; errors reject with codes', async (t) => {
  if (!existsSync(DEFAULT_VOCAB)) return t.skip('no llama-spm vocab')
  if (!existsSync(path)) makeLlamaGguf(path, { type: 'f32' })
  const model = await Llama.load(path, {
    onProgress: () => {
      throw new Error('callback failure')
    },
  })
  model.dispose()
  await assert.rejects(weft.Gguf.openAsync(join(dir, 'missing.gguf')), (e: any) => e.code === 'WEFT_IO')
  const junk = join(dir, 'junk.gguf')
  writeFileSync(junk, 'GGUF but not really')
  await assert.rejects(weft.Gguf.openAsync(junk), (e: any) => e.code === 'WEFT_FORMAT')
  await assert.rejects(Llama.load(DEFAULT_VOCAB), /no tensor 'token_embd.weight'/)
  // A tensor whose shape differs from the file's is refused, and stays unallocated.
  const g = weft.Gguf.open(path)
  const ctx = new weft.Context({ memSize: 1 << 16, noAlloc: true })
  const wrong = ctx.newTensor1d('f32', 7)
  wrong.name = 'output_norm.weight'
  await assert.rejects(g.loadWeights(ctx, weft.Backend.init('CPU')), (e: any) => e.code === 'WEFT_INVALID_ARGUMENT' && /output_norm/.test(e.message))
  assert.equal(wrong.isAllocated, false)
  g.dispose()
})
