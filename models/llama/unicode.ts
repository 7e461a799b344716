// The Unicode pieces of llama.cpp's tokenizers (src/unicode.cpp at the reference commit):
// codepoint classes for pre-tokenization, GPT-2's byte <-> printable-character map, and
// UTF-8 helpers. Classes come from the JS engine's Unicode tables (\p{L}, \p{N}); the
// whitespace set is llama.cpp's own (the White_Space property), which JS's \s differs from.

/** llama.cpp's unicode_set_whitespace. */
const WHITESPACE = new Set([
  0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x20, 0x85, 0xa0, 0x1680, 0x2000, 0x2001, 0x2002, 0x2003, 0x2004, 0x2005, 0x2006,
  0x2007, 0x2008, 0x2009, 0x200a, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000,
])

/** The same set as a regex class body, for patterns that say \s. */
export const WHITESPACE_CLASS = '\\t\\n\\v\\f\\r \\x85\\xA0\\u1680\\u2000-\\u200A\\u2028\\u2029\\u202F\\u205F\\u3000'

export const FLAG_NUMBER = 1
export const FLAG_LETTER = 2
export const FLAG_WHITESPACE = 4

const LETTER = /^\p{L}$/u
const NUMBER = /^\p{N}$/u
const flagCache = new Map<number, number>()

/** Letter / number / whitespace bits of a codepoint (llama.cpp's unicode_cpt_flags). */
export function cptFlags(cp: number): number {
  let f = flagCache.get(cp)
  if (f === undefined) {
    const s = String.fromCodePoint(cp)
    f = (LETTER.test(s) ? FLAG_LETTER : 0) | (NUMBER.test(s) ? FLAG_NUMBER : 0) | (WHITESPACE.has(cp) ? FLAG_WHITESPACE : 0)
    flagCache.set(cp, f)
  }
  return f
}

/** GPT-2's bytes_to_unicode: each byte as a printable character (unicode_byte_to_utf8_map). */
export const BYTE_TO_CHAR: string[] = (() => {
  const map: (string | undefined)[] = new Array(256)
  const keep = (lo: number, hi: number) => {
    for (let c = lo; c <= hi; c++) map[c] = String.fromCodePoint(c)
  }
  keep(0x21, 0x7e)
  keep(0xa1, 0xac)
  keep(0xae, 0xff)
  let n = 0
  for (let c = 0; c < 256; c++) if (map[c] === undefined) map[c] = String.fromCodePoint(256 + n++)
  return map as string[]
})()

/** The inverse map: printable character -> byte. */
export const CHAR_TO_BYTE: Map<string, number> = new Map(BYTE_TO_CHAR.map((c, b) => [c, b]))

const encoder = new TextEncoder()

export function utf8(s: string): Uint8Array {
  return encoder.encode(s)
}

/** Concatenate byte arrays. */
export function concatBytes(parts: Uint8Array[]): Uint8Array {
  let n = 0
  for (const p of parts) n += p.length
  const out = new Uint8Array(n)
  let o = 0
  for (const p of parts) {
    out.set(p, o)
    o += p.length
  }
  return out
}
