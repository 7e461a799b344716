// Train a two-layer MLP on 2-D spirals with weft's autodiff and AdamW on the CPU, printing
// the loss of every epoch on stdout and a progress bar on stderr.
//
//   npm run train -- --epochs 200 --hidden 32
//   node --import tsx examples/train-mlp/main.ts --help
import { parseArgs } from 'node:util'
import { labelEntropy, majorityRate, spirals } from './data.ts'
import { DEFAULTS, train, type TrainOptions } from './mlp.ts'
import { Progress } from './progress.ts'

const USAGE = `usage: train-mlp [options]
  --epochs N     passes over the data (default ${DEFAULTS.epochs})
  --hidden N     hidden units (default ${DEFAULTS.hidden})
  --batch N      points per step (default ${DEFAULTS.batch})
  --lr X         AdamW learning rate (default ${DEFAULTS.lr})
  --seed N       seed of the data, weights and shuffling (default ${DEFAULTS.seed})
  --classes N    spiral arms (default 3)
  --points N     points per arm (default 100)`

function positive(name: string, v: string | undefined, fallback: number, integer = true): number {
  if (v === undefined) return fallback
  const x = Number(v)
  if (!Number.isFinite(x) || x <= 0 || (integer && !Number.isInteger(x))) {
    throw new RangeError(`--${name}=${v} must be a positive ${integer ? 'integer' : 'number'}`)
  }
  return x
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      epochs: { type: 'string' },
      hidden: { type: 'string' },
      batch: { type: 'string' },
      lr: { type: 'string' },
      seed: { type: 'string' },
      classes: { type: 'string' },
      points: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  })
  if (values.help) {
    console.log(USAGE)
    return
  }
  const opts: TrainOptions = {
    epochs: positive('epochs', values.epochs, DEFAULTS.epochs),
    hidden: positive('hidden', values.hidden, DEFAULTS.hidden),
    batch: positive('batch', values.batch, DEFAULTS.batch),
    lr: positive('lr', values.lr, DEFAULTS.lr, false),
    seed: positive('seed', values.seed, DEFAULTS.seed),
  }
  const classes = positive('classes', values.classes, 3)
  const data = spirals(classes, positive('points', values.points, 100), opts.seed)
  const entropy = labelEntropy(data)
  console.log(
    `${data.labels.length} points, ${classes} classes; best constant predictor: loss ${entropy.toFixed(4)}, ` +
      `accuracy ${majorityRate(data).toFixed(3)}`,
  )

  const bar = new Progress(opts.epochs)
  const history = await train(
    data,
    opts,
    (epoch, step, steps, loss) => bar.update(epoch - 1 + step / steps, `epoch ${epoch}/${opts.epochs} loss ${loss.toFixed(4)}`),
    (s) => {
      bar.clear()
      console.log(`epoch ${String(s.epoch).padStart(4)}  loss ${s.loss.toFixed(4)}  accuracy ${s.accuracy.toFixed(3)}`)
    },
  )
  bar.clear()
  const last = history[history.length - 1]!
  console.log(`final loss ${last.loss.toFixed(4)} (${((100 * last.loss) / entropy).toFixed(1)}% of the label entropy)`)
}

main().catch((e: unknown) => {
  console.error(e instanceof Error ? e.message : e)
  process.exit(1)
})
