// A model's vocabulary and tokenizer, read from GGUF metadata as llama.cpp's llm_load_vocab
// reads it at the reference commit: SentencePiece (`tokenizer.ggml.model` = 'llama') or
// byte-level BPE ('gpt2'), special tokens and their attributes, special-token partitioning
// of the input (tokenizer_st_partition), and detokenization (llama_token_to_piece,
// llama_detokenize). Texts are UTF-8 on the wire: pieces come back as bytes.
import type { Gguf } from 'weft-ml'
import { tokenizeBpe } from './bpe.js'
import { preTokenizerFor, type PreTokenizer } from './pretokenize.js'
import { tokenizeSpm } from './spm.js'
import { CHAR_TO_BYTE, concatBytes, utf8 } from './unicode.js'

/** llama_token_attr bits. */
export const ATTR = {
  UNKNOWN: 1 << 0,
  UNUSED: 1 << 1,
  NORMAL: 1 << 2,
  CONTROL: 1 << 3,
  USER_DEFINED: 1 << 4,
  BYTE: 1 << 5,
  NORMALIZED: 1 << 6,
  LSTRIP: 1 << 7,
  RSTRIP: 1 << 8,
  SINGLE_WORD: 1 << 9,
} as const

/** llama_token_type (tokenizer.ggml.token_type) -> attribute, as llm_load_vocab maps them. */
const TYPE_TO_ATTR = [0, ATTR.NORMAL, ATTR.UNKNOWN, ATTR.CONTROL, ATTR.USER_DEFINED, ATTR.UNUSED, ATTR.BYTE]

/** Texts llama.cpp recognises as end-of-generation tokens. */
const EOG_TEXTS = ['<|eot_id|>', '<|im_end|>', '<|end|>', '<end_of_turn>', '<|endoftext|>', '<|eom_id|>', '<EOT>']

export type VocabType = 'spm' | 'bpe'

/** What the tokenizer sessions read. */
export interface VocabTables {
  tokenToId: Map<string, number>
  scores: Float32Array
  bpeRanks: Map<string, number>
  pre: PreTokenizer
  byteToToken(b: number): number
}

export interface TokenizeOptions {
  /** Add BOS / EOS as the vocabulary asks (llama.cpp's add_special). Default true. */
  addSpecial?: boolean
  /** Turn the text of control tokens (e.g. '<s>') into those tokens. Default false. */
  parseSpecial?: boolean
}

function stringArray(g: Gguf, key: string): string[] | null {
  const v = g.get(key)
  if (v === null) return null
  if (!Array.isArray(v) || v.some((x) => typeof x !== 'string')) throw new Error(`tokenizer: '${key}' must be an array of strings`)
  return v as string[]
}

function numberArray(g: Gguf, key: string, n: number): number[] | null {
  const v = g.get(key)
  if (v === null) return null
  if (!Array.isArray(v) || v.length !== n) throw new Error(`tokenizer: '${key}' must be an array of ${n} numbers`)
  return v.map(Number)
}

export class Vocab implements VocabTables {
  readonly type: VocabType
  readonly pre: PreTokenizer
  readonly texts: string[]
  readonly scores: Float32Array
  readonly attrs: Uint16Array
  readonly tokenToId = new Map<string, number>()
  readonly bpeRanks = new Map<string, number>()
  bos = -1
  eos = -1
  eot = -1
  unk = -1
  pad = -1
  addBos: boolean
  addEos: boolean
  addSpacePrefix: boolean
  cleanSpaces: boolean
  /** End-of-generation tokens. */
  readonly eog = new Set<number>()
  /** Control, user-defined and unknown tokens, longest text first (tokenizer_st_partition's order). */
  private readonly specialTokens: number[]
  private readonly pieces: (Uint8Array | undefined)[]

