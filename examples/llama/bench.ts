// llama-bench's pp and tg tests on weft: pp = one prompt of nPrompt tokens in micro-batches
// (first token BOS, then random ids), tg = nGen single-token steps; a warm-up run, then
// `reps` timed runs each from an empty cache, reported as llama-bench's markdown table
// (t/s = mean ± stdev over runs). --profile times the graph node by node and prints each
// op's share; --peer runs ggml's own llama-bench on the same file, interleaved, for ratios.
import { execFileSync } from 'node:child_process'
import type { Backend, Graph } from '../../index.js'
import { Llama, type LlamaContext } from '../../models/llama/index.ts'
import type { Flags } from './args.ts'
import { mib } from './memory.ts'

interface Result {
  test: string
  samples: number[]
}

/** std::rand-like ids, reproducible. */
function randomTokens(n: number, nVocab: number, seed: number): number[] {
  let s = seed >>> 0 || 1
  return Array.from({ length: n }, () => {
    s = (Math.imul(s, 1103515245) + 12345) >>> 0
    return (s >>> 8) % nVocab
  })
}

function stats(xs: number[]): { avg: number; sd: number } {
  const avg = xs.reduce((a, b) => a + b, 0) / xs.length
  const sd = xs.length > 1 ? Math.sqrt(xs.reduce((a, b) => a + (b - avg) ** 2, 0) / (xs.length - 1)) : 0
  return { avg, sd }
}

function promptTokens(model: Llama, n: number, seed: number): number[] {
  const toks = randomTokens(n, model.hp.nVocab, seed)
  if (model.vocab.addBos) toks[0] = model.vocab.bos
  return toks
}

async function testPrompt(ctx: LlamaContext, tokens: number[]): Promise<void> {
  ctx.clear()
  await ctx.decode(tokens)
}

async function testGen(model: Llama, ctx: LlamaContext, n: number, seed: number): Promise<void> {
  ctx.clear()
  const next = randomTokens(n, model.hp.nVocab, seed)
  let tok = model.vocab.addBos ? model.vocab.bos : next[0]
  for (let i = 0; i < n; i++) {
    await ctx.decode([tok])
    tok = next[i]
  }
}

/** Tokens per second of `reps` timed runs after a warm-up. */
async function timed(reps: number, n: number, warmup: () => Promise<void>, run: () => Promise<void>): Promise<number[]> {
  await warmup()
  const out: number[] = []
  for (let i = 0; i < reps; i++) {
    const t0 = performance.now()
    await run()
    out.push((1000 * n) / (performance.now() - t0))
  }
  return out
}

async function weftRound(model: Llama, f: Flags): Promise<Result[]> {
  const results: Result[] = []
  if (f.nPrompt > 0) {
    const ctx = model.createContext({ nCtx: f.nPrompt, nBatch: f.batchSize, flashAttn: f.flashAttn })
    const tokens = promptTokens(model, f.nPrompt, 1)
    const run = () => testPrompt(ctx, tokens)
    results.push({ test: `pp${f.nPrompt}`, samples: await timed(f.reps, f.nPrompt, run, run) })
    ctx.dispose()
  }
  if (f.nGen > 0) {
    const ctx = model.createContext({ nCtx: f.nGen, nBatch: f.batchSize, flashAttn: f.flashAttn })
    const warm = () => testGen(model, ctx, 1, 2)
    results.push({ test: `tg${f.nGen}`, samples: await timed(f.reps, f.nGen, warm, () => testGen(model, ctx, f.nGen, 3)) })
    ctx.dispose()
  }
  return results
}

function table(model: Llama, f: Flags, threads: number, results: Result[], label = 'weft'): void {
  const cols = ['model', 'size', 'params', 'backend', 'threads', ...(f.flashAttn ? ['fa'] : []), 'test', 't/s']
  const width: Record<string, number> = { model: -30, size: 10, params: 10, backend: -10, threads: 7, fa: 2, test: 13, 't/s': 20 }
  const cell = (c: string, v: string) => (width[c] < 0 ? v.padEnd(-width[c]) : v.padStart(width[c]))
  console.log(`\n${label}:`)
  console.log('| ' + cols.map((c) => cell(c, c)).join(' | ') + ' |')
  console.log('| ' + cols.map((c) => '-'.repeat(Math.abs(width[c]) - 1) + (width[c] > 0 ? ':' : '-')).join(' | ') + ' |')
  const p = model.weights.nParams
  for (const r of results) {
    const { avg, sd } = stats(r.samples)
    const v: Record<string, string> = {
      model: model.description,
      size: mib(model.weights.size),
      params: p < 1e9 ? `${(p / 1e6).toFixed(2)} M` : `${(p / 1e9).toFixed(2)} B`,
      backend: model.backend.name,
      threads: String(threads),
      fa: '1',
      test: r.test,
      't/s': `${avg.toFixed(2)} ± ${sd.toFixed(2)}`,
    }
    console.log('| ' + cols.map((c) => cell(c, v[c])).join(' | ') + ' |')
  }
}

/**
 * Per-op time of one micro-batch graph: each node computed alone (graph.view), minus the
 * cost of a call with nothing to do. Each pass prepares the graph afresh: the allocator
 * reuses dead tensors' memory (inputs included), so a second pass over the same
 * allocation would read overwritten inputs.
 */
