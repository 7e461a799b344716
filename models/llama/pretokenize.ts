// Byte-level BPE pre-tokenization as llama.cpp's unicode_regex_split does it at the
// reference commit: a list of patterns, each splitting the pieces the previous ones left
// (matches and the gaps between them both become pieces). GPT-2's pattern runs as llama.cpp's
// hand-written state machine (unicode_regex_split_custom_gpt2), which is what llama.cpp
// actually executes for it; other patterns run as JS regexes with llama.cpp's whitespace set
// in place of \s.
import { cptFlags, FLAG_LETTER, FLAG_NUMBER, FLAG_WHITESPACE, WHITESPACE_CLASS } from './unicode.js'

/** GPT-2's pattern; llama.cpp recognises this exact text and runs its custom splitter. */
export const GPT2_PATTERN = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)"

const LLAMA3_PATTERN =
  "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
const QWEN2_PATTERN =
  "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"

/** A pre-tokenizer: its patterns and the vocab flags llama.cpp's llm_load_vocab sets with it. */
export interface PreTokenizer {
  name: string
  patterns: string[]
  /** tokenizer_ignore_merges: a whole word found in the vocabulary is one token. */
  ignoreMerges?: boolean
  /** tokenizer_add_bos default. */
  addBos?: boolean
  /** tokenizer_clean_spaces default (true for BPE unless the type says otherwise). */
  cleanSpaces?: boolean
}

const DEFAULT: PreTokenizer = {
  name: 'default',
  patterns: ['[\\p{P}\\$\\+<=>\\^~\\|]+', GPT2_PATTERN, '\\p{N}+', '[0-9][0-9][0-9]'],
}
const GPT2: PreTokenizer = { name: 'gpt2', patterns: [GPT2_PATTERN] }
const LLAMA3: PreTokenizer = { name: 'llama3', patterns: [LLAMA3_PATTERN], ignoreMerges: true, addBos: true }
const DIGITS_THEN_GPT2 = ['\\p{N}', GPT2_PATTERN]

/** tokenizer.ggml.pre values, as llm_load_vocab maps them (the ones built from plain patterns). */
const BY_NAME: Record<string, PreTokenizer> = {
  default: DEFAULT,
  'gpt-2': GPT2,
  'phi-2': GPT2,
  'jina-es': GPT2,
  'jina-de': GPT2,
  'jina-v1-en': GPT2,
  'jina-v2-es': GPT2,
  'jina-v2-de': GPT2,
  'jina-v2-code': GPT2,
  mpt: GPT2,
  olmo: GPT2,
  jais: GPT2,
  llama3: LLAMA3,
  'llama-v3': LLAMA3,
  'llama-bpe': LLAMA3,
  dbrx: { ...LLAMA3, ignoreMerges: false, addBos: undefined },
  'smaug-bpe': { ...LLAMA3, ignoreMerges: false, addBos: undefined },
  qwen2: { name: 'qwen2', patterns: [QWEN2_PATTERN], cleanSpaces: false },
  stablelm2: { name: 'stablelm2', patterns: [QWEN2_PATTERN] },
  starcoder: { name: 'starcoder', patterns: DIGITS_THEN_GPT2 },
  refact: { name: 'refact', patterns: DIGITS_THEN_GPT2 },
  'command-r': { name: 'command-r', patterns: DIGITS_THEN_GPT2, cleanSpaces: false },
  smollm: { name: 'smollm', patterns: DIGITS_THEN_GPT2, cleanSpaces: false },
  codeshell: { name: 'codeshell', patterns: DIGITS_THEN_GPT2 },
  exaone: { name: 'exaone', patterns: DIGITS_THEN_GPT2 },
  falcon: { name: 'falcon', patterns: ['[\\p{P}\\$\\+<=>\\^~\\|`]+', GPT2_PATTERN, '[0-9][0-9][0-9]'] },
}

/** The pre-tokenizer a vocab's `tokenizer.ggml.pre` names (missing means 'default'). */
export function preTokenizerFor(pre: string | undefined): PreTokenizer {
  const p = BY_NAME[pre ?? 'default']
  if (!p) throw new Error(`tokenizer: pre-tokenizer '${pre}' is not supported (${Object.keys(BY_NAME).join(', ')})`)
  return p
}

