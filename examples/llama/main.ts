// Text generation from a llama-family GGUF, streamed as it is produced, with llama.cpp-style
// timings; `bench` runs llama-bench's pp/tg tests.
//
//   npm run llama -- --model model.gguf --prompt "Once upon a time" -n 64
//   npm run llama -- bench --model model.gguf
import { Llama } from '../../models/llama/index.ts'
import { parseFlags, USAGE, type Flags } from './args.ts'
import { bench } from './bench.ts'
import { mib, peakRss } from './memory.ts'

function perf(label: string, ms: number, n: number, unit: string): string {
  const per = n > 0 ? ms / n : 0
  const tps = ms > 0 ? (1000 * n) / ms : 0
  return `llama_perf_context_print: ${label.padStart(16)} = ${ms.toFixed(2).padStart(10)} ms / ${String(n).padStart(5)} ${unit} (${per.toFixed(2).padStart(8)} ms per token, ${tps.toFixed(2).padStart(8)} tokens per second)`
}

async function generate(f: Flags): Promise<void> {
  const baseline = peakRss()
  const t0 = performance.now()
  let shown = -1
  const model = await Llama.load(f.model, {
    backend: f.backend,
    threads: f.threads,
    mmap: f.mmap,
    onProgress: (x) => {
      const pct = Math.floor(x * 100)
      if (pct === shown || (pct < shown + 10 && pct < 100)) return
      process.stderr.write(pct === 100 ? '100%\n' : `${pct}% `)
      shown = pct
    },
  })
  const loadMs = performance.now() - t0
  console.error(`model: ${model.description}, ${mib(model.fileSize)}, weights in ${model.buffer?.name} on ${model.backend.name}`)
  const ctx = model.createContext({ nCtx: f.ctxSize, nBatch: f.batchSize, flashAttn: f.flashAttn })
  const sampler = model.sampler({
    temperature: f.temp,
    topK: f.topK,
    topP: f.topP,
    minP: f.minP,
    repeatPenalty: f.repeatPenalty,
    repeatLastN: f.repeatLastN,
    seed: f.seed,
  })
  console.error(`sampler: seed ${sampler.options.seed}, temp ${f.temp}, top-k ${f.topK}, top-p ${f.topP}, min-p ${f.minP}, repeat-penalty ${f.repeatPenalty}`)
  process.stdout.write(f.prompt)
  const tGen = performance.now()
  let n = 0
  for await (const { text } of model.generate(ctx, f.prompt, { maxTokens: f.nPredict, sampler })) {
    process.stdout.write(text)
    n++
  }
  const totalMs = performance.now() - tGen
  process.stdout.write('\n\n')
  const t = ctx.timings
  console.error(`llama_perf_context_print: ${'load time'.padStart(16)} = ${loadMs.toFixed(2).padStart(10)} ms`)
  console.error(perf('prompt eval time', t.promptMs, t.promptTokens, 'tokens'))
  console.error(perf('eval time', t.evalMs, t.evalTokens, 'runs  '))
  console.error(`llama_perf_context_print: ${'total time'.padStart(16)} = ${totalMs.toFixed(2).padStart(10)} ms / ${String(t.promptTokens + n).padStart(5)} tokens`)
  const peak = peakRss()
  const budget = model.fileSize + ctx.kv.bytes
  console.error(
    `memory: peak RSS ${mib(peak)} (${mib(baseline)} before loading); file ${mib(model.fileSize)} + KV cache ` +
      `${mib(ctx.kv.bytes)} = ${mib(budget)}; peak / that = ${(peak / budget).toFixed(3)}, ` +
      `(peak - before) / that = ${((peak - baseline) / budget).toFixed(3)}; compute buffer ${mib(ctx.computeBufferSize)} reserved`,
  )
  ctx.dispose()
  model.dispose()
}

async function main(): Promise<void> {
  let flags: Flags
  try {
    flags = parseFlags(process.argv.slice(2))
  } catch (e) {
    console.error((e as Error).message)
    process.exitCode = 2
    return
  }
  if (flags.command === 'bench') await bench(flags)
  else await generate(flags)
}

main().catch((e) => {
  console.error(e instanceof Error ? e.message : e)
  if (process.argv.includes('--help')) console.error(USAGE)
  process.exitCode = 1
})
