// Token sampling as llama.cpp's llama-sampling at the reference commit, in the order
// common_sampler_init chains them: repetition penalties, top-k, top-p, min-p, temperature,
// then a draw from the softmax with std::mt19937 and libstdc++'s discrete_distribution (so a
// seed picks the same token llama.cpp's dist sampler would from the same probabilities).
// Probabilities are computed in f32 as llama.cpp computes them. temperature <= 0 is greedy.

export interface SamplerOptions {
  /** <= 0 picks the most likely token (llama.cpp's temp sampler then leaves one candidate). Default 0.8. */
  temperature?: number
  /** Keep the k most likely; <= 0 keeps all. Default 40. */
  topK?: number
  /** Keep the most likely tokens whose probabilities add up to p; 1 disables. Default 0.95. */
  topP?: number
  /** Drop tokens less likely than minP times the most likely; 0 disables. Default 0.05. */
  minP?: number
  /** Divide positive (multiply negative) logits of recent tokens by this; 1 disables. Default 1. */
  repeatPenalty?: number
  /** How many recent tokens the penalties look at; 0 disables. Default 64. */
  repeatLastN?: number
  frequencyPenalty?: number
  presencePenalty?: number
  /** Whether the newline token is penalized too. Default false. */
  penalizeNewline?: boolean
  /** Seed of the draw; default a random one. */
  seed?: number
  /** Candidates kept at least by top-p and min-p. Default 1. */
  minKeep?: number
}

interface Candidate {
  id: number
  logit: number
  p: number
}

/** std::mt19937. */
export class Mt19937 {
  private readonly mt = new Uint32Array(624)
  private i = 624

  constructor(seed: number) {
    this.mt[0] = seed >>> 0
    for (let i = 1; i < 624; i++) {
      const x = this.mt[i - 1] ^ (this.mt[i - 1] >>> 30)
      this.mt[i] = (Math.imul(1812433253, x) + i) >>> 0
    }
  }

  next(): number {
    const mt = this.mt
    if (this.i >= 624) {
      for (let k = 0; k < 624; k++) {
        const y = (mt[k] & 0x80000000) | (mt[(k + 1) % 624] & 0x7fffffff)
        mt[k] = mt[(k + 397) % 624] ^ (y >>> 1) ^ (y & 1 ? 0x9908b0df : 0)
      }
      this.i = 0
    }
    let y = mt[this.i++]
    y ^= y >>> 11
    y ^= (y << 7) & 0x9d2c5680
    y ^= (y << 15) & 0xefc60000
    y ^= y >>> 18
    return y >>> 0
  }

  /** std::generate_canonical<double, 53>: two draws, low word first. */
  canonical(): number {
    const r = (this.next() + this.next() * 4294967296) / 18446744073709551616
    return r >= 1 ? 1 - Number.EPSILON / 2 : r
  }
}

const f32 = Math.fround

/** llama_sampler_softmax_impl: sort by logit (descending) and set f32 probabilities. */
function softmax(c: Candidate[], sorted: { v: boolean }): void {
  if (!sorted.v) {
    c.sort((a, b) => b.logit - a.logit)
    sorted.v = true
  }
  const max = c[0].logit
  let sum = 0
  for (const x of c) {
    x.p = f32(Math.exp(f32(x.logit - max)))
    sum = f32(sum + x.p)
  }
  for (const x of c) x.p = f32(x.p / sum)
}

export class Sampler {
  readonly options: Required<Omit<SamplerOptions, 'seed'>> & { seed: number }
  private rng: Mt19937
  private prev: number[] = []

  /** `linefeed`: the newline token, spared by the penalties unless penalizeNewline. */
  constructor(options: SamplerOptions = {}, private readonly linefeed = -1) {
    const seed = options.seed ?? Math.floor(Math.random() * 0xffffffff)
    this.options = {
      temperature: options.temperature ?? 0.8,
      topK: options.topK ?? 40,
      topP: options.topP ?? 0.95,
      minP: options.minP ?? 0.05,
      repeatPenalty: options.repeatPenalty ?? 1,
      repeatLastN: Math.max(0, options.repeatLastN ?? 64),
      frequencyPenalty: options.frequencyPenalty ?? 0,
      presencePenalty: options.presencePenalty ?? 0,
      penalizeNewline: options.penalizeNewline ?? false,
      minKeep: options.minKeep ?? 1,
      seed,
    }
    this.rng = new Mt19937(seed)
  }