/** A llama.cpp pattern as a JS regex: \s and \S mean llama.cpp's whitespace set. */
function compile(pattern: string): RegExp {
  let out = ''
  let inClass = false
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]
    if (c === '\\' && i + 1 < pattern.length) {
      const n = pattern[i + 1]
      i++
      if (n === 's') out += inClass ? WHITESPACE_CLASS : `[${WHITESPACE_CLASS}]`
      else if (n === 'S' && !inClass) out += `[^${WHITESPACE_CLASS}]`
      else out += c + n
      continue
    }
    if (c === '[') inClass = true
    else if (c === ']') inClass = false
    out += c
  }
  return new RegExp(out, 'gu')
}

const compiled = new Map<string, RegExp>()

function splitByRegex(pieces: string[], pattern: string): string[] {
  let re = compiled.get(pattern)
  if (!re) compiled.set(pattern, (re = compile(pattern)))
  const out: string[] = []
  for (const piece of pieces) {
    let last = 0
    for (const m of piece.matchAll(re)) {
      const at = m.index ?? 0
      if (m[0].length === 0) continue
      if (at > last) out.push(piece.slice(last, at))
      out.push(m[0])
      last = at + m[0].length
    }
    if (last < piece.length) out.push(piece.slice(last))
  }
  return out
}

const APOS = 0x27
const SPACE = 0x20

/** unicode_regex_split_custom_gpt2, on codepoints, piece by piece. */
function splitGpt2(pieces: string[]): string[] {
  const out: string[] = []
  for (const piece of pieces) {
    const cpts = Array.from(piece, (ch) => ch.codePointAt(0) as number)
    const end = cpts.length
    const cpt = (p: number) => (p < end ? cpts[p] : -1)
    // Past the end there is no codepoint: no class, and not "defined" either.
    const flags = (p: number) => (p < end ? cptFlags(cpts[p]) : -1)
    const isOther = (f: number) => f >= 0 && (f & (FLAG_WHITESPACE | FLAG_LETTER | FLAG_NUMBER)) === 0
    let prev = 0
    const emit = (to: number) => {
      if (to > prev) out.push(String.fromCodePoint(...cpts.slice(prev, to)))
      prev = to
    }
    let pos = 0
    while (pos < end) {
      const c = cpt(pos)
      const f = flags(pos)
      // 's|'t|'re|'ve|'m|'ll|'d
      if (c === APOS && pos + 1 < end) {
        const n = cpt(pos + 1)
        if (n === 0x73 || n === 0x74 || n === 0x6d || n === 0x64) {
          emit((pos += 2))
          continue
        }
        if (pos + 2 < end) {
          const nn = cpt(pos + 2)
          if ((n === 0x72 && nn === 0x65) || (n === 0x76 && nn === 0x65) || (n === 0x6c && nn === 0x6c)) {
            emit((pos += 3))
            continue
          }
        }
      }
      let f2 = c === SPACE ? flags(pos + 1) : f
      const runOf = (test: (x: number) => boolean) => {
        pos += c === SPACE ? 1 : 0
        while (test(f2)) f2 = flags(++pos)
        emit(pos)
      }
      if (f2 >= 0 && f2 & FLAG_LETTER) {
        runOf((x) => x >= 0 && (x & FLAG_LETTER) !== 0)
        continue
      }
      if (f2 >= 0 && f2 & FLAG_NUMBER) {
        runOf((x) => x >= 0 && (x & FLAG_NUMBER) !== 0)
        continue
      }
      if (isOther(f2)) {
        runOf(isOther)
        continue
      }
      let ws = 0
      while (pos + ws < end && flags(pos + ws) & FLAG_WHITESPACE) ws++
      // \s+(?!\S): leave the last whitespace for the next word
      if (ws > 1 && pos + ws < end) {
        emit((pos += ws - 1))
        continue
      }
      if (ws > 0) {
        emit((pos += ws))
        continue
      }
      emit(++pos)
    }
  }
  return out
}

/** Split text into the words BPE merges within (before the byte-level encoding). */
export function preTokenize(text: string, pre: PreTokenizer): string[] {
  let pieces = text.length > 0 ? [text] : []
  for (const p of pre.patterns) pieces = p === GPT2_PATTERN ? splitGpt2(pieces) : splitByRegex(pieces, p)
  return pieces
}
