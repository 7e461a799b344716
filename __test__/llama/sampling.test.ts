// Sampling as llama-sampling does it: std::mt19937 checked against the C++ standard's own
// values, then each sampler of the chain on hand-worked logits.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { Mt19937, Sampler, argmax } from '../../models/llama/index.ts'

test('Mt19937 is std::mt19937: the standard requires 4123659995 as the 10000th value of seed 5489', () => {
  const rng = new Mt19937(5489)
  assert.equal(rng.next(), 3499211612)
  for (let i = 2; i < 10000; i++) rng.next()
  assert.equal(rng.next(), 4123659995)
  const u = new Mt19937(1)
  for (let i = 0; i < 1000; i++) {
    const x = u.canonical()
    assert.ok(x >= 0 && x < 1)
  }
})

const ln = Math.log
const opts = { topK: 0, topP: 1, minP: 0 }

function frequencies(s: Sampler, logits: number[], n: number): number[] {
  const f = new Array(logits.length).fill(0)
  for (let i = 0; i < n; i++) f[s.sample(Float32Array.from(logits))]++
  return f.map((c) => c / n)
}

test('temperature 1 draws tokens with their softmax probabilities; temperature 0 is greedy', () => {
  // probabilities 1/7, 2/7, 4/7
  const f = frequencies(new Sampler({ ...opts, temperature: 1, seed: 3 }), [0, ln(2), ln(4)], 7000)
  ;[1 / 7, 2 / 7, 4 / 7].forEach((p, i) => assert.ok(Math.abs(f[i] - p) < 0.03, `token ${i}: ${f[i]} vs ${p}`))
  // A high temperature flattens: 1/7 grows towards 1/3.
  const hot = frequencies(new Sampler({ ...opts, temperature: 4, seed: 3 }), [0, ln(2), ln(4)], 3000)
  assert.ok(hot[0] > 0.25, `${hot[0]}`)
  const greedy = new Sampler({ ...opts, temperature: 0, seed: 3 })
  for (let i = 0; i < 20; i++) assert.equal(greedy.sample(Float32Array.from([0.1, 3, 2.9, -5])), 1)
  assert.equal(argmax([1, 5, 5, 2]), 1, 'the first maximum, as llama.cpp')
})

test('top-k, top-p and min-p keep the candidates llama-sampling keeps', () => {
  const logits = [ln(0.5), ln(0.3), ln(0.2)]
  const seen = (o: object) => new Set(Array.from({ length: 400 }, () => 0).map((_, i) => new Sampler({ ...opts, temperature: 1, seed: i, ...o }).sample(Float32Array.from(logits))))
  assert.deepEqual([...seen({ topK: 1 })], [0])
  assert.deepEqual([...seen({ topK: 2 })].sort(), [0, 1])
  // top-p 0.6: 0.5 < 0.6, 0.5 + 0.3 >= 0.6 -> two kept.
  assert.deepEqual([...seen({ topP: 0.6 })].sort(), [0, 1])
  assert.deepEqual([...seen({ topP: 0.5 })], [0])
  // min-p 0.5: keep p >= 0.5 * 0.5 -> 0.5 and 0.3.
  assert.deepEqual([...seen({ minP: 0.5 })].sort(), [0, 1])
  assert.deepEqual([...seen({})].sort(), [0, 1, 2])
})

test('repetition penalties divide positive and multiply negative logits of recent tokens', () => {
  const s = new Sampler({ ...opts, temperature: 0, repeatPenalty: 2, repeatLastN: 4, seed: 1 })
  s.accept(0)
  // 2.0 / 2 = 1.0 < 1.9: token 1 wins over the repeated token 0.
  assert.equal(s.sample(Float32Array.from([2, 1.9, -1])), 1)
  // Now 0 and 1 are recent: -0.5 * 2 = -1 < -0.9.
  assert.equal(s.sample(Float32Array.from([-0.5, -5, -0.9])), 2)
  // Outside the last 4 tokens, 0 is no longer penalized.
  for (const t of [2, 2, 2, 2]) s.accept(t)
  assert.equal(s.sample(Float32Array.from([2, 1.9, -1])), 0)
  // The newline token is spared unless penalizeNewline.
  const nl = new Sampler({ ...opts, temperature: 0, repeatPenalty: 10, seed: 1 }, 0)
  nl.accept(0)
  assert.equal(nl.sample(Float32Array.from([2, 1.9])), 0)
  const nl2 = new Sampler({ ...opts, temperature: 0, repeatPenalty: 10, penalizeNewline: true, seed: 1 }, 0)
  nl2.accept(0)
  assert.equal(nl2.sample(Float32Array.from([2, 1.9])), 1)
  // Frequency and presence penalties subtract count * freq + presence.
  const fp = new Sampler({ ...opts, temperature: 0, frequencyPenalty: 0.5, presencePenalty: 0.1, seed: 1 })
  fp.accept(0)
  fp.accept(0)
  assert.equal(fp.sample(Float32Array.from([2, 1])), 1) // 2 - 1 - 0.1 < 1
})

test('a seed reproduces the draws; reset starts them over', () => {
  const logits = Float32Array.from(Array.from({ length: 50 }, (_, i) => Math.sin(i)))
  const a = new Sampler({ temperature: 1.5, topK: 0, topP: 1, minP: 0, seed: 7 })
  const b = new Sampler({ temperature: 1.5, topK: 0, topP: 1, minP: 0, seed: 7 })
  const xs = Array.from({ length: 20 }, () => a.sample(logits))
  assert.deepEqual(Array.from({ length: 20 }, () => b.sample(logits)), xs)
  assert.ok(new Set(xs).size > 3)
  a.reset()
  assert.deepEqual(Array.from({ length: 20 }, () => a.sample(logits)), xs)
})
