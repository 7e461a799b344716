// The data set: 2-D points on interleaved spiral arms, one arm per class (the classic
// example no linear model separates), generated from a seed.

/** A seeded generator of uniform numbers in [0, 1) (mulberry32). */
export function rng(seed: number): () => number {
  let s = seed >>> 0
  return () => {
    s = (s + 0x6d2b79f5) >>> 0
    let t = s
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

export interface DataSet {
  /** n points as (x, y) pairs, 2n values. */
  points: Float32Array
  /** The class of each point. */
  labels: Int32Array
  classes: number
}

/**
 * `perClass` points on each of `classes` spiral arms: radius from 0 to 1, angle turning by
 * 4 radians along the arm plus Gaussian-ish noise of 0.2 radians.
 */
export function spirals(classes: number, perClass: number, seed: number): DataSet {
  const rand = rng(seed)
  const n = classes * perClass
  const points = new Float32Array(2 * n)
  const labels = new Int32Array(n)
  for (let c = 0; c < classes; c++) {
    for (let i = 0; i < perClass; i++) {
      const k = c * perClass + i
      const r = i / perClass
      // Sum of three uniforms: close enough to a normal for noise, and bounded.
      const noise = (rand() + rand() + rand() - 1.5) * 0.4
      const t = (c * 2 * Math.PI) / classes + 4 * r + noise
      points[2 * k] = r * Math.sin(t)
      points[2 * k + 1] = r * Math.cos(t)
      labels[k] = c
    }
  }
  return { points, labels, classes }
}

/**
 * Entropy (nats) of the label distribution: the cross-entropy of the best constant
 * predictor, which outputs the class frequencies whatever the input.
 */
export function labelEntropy(data: DataSet): number {
  const counts = new Array<number>(data.classes).fill(0)
  for (const l of data.labels) counts[l]!++
  const n = data.labels.length
  return -counts.filter((c) => c > 0).reduce((h, c) => h + (c / n) * Math.log(c / n), 0)
}

/** Share of points in the most common class: the accuracy of always guessing it. */
export function majorityRate(data: DataSet): number {
  const counts = new Array<number>(data.classes).fill(0)
  for (const l of data.labels) counts[l]!++
  return Math.max(...counts) / data.labels.length
}

/** A random order of 0..n-1 (Fisher-Yates). */
export function shuffled(n: number, rand: () => number): Int32Array {
  const order = Int32Array.from({ length: n }, (_, i) => i)
  for (let i = n - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1))
    const t = order[i]!
    order[i] = order[j]!
    order[j] = t
  }
  return order
}
