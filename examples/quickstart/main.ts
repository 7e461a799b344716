// weft quickstart: list the devices, build a small ggml graph (a matmul, a softmax, a
// norm), compute it on every backend this machine has, and print the results side by side.
//
//   npm start
import { createRequire } from 'node:module'
import type * as Weft from '../../index.js'

const require = createRequire(import.meta.url)
const { Backend, Context }: typeof Weft = require('../../index.js')

async function main(): Promise<void> {
  console.log('devices:')
  for (const d of Backend.devices()) {
    const gib = (d.memoryTotal / 2 ** 30).toFixed(1)
    console.log(`  ${d.name.padEnd(8)} ${d.type.padEnd(4)} ${d.description} (${gib} GiB)`)
}

// x: 4 tokens of 8 features; w: a 6x8 weight matrix. out = rmsNorm(softMax(w x / sqrt(8)))
const [nIn, nOut, nTok] = [8, 6, 4]
const x0 = Float32Array.from({ length: nIn * nTok }, (_, i) => Math.sin(i))
const w0 = Float32Array.from({ length: nIn * nOut }, (_, i) => Math.cos(i * 0.7))

const results: { name: string; values: Float32Array; ms: number }[] = []
for (const dev of Backend.devices()) {
  const ctx = new Context({ memSize: 1 << 20, noAlloc: true })
  const x = ctx.newTensor2d('f32', nIn, nTok)
  const w = ctx.newTensor2d('f32', nIn, nOut)
  const logits = ctx.scale(ctx.mulMat(w, x), 1 / Math.sqrt(nIn))
  const out = ctx.rmsNorm(ctx.softMax(logits), 1e-6)
  const graph = ctx.newGraph()
  graph.buildForwardExpand(out)

  const backend = Backend.init(dev.name)
  const unsupported = graph.nodes().filter((n) => !backend.supportsOp(n))
  if (unsupported.length > 0) {
    console.log(`${dev.name}: skipped (no kernel for ${unsupported.map((n) => n.opDesc).join(', ')})`)
    continue
  }
  const buffer = backend.allocCtxTensors(ctx)!
  x.fromFloat32(x0)
  w.fromFloat32(w0)
  const t0 = performance.now()
  await backend.compute(graph)
  const ms = performance.now() - t0
  results.push({ name: dev.name, values: out.toFloat32(), ms })
  buffer.dispose()
  ctx.dispose()
}

console.log(`\nrmsNorm(softMax(w x / sqrt(${nIn}))), token 0 (${nOut} values), per backend:`)
for (const r of results) {
  const vals = Array.from(r.values.slice(0, nOut), (v) => v.toFixed(5).padStart(8)).join(' ')
  console.log(`  ${r.name.padEnd(8)} ${vals}   (${r.ms.toFixed(2)} ms)`)
}
const ref = results[0].values
for (const r of results.slice(1)) {
  const maxDiff = r.values.reduce((m, v, i) => Math.max(m, Math.abs(v - ref[i])), 0)
  const ok = maxDiff <= 1e-5
  console.log(`  ${r.name} vs CPU: max |diff| = ${maxDiff.toExponential(2)} ${ok ? '(equal within 1e-5)' : '(MISMATCH)'}`)
  if (!ok) process.exitCode = 1
}
}

main().catch((e) => {
  console.error(e)
  process.exitCode = 1
})