  constructor(g: Gguf) {
    const model = g.get('tokenizer.ggml.model')
    const pre = g.get('tokenizer.ggml.pre')
    if (model === 'llama') {
      this.type = 'spm'
      ;[this.bos, this.eos, this.unk] = [1, 2, 0]
      this.pre = preTokenizerFor('default')
      this.addSpacePrefix = true
      this.cleanSpaces = false
      this.addBos = true
      this.addEos = false
    } else if (model === 'gpt2') {
      this.type = 'bpe'
      ;[this.bos, this.eos] = [11, 11]
      this.pre = preTokenizerFor(typeof pre === 'string' ? pre : undefined)
      this.addSpacePrefix = false
      this.cleanSpaces = this.pre.cleanSpaces ?? true
      this.addBos = this.pre.addBos ?? false
      this.addEos = false
      const merges = stringArray(g, 'tokenizer.ggml.merges')
      if (!merges) throw new Error('tokenizer: a gpt2 vocabulary needs tokenizer.ggml.merges')
      merges.forEach((m, i) => {
        const at = m.indexOf(' ', 1)
        const key = at < 0 ? ' ' : m
        if (!this.bpeRanks.has(key)) this.bpeRanks.set(key, i)
      })
    } else {
      throw new Error(`tokenizer: model '${String(model)}' is not supported (llama, gpt2)`)
    }
    const prefix = g.get('tokenizer.ggml.add_space_prefix')
    if (typeof prefix === 'boolean') this.addSpacePrefix = prefix

    const texts = stringArray(g, 'tokenizer.ggml.tokens')
    if (!texts || texts.length === 0) throw new Error('tokenizer: the file has no tokenizer.ggml.tokens')
    const n = texts.length
    this.texts = texts.map((t, i) => (t === '' ? `[EMPTY_${i}]` : t))
    this.texts.forEach((t, i) => this.tokenToId.set(t, i))
    this.scores = Float32Array.from(numberArray(g, 'tokenizer.ggml.scores', n) ?? new Array<number>(n).fill(0))
    const types = numberArray(g, 'tokenizer.ggml.token_type', n)
    this.attrs = new Uint16Array(n).fill(ATTR.NORMAL)
    if (types) types.forEach((t, i) => (this.attrs[i] = TYPE_TO_ATTR[t] ?? 0))

    const id = (key: string, dflt: number) => {
      const v = g.get(`tokenizer.ggml.${key}`)
      return typeof v === 'number' && Number.isInteger(v) && v >= 0 && v < n ? v : dflt
    }
    this.bos = id('bos_token_id', this.bos)
    this.eos = id('eos_token_id', this.eos)
    this.eot = id('eot_token_id', -1)
    this.unk = id('unknown_token_id', this.unk)
    this.pad = id('padding_token_id', -1)
    const addBos = g.get('tokenizer.ggml.add_bos_token')
    if (typeof addBos === 'boolean') this.addBos = addBos
    const addEos = g.get('tokenizer.ggml.add_eos_token')
    if (typeof addEos === 'boolean') this.addEos = addEos

    // End of generation: EOS, EOT and the usual end texts (made control tokens, as llama.cpp does).
    for (const t of EOG_TEXTS) {
      const i = this.tokenToId.get(t)
      if (i === undefined) continue
      if (this.eot === -1 && t !== '<|eom_id|>') this.eot = i
      this.eog.add(i)
      this.attrs[i] = ATTR.CONTROL
    }
    for (const i of [this.eos, this.eot]) if (i >= 0) this.eog.add(i)

    const special: number[] = []
    const mask = ATTR.CONTROL | ATTR.USER_DEFINED | ATTR.UNKNOWN
    for (let i = 0; i < n; i++) if (this.attrs[i] & mask) special.push(i)
    this.specialTokens = special.sort((a, b) => this.texts[b].length - this.texts[a].length)
    this.pieces = new Array(n)
  }

  get nVocab(): number {
    return this.texts.length
  }

  isEog(id: number): boolean {
    return this.eog.has(id)
  }

  /** llama_byte_to_token_impl. */
  byteToToken(b: number): number {
    if (this.type === 'spm') {
      const hex = `<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`
      const id = this.tokenToId.get(hex) ?? (b < 0x80 ? this.tokenToId.get(String.fromCharCode(b)) : undefined)
      if (id === undefined) throw new Error(`tokenizer: the vocabulary has no token for byte 0x${b.toString(16)}`)
      return id
    }
    throw new Error('tokenizer: byte tokens exist only in SentencePiece vocabularies')
  }

  /** Text into token ids (llama_tokenize). */
  tokenize(text: string, options: TokenizeOptions = {}): number[] {
    const addSpecial = options.addSpecial ?? true
    const out: number[] = []
    if (addSpecial && this.addBos) out.push(this.bos)
    let prevSpecial = true
    for (const frag of this.partition(text, options.parseSpecial ?? false)) {
      if (typeof frag === 'number') {
        out.push(frag)
        prevSpecial = true
        continue
      }
      if (this.type === 'spm') {
        const raw = this.addSpacePrefix && prevSpecial ? ' ' + frag : frag
        tokenizeSpm(this, raw.replaceAll(' ', '\u2581'), out)
      } else {
        tokenizeBpe(this, frag, out)
      }
      prevSpecial = false
    }
    if (addSpecial && this.addEos) out.push(this.eos)
    return out
  }

  /** tokenizer_st_partition: the text split around special-token texts. */
  private partition(text: string, parseSpecial: boolean): (string | number)[] {
    let frags: (string | number)[] = text.length > 0 ? [text] : []
    for (const id of this.specialTokens) {
      const attr = this.attrs[id]
      if (!parseSpecial && attr & (ATTR.CONTROL | ATTR.UNKNOWN)) continue
      const tok = this.texts[id]
      const next: (string | number)[] = []
      for (const f of frags) {
        if (typeof f === 'number') {
          next.push(f)
          continue
        }
        let rest = f
        for (let at = rest.indexOf(tok); at >= 0; at = rest.indexOf(tok)) {
          let left = rest.slice(0, at)
          if (attr & ATTR.LSTRIP) left = left.replace(/[ \t\n\v\f\r]+$/, '')
          if (left.length > 0) next.push(left)
          next.push(id)
          rest = rest.slice(at + tok.length)
          if (attr & ATTR.RSTRIP) rest = rest.replace(/^[ \t\n\v\f\r]+/, '')
        }
        if (rest.length > 0) next.push(rest)
      }
      frags = next
    }
    return frags
  }