async function profile(model: Llama, f: Flags, what: 'pp' | 'tg'): Promise<void> {
  const backend: Backend = model.backend
  const n = what === 'pp' ? Math.min(f.nPrompt, f.batchSize) : 1
  const ctx = model.createContext({ nCtx: Math.max(f.nPrompt, f.nGen, 32), nBatch: f.batchSize, flashAttn: f.flashAttn })
  const tokens = promptTokens(model, n, 4)
  const viewOps = new Set(['NONE', 'VIEW', 'RESHAPE', 'PERMUTE', 'TRANSPOSE'])
  const time = async (g: Graph, i0: number, i1: number) => {
    const v = g.view(i0, i1)
    const t0 = performance.now()
    await backend.compute(v)
    return performance.now() - t0
  }
  let best: number[] = []
  let overhead = 0
  let whole = Infinity
  let ops: string[] = []
  for (let pass = 0; pass < 3; pass++) {
    const g = ctx.prepare(tokens, 1)
    const nodes = g.graph.nodes()
    if (pass === 0) {
      ops = nodes.map((t) => (viewOps.has(t.op) ? '' : t.opDesc))
      best = new Array<number>(nodes.length).fill(Infinity)
      // What one compute call costs with nothing to do (a view node).
      const idle = ops.indexOf('')
      const idleMs: number[] = []
      for (let i = 0; i < 31; i++) idleMs.push(await time(g.graph, idle, idle + 1))
      overhead = idleMs.sort((a, b) => a - b)[15]
    }
    for (let i = 0; i < nodes.length; i++) {
      if (ops[i]) best[i] = Math.min(best[i], Math.max(0, (await time(g.graph, i, i + 1)) - overhead))
    }
    g.ctx.dispose()
    const full = ctx.prepare(tokens, 1)
    whole = Math.min(whole, await time(full.graph, 0, full.graph.nNodes))
    full.ctx.dispose()
  }
  const byOp = new Map<string, { ms: number; count: number }>()
  ops.forEach((op, i) => {
    if (!op) return
    const e = byOp.get(op) ?? { ms: 0, count: 0 }
    e.ms += best[i]
    e.count++
    byOp.set(op, e)
  })
  const total = [...byOp.values()].reduce((a, b) => a + b.ms, 0)
  console.log(`\nper-op time, ${what} graph (${n} token${n > 1 ? 's' : ''}, ${ops.length} nodes; call overhead ${overhead.toFixed(3)} ms subtracted):`)
  console.log(`| ${'op'.padEnd(16)} | ${'nodes'.padStart(5)} | ${'ms'.padStart(9)} | ${'share'.padStart(6)} |`)
  console.log(`| ${'-'.repeat(16)} | ${'-'.repeat(4)}: | ${'-'.repeat(8)}: | ${'-'.repeat(5)}: |`)
  for (const [op, e] of [...byOp].sort((a, b) => b[1].ms - a[1].ms)) {
    console.log(`| ${op.padEnd(16)} | ${String(e.count).padStart(5)} | ${e.ms.toFixed(3).padStart(9)} | ${((100 * e.ms) / total).toFixed(1).padStart(5)}% |`)
  }
  console.log(`sum of ops ${total.toFixed(2)} ms; the whole graph in one compute: ${whole.toFixed(2)} ms`)
  ctx.dispose()
}

/** ggml's llama-bench on the same file; its JSON results as our rows. */
function peerRound(f: Flags, threads: number): Result[] {
  const args = ['-m', f.model, '-p', String(f.nPrompt), '-n', String(f.nGen), '-t', String(threads), '-r', String(f.reps), '-o', 'json']
  if (f.flashAttn) args.push('-fa', '1')
  const out = execFileSync(f.peer as string, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] })
  const rows = JSON.parse(out) as { n_prompt: number; n_gen: number; samples_ts: number[] }[]
  return rows.map((r) => ({ test: r.n_prompt > 0 ? `pp${r.n_prompt}` : `tg${r.n_gen}`, samples: r.samples_ts }))
}

export async function bench(f: Flags): Promise<void> {
  const model = await Llama.load(f.model, { backend: f.backend, threads: f.threads, mmap: f.mmap })
  const threads = f.threads ?? Number(model.backend.device.properties.threads ?? 1)
  if (!f.peer) {
    table(model, f, threads, await weftRound(model, f))
  } else {
    // Interleave weft and the peer twice and compare the medians of each test's means.
    const ours: Result[][] = []
    const theirs: Result[][] = []
    for (let round = 0; round < 2; round++) {
      ours.push(await weftRound(model, f))
      theirs.push(peerRound(f, threads))
    }
    table(model, f, threads, ours.flat(), 'weft (both rounds)')
    table(model, f, threads, theirs.flat(), `peer ${f.peer} (both rounds)`)
    console.log('\nratio weft / peer (per round, same run):')
    for (let i = 0; i < ours[0].length; i++) {
      const r = ours.map((o, k) => stats(o[i].samples).avg / stats(theirs[k][i].samples).avg)
      console.log(`  ${ours[0][i].test}: ${r.map((x) => x.toFixed(3)).join(', ')}`)
    }
  }
  if (f.profile) {
    if (f.nPrompt > 0) await profile(model, f, 'pp')
    if (f.nGen > 0) await profile(model, f, 'tg')
  }
  model.dispose()
}
