// SentencePiece-style tokenization with byte fallback, as llama.cpp's llm_tokenizer_spm_session
// at the reference commit: start from single characters, repeatedly merge the adjacent pair
// whose merged text is the highest-scoring token (ties: leftmost), then resegment pieces that
// are not tokens through the merges that made them, down to <0xXX> byte tokens.
import { Heap } from './heap.js'
import { utf8 } from './unicode.js'
import type { VocabTables } from './vocab.js'

interface Bigram {
  left: number
  right: number
  score: number
  size: number
}

export function tokenizeSpm(v: VocabTables, text: string, out: number[]): void {
  // Symbols: [start, length) in `text` (UTF-16 units), linked left to right.
  const start: number[] = []
  const len: number[] = []
  const prev: number[] = []
  const next: number[] = []
  let offs = 0
  for (const ch of text) {
    const i = start.length
    start.push(offs)
    len.push(ch.length)
    offs += ch.length
    prev.push(i - 1)
    next.push(offs === text.length ? -1 : i + 1)
  }
  const textOf = (i: number, n = len[i]) => text.slice(start[i], start[i] + n)
  const queue = new Heap<Bigram>((a, b) => a.score > b.score || (a.score === b.score && a.left < b.left))
  const revMerge = new Map<string, [number, number]>()
  const tryAdd = (left: number, right: number) => {
    if (left === -1 || right === -1) return
    const s = textOf(left, len[left] + len[right])
    const id = v.tokenToId.get(s)
    if (id === undefined) return
    queue.push({ left, right, score: v.scores[id], size: s.length })
    revMerge.set(s, [left, right])
  }
  for (let i = 1; i < start.length; i++) tryAdd(i - 1, i)
  for (let b = queue.pop(); b !== undefined; b = queue.pop()) {
    // Skip pairs one of whose symbols has been merged since.
    if (len[b.left] === 0 || len[b.right] === 0 || len[b.left] + len[b.right] !== b.size) continue
    len[b.left] += len[b.right]
    len[b.right] = 0
    next[b.left] = next[b.right]
    if (next[b.right] >= 0) prev[next[b.right]] = b.left
    tryAdd(prev[b.left], b.left)
    tryAdd(b.left, next[b.left])
  }
  const resegment = (s: string) => {
    const id = v.tokenToId.get(s)
    if (id !== undefined) {
      out.push(id)
      return
    }
    const p = revMerge.get(s)
    if (p === undefined) {
      for (const byte of utf8(s)) out.push(v.byteToToken(byte))
      return
    }
    resegment(textOf(p[0]))
    resegment(textOf(p[1]))
  }
  if (start.length === 0) return
  for (let i = 0; i !== -1; i = next[i]) resegment(textOf(i))
}
