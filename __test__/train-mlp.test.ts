// The train-mlp example: a short run must learn the spirals, judged against bounds taken
// from the data set itself, and the program must keep stdout to results.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { labelEntropy, majorityRate, spirals } from '../examples/train-mlp/data.ts'
import { DEFAULTS, train } from '../examples/train-mlp/mlp.ts'

test('a short run ends far below the best constant predictor', async () => {
  const data = spirals(3, 100, 7)
  // The best constant predictor outputs the class frequencies: its cross-entropy is the
  // entropy of the labels (ln 3 here, balanced classes) and its accuracy the majority rate.
  const entropy = labelEntropy(data)
  assert.ok(Math.abs(entropy - Math.log(3)) < 1e-12)
  const history = await train(data, { ...DEFAULTS, epochs: 30, seed: 7 })
  assert.equal(history.length, 30)
  const first = history[0]!
  const last = history[history.length - 1]!
  assert.ok(history.every((s) => Number.isFinite(s.loss)))
  // Spirals are not linearly separable: getting under a quarter of the entropy takes the
  // hidden layer, and the fit must show in accuracy too (twice the majority rate).
  assert.ok(last.loss < entropy / 4, `final loss ${last.loss} is not below ${entropy / 4}`)
  assert.ok(last.loss < first.loss / 2, `loss fell only from ${first.loss} to ${last.loss}`)
  assert.ok(last.accuracy > 2 * majorityRate(data), `accuracy ${last.accuracy}`)
})

test('the program prints one line per epoch on stdout', async () => {
  const run = promisify(execFile)
  const { stdout } = await run(process.execPath, ['--import', 'tsx', 'examples/train-mlp/main.ts', '--epochs', '3', '--hidden', '8'])
  const lines = stdout.trim().split('\n')
  assert.match(lines[0]!, /^300 points, 3 classes; best constant predictor: loss 1\.0986/)
  assert.deepEqual(lines.slice(1, 4).map((l) => l.match(/^epoch +(\d+) +loss \d+\.\d{4} +accuracy [01]\.\d{3}$/)?.[1]), ['1', '2', '3'])
  assert.match(lines[4]!, /^final loss \d+\.\d{4} \(/)
  assert.equal(lines.length, 5)
  await assert.rejects(run(process.execPath, ['--import', 'tsx', 'examples/train-mlp/main.ts', '--hidden=0']), /--hidden=0 must be a positive integer/)
})