  /** A token's bytes (llama_token_to_piece); control and unknown tokens are empty unless `special`. */
  tokenToPiece(id: number, special = false, lstrip = 0): Uint8Array {
    if (!Number.isInteger(id) || id < 0 || id >= this.nVocab) throw new Error(`tokenizer: token ${id} is not in 0..${this.nVocab - 1}`)
    const attr = this.attrs[id]
    if (!special && attr & (ATTR.UNKNOWN | ATTR.CONTROL)) return new Uint8Array(0)
    let piece = (this.pieces[id] ??= this.pieceOf(id))
    for (let i = 0; i < lstrip && piece.length > 0 && piece[0] === 0x20; i++) piece = piece.subarray(1)
    return piece
  }

  private pieceOf(id: number): Uint8Array {
    const attr = this.attrs[id]
    const text = this.texts[id]
    if (attr & (ATTR.UNKNOWN | ATTR.CONTROL | ATTR.USER_DEFINED)) return utf8(text)
    if (this.type === 'spm') {
      if (attr & ATTR.NORMAL) return utf8(text.replaceAll('\u2581', ' '))
      if (attr & ATTR.BYTE) return Uint8Array.of(parseInt(text.slice(3, 5), 16))
      return new Uint8Array(0)
    }
    if (!(attr & ATTR.NORMAL)) return new Uint8Array(0)
    // llama_decode_text: GPT-2 characters back to bytes.
    const bytes: number[] = []
    for (const ch of text) {
      const b = CHAR_TO_BYTE.get(ch)
      if (b !== undefined) bytes.push(b)
      else bytes.push(...utf8(`[UNK_BYTE_0x${Array.from(utf8(ch), (x) => x.toString(16).padStart(2, '0')).join('')}${text}]`))
    }
    return Uint8Array.from(bytes)
  }

  /** Token ids back into bytes (llama_detokenize), with BPE's space clean-up. */
  detokenizeBytes(ids: number[], options: { removeSpecial?: boolean; unparseSpecial?: boolean } = {}): Uint8Array {
    let toks = ids
    let removeSpace = this.addSpacePrefix
    if (options.removeSpecial && this.addBos && toks.length > 0 && toks[0] === this.bos) {
      removeSpace = false
      toks = toks.slice(1)
    }
    if (options.removeSpecial && this.addEos && toks.length > 0 && toks[toks.length - 1] === this.eos) toks = toks.slice(0, -1)
    const parts = toks.map((t, i) => this.tokenToPiece(t, options.unparseSpecial ?? false, i === 0 && removeSpace ? 1 : 0))
    const text = concatBytes(parts)
    return this.cleanSpaces ? cleanUpSpaces(text) : text
  }

  detokenize(ids: number[], options: { removeSpecial?: boolean; unparseSpecial?: boolean } = {}): string {
    return new TextDecoder().decode(this.detokenizeBytes(ids, options))
  }
}

/** llama_detokenize's three clean-up passes (tokenizer_clean_spaces). */
function cleanUpSpaces(src: Uint8Array): Uint8Array {
  const sp = 0x20
  const q = 0x27
  const code = (c: string) => c.charCodeAt(0)
  // " ?", " !", " .", " ," lose their space.
  const t: number[] = []
  for (let i = 0; i < src.length; i++) {
    const x = src[i]
    if (i > 0 && src[i - 1] === sp && (x === code('?') || x === code('!') || x === code('.') || x === code(','))) t.pop()
    t.push(x)
  }
  // " ' " loses both spaces. llama.cpp overwrites the skipped space with NUL in place, so
  // the character after it does not see a space before it.
  const u: number[] = []
  let nul = -1
  for (let i = 0; i < t.length; i++) {
    const x = t[i]
    const before = i - 1 === nul ? 0 : t[i - 1]
    if (i > 0 && x === q && i + 1 < t.length && before === sp && t[i + 1] === sp) {
      u.pop()
      u.push(x)
      nul = ++i
      continue
    }
    u.push(x)
  }
  // " 's", " 'm", " 're", " 've" lose their space.
  const w: number[] = []
  for (let i = 0; i < u.length; i++) {
    const x = u[i]
    if (i > 0 && u[i - 1] === sp && x === q && i + 1 < u.length) {
      const x1 = u[i + 1]
      const x2 = i + 2 < u.length ? u[i + 2] : -1
      const s_or_m = x1 === code('s') || x1 === code('m')
      const re_ve = (x1 === code('r') || x1 === code('v')) && x2 === code('e')
      if (s_or_m || re_ve) w.pop()
    }
    w.push(x)
  }
  return Uint8Array.from(w)
}
