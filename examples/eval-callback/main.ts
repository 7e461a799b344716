// weft eval-callback: print every intermediate tensor of a graph as it is computed, as
// llama.cpp's eval-callback tool does (its ggml_debug callback). The graph runs through a
// Scheduler over every device; the callback is asked about each node ("want it?") and
// then shown it once computed, on the JS thread while the compute waits.
//
//   npm run eval-callback
import { createRequire } from 'node:module'
import type * as Weft from '../../index.js'

const require = createRequire(import.meta.url)
const { Backend, Context, Scheduler }: typeof Weft = require('../../index.js')

const neString = (t: Weft.Tensor) => t.ne.join(', ')

/** ggml_print_tensor: the first and last n entries of each dim, then the sum. */
function printTensor(t: Weft.Tensor, n = 3): void {
  const v = t.toFloat32()
  const [ne0, ne1, ne2, ne3] = t.ne
  const pad = ' '.repeat(37)
  let sum = 0
  for (let i3 = 0; i3 < ne3; i3++) {
    console.log(`${pad}[`)
    for (let i2 = 0; i2 < ne2; i2++) {
      if (i2 === n && ne2 > 2 * n) {
        console.log(`${pad}  ..., `)
        i2 = ne2 - n
      }
      console.log(`${pad} [`)
      for (let i1 = 0; i1 < ne1; i1++) {
        if (i1 === n && ne1 > 2 * n) {
          console.log(`${pad}  ..., `)
          i1 = ne1 - n
        }
        const row: string[] = []
        for (let i0 = 0; i0 < ne0; i0++) {
          if (i0 === n && ne0 > 2 * n) {
            row.push('...')
            i0 = ne0 - n
          }
          const x = v[((i3 * ne2 + i2) * ne1 + i1) * ne0 + i0]
          row.push(x.toFixed(4).padStart(12))
          sum += x
        }
        console.log(`${pad}  [${row.join(', ')}],`)
      }
      console.log(`${pad} ],`)
    }
    console.log(`${pad}]`)
    console.log(`${pad}sum = ${sum.toFixed(6)}`)
  }
}

/** ggml_debug: want every node; print each with its op, sources, shape and data. */
function ggmlDebug(t: Weft.Tensor, ask: boolean): boolean {
  if (ask) return true
  const [src0, src1] = [t.src(0), t.src(1)]
  const srcs = [src0, src1].filter((s) => s).map((s) => `${s!.name}{${neString(s!)}}`)
  console.log(
    `ggml_debug: ${t.name.padStart(24)} = (${t.type}) ${t.opDesc.padStart(10)}(${srcs.join(', ')}) = {${neString(t)}}`,
  )
  printTensor(t)
  return true
}

async function main(): Promise<void> {
  // A tiny attention-like block: x is 4 tokens of 8 features; w on the first device.
  const [nIn, nOut, nTok] = [8, 6, 4]
  const devices = Backend.devices().map((d) => d.name)
  const backends = [...devices.filter((d) => d !== 'CPU'), 'CPU'].map((d) => Backend.init(d))

  const wctx = new Context({ memSize: 1 << 20, noAlloc: true })
  const w = wctx.newTensor2d('f32', nIn, nOut)
  w.name = 'w'
  const weights = backends[0].allocCtxTensors(wctx)!
  weights.usage = 'weights'
  w.fromFloat32(Float32Array.from({ length: nIn * nOut }, (_, i) => Math.cos(i * 0.7)))

  const ctx = new Context({ memSize: 1 << 20, noAlloc: true })
  const x = ctx.newTensor2d('f32', nIn, nTok)
  x.name = 'x'
  x.setInput()
  const logits = ctx.scale(ctx.mulMat(w, x), 1 / Math.sqrt(nIn))
  logits.name = 'logits'
  const probs = ctx.softMax(logits)
  probs.name = 'probs'
  const out = ctx.rmsNorm(probs, 1e-6)
  out.name = 'out'
  const graph = ctx.newGraph()
  graph.buildForwardExpand(out)

  const sched = new Scheduler({ backends })
  sched.setEvalCallback(ggmlDebug)
  sched.allocGraph(graph)
  console.log(`scheduler over ${backends.map((b) => b.name).join(', ')}:`)
  console.log(sched.describe(true))
  x.fromFloat32(Float32Array.from({ length: nIn * nTok }, (_, i) => Math.sin(i)))
  await sched.compute(graph)
  sched.dispose()
}

main().catch((e) => {
  console.error(e)
  process.exitCode = 1
})
