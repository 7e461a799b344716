// A binary heap ordered by a "pops first" predicate: the work queues of llama.cpp's SPM and
// BPE tokenizers (std::priority_queue with their comparators).

export class Heap<T> {
  private items: T[] = []

  constructor(private readonly first: (a: T, b: T) => boolean) {}

  get size(): number {
    return this.items.length
  }

  push(x: T): void {
    const a = this.items
    a.push(x)
    let i = a.length - 1
    while (i > 0) {
      const p = (i - 1) >> 1
      if (!this.first(a[i], a[p])) break
      ;[a[i], a[p]] = [a[p], a[i]]
      i = p
    }
  }

  pop(): T | undefined {
    const a = this.items
    if (a.length === 0) return undefined
    const top = a[0]
    const last = a.pop() as T
    if (a.length > 0) {
      a[0] = last
      let i = 0
      for (;;) {
        const l = 2 * i + 1
        const r = l + 1
        let m = i
        if (l < a.length && this.first(a[l], a[m])) m = l
        if (r < a.length && this.first(a[r], a[m])) m = r
        if (m === i) break
        ;[a[i], a[m]] = [a[m], a[i]]
        i = m
      }
    }
    return top
  }
}
