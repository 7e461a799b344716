// A seeded PRNG (xoshiro128**), so every run of a case sees the same inputs. ggml seeds from
// std::random_device; a fixed seed makes a failure reproducible. Each case gets its own
// stream derived from the run's seed and the case's name, so filtering (-o, -p) does not
// change any case's data.

/** FNV-1a of a string, 32 bits. */
function hash32(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h >>> 0;
}

function splitmix32(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x9e3779b9) >>> 0;
    let z = s;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
    return (z ^ (z >>> 16)) >>> 0;
  };
}

/** The default seed of a run; WEFT_BACKEND_OPS_SEED or --seed overrides it. */
export const DEFAULT_SEED = 1234;

export class Rng {
  private s0: number;
  private s1: number;
  private s2: number;
  private s3: number;

  constructor(seed: number, stream = '') {
    const sm = splitmix32((seed ^ hash32(stream)) >>> 0);
    this.s0 = sm();
    this.s1 = sm();
    this.s2 = sm();
    this.s3 = sm() | 1;
  }

  /** Next 32 random bits (xoshiro128**). */
  nextU32(): number {
    const r = Math.imul(rotl(Math.imul(this.s1, 5) >>> 0, 7), 9) >>> 0;
    const t = (this.s1 << 9) >>> 0;
    this.s2 ^= this.s0;
    this.s3 ^= this.s1;
    this.s1 ^= this.s2;
    this.s0 ^= this.s3;
    this.s2 ^= t;
    this.s3 = rotl(this.s3 >>> 0, 11);
    this.s0 >>>= 0;
    this.s1 >>>= 0;
    this.s2 >>>= 0;
    return r;
  }

  /** Uniform in [0, 1) with 24 random bits (a float's mantissa). */
  unit(): number {
    return (this.nextU32() >>> 8) / 16777216;
  }

  /** std::uniform_real_distribution<float>(min, max): a float in [min, max). */
  uniform(min: number, max: number): number {
    const v = Math.fround(min + Math.fround(Math.fround(max - min) * this.unit()));
    return v < max ? v : Math.fround(min);
  }

  /**
   * `out[i] = uniform(min, max)` for every i: the same values as calling uniform() that many
   * times, with the state in locals so V8 keeps it in registers (the perf cases fill 58M
   * floats per tensor; one call per value took seconds).
   */
  fillUniform(out: Float32Array, min: number, max: number): void {
    let s0 = this.s0;
    let s1 = this.s1;
    let s2 = this.s2;
    let s3 = this.s3;
    const lo = Math.fround(min);
    const span = Math.fround(max - min);
    const n = out.length;
    for (let i = 0; i < n; i++) {
      const x = Math.imul(s1, 5) >>> 0;
      const r = Math.imul((x << 7) | (x >>> 25), 9) >>> 0;
      const t = (s1 << 9) >>> 0;
      s2 ^= s0;
      s3 ^= s1;
      s1 ^= s2;
      s0 ^= s3;
      s2 ^= t;
      s3 = ((s3 << 11) | (s3 >>> 21)) >>> 0;
      s0 >>>= 0;
      s1 >>>= 0;
      s2 >>>= 0;
      const v = Math.fround(min + Math.fround(span * (r >>> 8) * 5.9604644775390625e-8));
      out[i] = v < max ? v : lo;
    }
    this.s0 = s0;
    this.s1 = s1;
    this.s2 = s2;
    this.s3 = s3;
  }

  /** C's rand(): a non-negative 31-bit int. */
  rand(): number {
    return this.nextU32() >>> 1;
  }

  /** std::shuffle (Fisher-Yates). */
  shuffle<T>(a: { length: number; [i: number]: T }): void {
    for (let i = a.length - 1; i > 0; i--) {
      const j = this.nextU32() % (i + 1);
      const t = a[i]!;
      a[i] = a[j]!;
      a[j] = t;
    }
  }
}

function rotl(x: number, k: number): number {
  return ((x << k) | (x >>> (32 - k))) >>> 0;
}