  /** Pick the next token from one row of logits and remember it (llama_sampler_sample). */
  sample(logits: Float32Array): number {
    const o = this.options
    const sorted = { v: false }
    // Candidates are made only for the tokens top-k keeps (all of them when it is off).
    let c = topK(this.penalize(logits), o.topK, sorted)
    if (o.topP < 1) {
      softmax(c, sorted)
      let cum = 0
      let last = c.length
      for (let i = 0; i < c.length; i++) {
        cum = f32(cum + c[i].p)
        if (cum >= o.topP && i + 1 >= o.minKeep) {
          last = i + 1
          break
        }
      }
      c = c.slice(0, last)
    }
    if (o.minP > 0 && c.length > 0) c = minP(c, o.minP, o.minKeep, sorted)
    if (o.temperature <= 0) {
      // Only the first maximum keeps its logit; the draw then has one choice.
      let best = 0
      for (let i = 1; i < c.length; i++) if (c[i].logit > c[best].logit) best = i
      c = [c[best]]
    } else {
      for (const x of c) x.logit = f32(x.logit / o.temperature)
    }
    const id = c[this.draw(c, sorted)].id
    this.accept(id)
    return id
  }

  /** Remember a token for the penalties (a prompt's tokens, for instance). */
  accept(token: number): void {
    this.prev.push(token)
    if (this.prev.length > Math.max(this.options.repeatLastN, 32)) this.prev.shift()
  }

  reset(): void {
    this.prev = []
    this.rng = new Mt19937(this.options.seed)
  }

  /** llama_sampler_dist: softmax, then discrete_distribution over the probabilities. */
  private draw(c: Candidate[], sorted: { v: boolean }): number {
    softmax(c, sorted)
    const sum = c.reduce((s, x) => s + x.p, 0)
    const u = this.rng.canonical()
    let cum = 0
    for (let i = 0; i < c.length - 1; i++) {
      cum += c[i].p / sum
      if (cum >= u) return i
    }
    return c.length - 1
  }

  /** llama_sampler_penalties_apply, on a copy of the logits when it changes any. */
  private penalize(logits: Float32Array): Float32Array {
    const o = this.options
    if (o.repeatLastN === 0 || (o.repeatPenalty === 1 && o.frequencyPenalty === 0 && o.presencePenalty === 0)) return logits
    const out = Float32Array.from(logits)
    const count = new Map<number, number>()
    for (const t of this.prev.slice(-o.repeatLastN)) count.set(t, (count.get(t) ?? 0) + 1)
    for (const [id, n] of count) {
      if (id < 0 || id >= out.length) continue
      if (!o.penalizeNewline && id === this.linefeed) continue
      const x = out[id] <= 0 ? f32(out[id] * o.repeatPenalty) : f32(out[id] / o.repeatPenalty)
      out[id] = f32(x - f32(n * o.frequencyPenalty + (n > 0 ? o.presencePenalty : 0)))
    }
    return out
  }
}

/** llama_sampler_top_k_impl: the k largest logits as candidates, sorted. */
function topK(logits: Float32Array, k: number, sorted: { v: boolean }): Candidate[] {
  sorted.v = true
  if (k <= 0 || k >= logits.length) {
    return Array.from(logits, (logit, id) => ({ id, logit, p: 0 })).sort((a, b) => b.logit - a.logit)
  }
  // Keep the k best in a small sorted array: O(n k) worst case, fast for llama.cpp's k = 40.
  const best: Candidate[] = []
  for (let id = 0; id < logits.length; id++) {
    const logit = logits[id]
    if (best.length === k && logit <= best[k - 1].logit) continue
    let i = best.length
    while (i > 0 && best[i - 1].logit < logit) i--
    best.splice(i, 0, { id, logit, p: 0 })
    if (best.length > k) best.pop()
  }
  return best
}

/** llama_sampler_min_p_apply. */
function minP(c: Candidate[], p: number, minKeep: number, sorted: { v: boolean }): Candidate[] {
  if (!sorted.v) {
    let max = -Infinity
    for (const x of c) max = Math.max(max, x.logit)
    const min = f32(max + f32(Math.log(p)))
    const kept = c.filter((x) => x.logit >= min)
    if (kept.length >= minKeep) return kept
    c.sort((a, b) => b.logit - a.logit)
    sorted.v = true
  }
  const min = f32(c[0].logit + f32(Math.log(p)))
  let i = 1
  for (; i < c.length; i++) if (c[i].logit < min && i >= minKeep) break
  return c.slice(0, i)
}

/** The index of the largest value (llama.cpp's greedy sampler: the first maximum). */
export function argmax(logits: ArrayLike<number>): number {
  let best = 0
  for (let i = 1; i < logits.length; i++) if (logits[i] > logits[best]) best = i
  return best
}
