// A two-layer perceptron trained with weft's autodiff: logits = W2 relu(W1 x + b1) + b2,
// cross-entropy loss, AdamW, all as one ggml-style graph computed on the CPU backend.
import { createRequire } from 'node:module'
import type * as Weft from '../../index.js'
import type { Tensor } from '../../index.js'
import { rng, shuffled, type DataSet } from './data.ts'

const require = createRequire(import.meta.url)
const { Backend, Context }: typeof Weft = require('../../index.js')

export interface TrainOptions {
  epochs: number
  hidden: number
  /** Points per step; the last partial batch of an epoch is dropped. */
  batch: number
  /** AdamW learning rate (ggml's alpha). */
  lr: number
  /** Seeds the weights and the shuffling. */
  seed: number
}

export const DEFAULTS: TrainOptions = { epochs: 100, hidden: 64, batch: 32, lr: 0.01, seed: 1 }

export interface EpochStats {
  epoch: number
  /** Mean cross-entropy over the epoch's batches (before each batch's update). */
  loss: number
  /** Share of the epoch's points whose largest logit was their class. */
  accuracy: number
}

/** Called after every step (for a progress bar) with the batch's loss. */
export type OnStep = (epoch: number, step: number, steps: number, loss: number) => void

/** Uniform in [-limit, limit) with limit = sqrt(6 / fan_in) (He), for ReLU layers. */
function heInit(n: number, fanIn: number, rand: () => number): Float32Array {
  const limit = Math.sqrt(6 / fanIn)
  return Float32Array.from({ length: n }, () => (2 * rand() - 1) * limit)
}

/** Index of the largest of `n` values starting at `at`. */
function argmax(v: Float32Array, at: number, n: number): number {
  let best = 0
  for (let k = 1; k < n; k++) if (v[at + k]! > v[at + best]!) best = k
  return best
}

export async function train(data: DataSet, o: TrainOptions, onStep?: OnStep, onEpoch?: (s: EpochStats) => void): Promise<EpochStats[]> {
  const n = data.labels.length
  const [C, H, B] = [data.classes, o.hidden, o.batch]
  if (!(B >= 1 && B <= n)) throw new RangeError(`batch=${B} must be between 1 and the ${n} points`)
  if (!(H >= 1)) throw new RangeError(`hidden=${H} must be at least 1`)

  const graphSize = 256
  const ctx = new Context({
    memSize: Context.tensorOverhead() * 256 + 3 * Context.graphOverhead(graphSize, true),
    noAlloc: true,
  })
  const x = ctx.newTensor2d('f32', 2, B)
  const labels = ctx.newTensor2d('f32', C, B) // one-hot rows
  x.setInput()
  labels.setInput()
  const params: [Tensor, number][] = [] // each with its fan-in (0: a bias, starts at 0)
  const param = (t: Tensor, name: string, fanIn: number): Tensor => {
    t.name = name
    t.setParam()
    params.push([t, fanIn])
    return t
  }
  const w1 = param(ctx.newTensor2d('f32', 2, H), 'w1', 2)
  const b1 = param(ctx.newTensor1d('f32', H), 'b1', 0)
  const w2 = param(ctx.newTensor2d('f32', H, C), 'w2', H)
  const b2 = param(ctx.newTensor1d('f32', C), 'b2', 0)

  const hidden = ctx.relu(ctx.add(ctx.mulMat(w1, x), b1)) // [H, B]
  const logits = ctx.add(ctx.mulMat(w2, hidden), b2) // [C, B]
  const loss = ctx.crossEntropyLoss(logits, labels)
  loss.setLoss()

  // gf: the forward pass; gb: forward + gradients; step: gb + one AdamW update per parameter.
  const gf = ctx.newGraphCustom(graphSize, true)
  gf.buildForwardExpand(loss)
  const gb = ctx.graphDup(gf)
  ctx.buildBackwardExpand(gf, gb, false)
  const step = ctx.graphDup(gb)
  ctx.buildOptAdamw(gf, step, { alpha: o.lr, beta1: 0.9, beta2: 0.999, eps: 1e-8, wd: 0 })

  const cpu = Backend.init('CPU')
  const buffer = cpu.allocCtxTensors(ctx)
  const rand = rng(o.seed)
  for (const [t, fanIn] of params) {
    t.fromFloat32(fanIn > 0 ? heInit(t.nelements, fanIn, rand) : new Float32Array(t.nelements))
  }
  step.reset() // loss gradient 1, other gradients 0, AdamW at iteration 1 with zero moments

  const steps = Math.floor(n / B)
  const xs = new Float32Array(2 * B)
  const ys = new Float32Array(C * B)
  const history: EpochStats[] = []
  try {
    for (let epoch = 1; epoch <= o.epochs; epoch++) {
      const order = shuffled(n, rand)
      let [lossSum, correct] = [0, 0]
      for (let s = 0; s < steps; s++) {
        ys.fill(0)
        for (let i = 0; i < B; i++) {
          const k = order[s * B + i]!
          xs[2 * i] = data.points[2 * k]!
          xs[2 * i + 1] = data.points[2 * k + 1]!
          ys[C * i + data.labels[k]!] = 1
        }
        x.fromFloat32(xs)
        labels.fromFloat32(ys)
        await cpu.compute(step)
        const l = loss.toFloat32()[0]!
        const z = logits.toFloat32()
        for (let i = 0; i < B; i++) if (ys[C * i + argmax(z, C * i, C)] === 1) correct++
        lossSum += l
        onStep?.(epoch, s + 1, steps, l)
      }
      const stats = { epoch, loss: lossSum / steps, accuracy: correct / (steps * B) }
      history.push(stats)
      onEpoch?.(stats)
    }
  } finally {
    buffer?.dispose()
    ctx.dispose()
  }
  return history
}
