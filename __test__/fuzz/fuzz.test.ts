// A short fixed-seed run of the fuzzer (run.ts): a few batches of API calls, kernel graphs
// and hostile GGUF files, each batch in its own process. Any crash, hang, caught panic or
// error without a WEFT_ code fails the test, printing the calls that led to it. Longer
// runs: npm run fuzz -- --seconds 600 --seed N.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { failureCount, formatReport, runFuzz } from './run.ts'

test('fuzz: API calls, kernel graphs and GGUF files (fixed seed, short)', async () => {
  const report = await runFuzz({
    seconds: 600, // bounded by maxBatches: api, kernel, api, gguf
    maxBatches: 4,
    seed: 20241106,
    sizes: { api: ['--calls', '350'], kernel: ['--graphs', '40'], gguf: ['--files', '120'] },
  })
  const text = formatReport(report)
  console.log(text)
  const f = failureCount(report)
  assert.deepEqual(f, { crashes: 0, hangs: 0, panics: 0, uncoded: 0, nonErrors: 0 }, text)
  // The run reached the code under test: most calls ran, and some kernels computed.
  assert.ok(report.tallies.api.calls > 500, text)
  assert.ok((report.tallies.kernel.byCode.ok ?? 0) >= 10, text)
  assert.ok((report.tallies.gguf.byCode.WEFT_FORMAT ?? 0) > 10, text)
})
