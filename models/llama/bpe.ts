// Byte-level BPE, as llama.cpp's llm_tokenizer_bpe_session at the reference commit: split the
// text into words (pretokenize.ts), write each word's UTF-8 bytes as GPT-2's printable
// characters, then repeatedly merge the adjacent pair with the lowest merge rank (ties:
// leftmost); pieces that are not tokens fall back to single-character tokens.
import { Heap } from './heap.js'
import { preTokenize } from './pretokenize.js'
import { BYTE_TO_CHAR, utf8 } from './unicode.js'
import type { VocabTables } from './vocab.js'

interface Bigram {
  left: number
  right: number
  text: string
  rank: number
}

/** A word's bytes as GPT-2 characters (unicode_byte_encoding_process). */
function byteEncode(word: string): string {
  let s = ''
  for (const b of utf8(word)) s += BYTE_TO_CHAR[b]
  return s
}

function mergeWord(v: VocabTables, word: string, out: string[]): void {
  const sym: string[] = []
  if (v.pre.ignoreMerges && v.tokenToId.has(word)) sym.push(word)
  else for (const ch of word) sym.push(ch)
  const prev = sym.map((_, i) => i - 1)
  const next = sym.map((_, i) => (i + 1 < sym.length ? i + 1 : -1))
  const queue = new Heap<Bigram>((a, b) => a.rank < b.rank || (a.rank === b.rank && a.left < b.left))
  const add = (left: number, right: number) => {
    if (left === -1 || right === -1) return
    const rank = v.bpeRanks.get(sym[left] + ' ' + sym[right])
    if (rank === undefined) return
    queue.push({ left, right, text: sym[left] + sym[right], rank })
  }
  for (let i = 1; i < sym.length; i++) add(i - 1, i)
  for (let b = queue.pop(); b !== undefined; b = queue.pop()) {
    const l = sym[b.left]
    const r = sym[b.right]
    // Skip pairs that changed since they were queued.
    if (l.length === 0 || r.length === 0 || l + r !== b.text) continue
    sym[b.left] = b.text
    sym[b.right] = ''
    next[b.left] = next[b.right]
    if (next[b.right] >= 0) prev[next[b.right]] = b.left
    add(prev[b.left], b.left)
    add(b.left, next[b.left])
  }
  for (const s of sym) if (s.length > 0) out.push(s)
}

export function tokenizeBpe(v: VocabTables, text: string, out: number[]): void {
  const pieces: string[] = []
  for (const word of preTokenize(text, v.pre)) mergeWord(v, byteEncode(word), pieces)
  for (const p of pieces) {
    const id = v.tokenToId.get(p)
    if (id !== undefined) {
      out.push(id)
      continue
    }
    // llama.cpp looks each byte of the piece up as a one-byte string: only ASCII can match.
    for (const b of utf8(p)) {
      const single = b < 0x80 ? v.tokenToId.get(String.fromCharCode(b)) : undefined
      if (single !== undefined) out.push(single)
    }
  }
}
