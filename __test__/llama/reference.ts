// An independent llama forward pass in plain TypeScript loops (float64 arithmetic), written
// from the model's definition rather than from weft's graph: it reads the GGUF's metadata and
// raw tensor bytes (weft's reader hands over bytes only), dequantizes f32 / f16 / q8_0 / q4_0
// blocks with its own code, and computes every position's logits with full causal attention.
// No weft op runs here: the tests compare weft's logits against these.
//
// Optionally it also rounds intermediate values where ggml's CPU backend documents that it
// does (`Emulation`): matmul inputs to the weights' vec_dot type (f16, or q8_0 blocks for
// q8_0 / q4_0 weights), K and V to the f16 cache, attention inputs to f16, and flash
// attention's f16 accumulation of V. That turns "weft agrees with exact math up to the type's
// precision" into "the remaining difference is summation order": a much tighter bound.
// `rounds: 'webgpu'` emulates weft's WebGPU kernels instead, which round less: only what the
// tensors' types store (the f16 KV cache) and flash attention's query to f16 for f16 keys;
// matmul inputs, probabilities and the V sum stay f32 there.
import type { Gguf } from '../../index.js'

/** IEEE half -> number. */
function half(h: number): number {
  const s = h & 0x8000 ? -1 : 1
  const e = (h >> 10) & 0x1f
  const m = h & 0x3ff
  if (e === 0) return s * m * 2 ** -24
  if (e === 31) return m ? NaN : s * Infinity
  return s * (1 + m / 1024) * 2 ** (e - 15)
}

const f32buf = new Float32Array(1)
const u32buf = new Uint32Array(f32buf.buffer)

/** number -> f32 -> IEEE half bits, round to nearest even (GGML_FP32_TO_FP16). */
function halfBits(x: number): number {
  f32buf[0] = x
  const b = u32buf[0]
  const sign = (b >>> 16) & 0x8000
  const e = (b >>> 23) & 0xff
  let m = b & 0x7fffff
  if (e === 0xff) return sign | 0x7c00 | (m ? 0x200 : 0)
  let exp = e - 127 + 15
  if (exp >= 0x1f) return sign | 0x7c00
  if (exp <= 0) {
    if (exp < -10) return sign
    m |= 0x800000
    const shift = 14 - exp
    let hm = m >>> shift
    const rem = m & ((1 << shift) - 1)
    const halfway = 1 << (shift - 1)
    if (rem > halfway || (rem === halfway && hm & 1)) hm++
    return sign | hm
  }
  let hm = m >>> 13
  const rem = m & 0x1fff
  if (rem > 0x1000 || (rem === 0x1000 && hm & 1)) {
    hm++
    if (hm === 0x400) {
      hm = 0
      if (++exp >= 0x1f) return sign | 0x7c00
    }
  }
  return sign | (exp << 10) | hm
}

/** Round to the nearest f16 value. */
export function f16(x: number): number {
  return half(halfBits(x))
}

function roundHalfEven(x: number): number {
  const r = Math.round(x)
  return r - x === 0.5 && r % 2 !== 0 ? r - 1 : r
}

/** A row through ggml's x86 q8_0 activation quantizer (127/amax, ties to even, f16 scale). */
function q8Round(x: Float64Array): Float64Array {
  const out = new Float64Array(x.length)
  for (let b = 0; b < x.length; b += 32) {
    let amax = 0
    for (let j = b; j < b + 32; j++) amax = Math.max(amax, Math.abs(Math.fround(x[j])))
    const id = amax ? Math.fround(127 / amax) : 0
    const d = f16(amax / 127)
    for (let j = b; j < b + 32; j++) out[j] = d * roundHalfEven(Math.fround(Math.fround(x[j]) * id))
  }
  return out
}

/** How the emulating reference rounds (see the file comment). */
export interface Emulation {
  weightType: string
  flashAttn: boolean
  /** Whose roundings: ggml's CPU backend (the default) or weft's WebGPU kernels. */
  rounds?: 'cpu' | 'webgpu'
}

/** A tensor's elements, from its raw bytes. */
export function dequantize(type: string, bytes: Uint8Array, n: number): Float64Array {
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  const out = new Float64Array(n)
  if (type === 'f32') for (let i = 0; i < n; i++) out[i] = dv.getFloat32(4 * i, true)
  else if (type === 'f16') for (let i = 0; i < n; i++) out[i] = half(dv.getUint16(2 * i, true))
  else if (type === 'q8_0') {
    // Blocks of 32: an f16 scale, then 32 signed bytes.
    for (let b = 0; b < n / 32; b++) {
      const d = half(dv.getUint16(34 * b, true))
      for (let j = 0; j < 32; j++) out[32 * b + j] = d * dv.getInt8(34 * b + 2 + j)
    }
  } else if (type === 'q4_0') {
    // Blocks of 32: an f16 scale, then 16 bytes; low nibbles are elements 0..15, high 16..31.
    for (let b = 0; b < n / 32; b++) {
      const d = half(dv.getUint16(18 * b, true))
      for (let j = 0; j < 16; j++) {
        const q = bytes[18 * b + 2 + j]
        out[32 * b + j] = d * ((q & 0x0f) - 8)
        out[32 * b + j + 16] = d * ((q >> 4) - 8)
      }
    }
  } else throw new Error(`reference: no dequantizer for ${type}`)
  return out
}

/** A [rows x cols] matrix stored row-major (GGUF's ne[0] = cols is the fast dim). */
interface Mat {
  rows: number
  cols: number
  w: Float64Array
}

interface Layer {
  attnNorm: Float64Array
  bq?: Float64Array
  bk?: Float64Array
  bv?: Float64Array
  wq: Mat
  wk: Mat
  wv: Mat
  wo: Mat
  ffnNorm: Float64Array
  gate: Mat
  up: Mat
  down: Mat
}

export interface RefModel {
  /** qwen2 rotates GPT-NeoX style (dims i and i + headDim/2); llama adjacent pairs. */
  neox: boolean
  nEmbd: number
  nHead: number
  nHeadKv: number
  headDim: number
  eps: number
  freqBase: number
  embd: Mat
  layers: Layer[]
  outNorm: Float64Array
  output: Mat
}

export function loadReference(g: Gguf): RefModel {
  const info = new Map(g.tensorInfos().map((i) => [i.name, i]))
  const vec = (name: string) => {
    const i = info.get(name)
    if (!i) throw new Error(`reference: no ${name}`)
    return dequantize(i.type, g.tensorData(name), i.ne[0])
  }
  const mat = (name: string): Mat => {
    const i = info.get(name)
    if (!i) throw new Error(`reference: no ${name}`)
    return { cols: i.ne[0], rows: i.ne[1], w: dequantize(i.type, g.tensorData(name), i.ne[0] * i.ne[1]) }
  }
  const arch = String(g.get('general.architecture'))
  const u = (k: string) => Number(g.get(`${arch}.${k}`))
  const opt = (name: string) => (info.has(name) ? vec(name) : undefined)
  const nEmbd = u('embedding_length')
  const nHead = u('attention.head_count')
  const layers: Layer[] = []
  for (let l = 0; l < u('block_count'); l++) {
    const b = (s: string) => `blk.${l}.${s}`
    layers.push({
      attnNorm: vec(b('attn_norm.weight')),
      bq: opt(b('attn_q.bias')),
      bk: opt(b('attn_k.bias')),
      bv: opt(b('attn_v.bias')),
      wq: mat(b('attn_q.weight')),
      wk: mat(b('attn_k.weight')),
      wv: mat(b('attn_v.weight')),
      wo: mat(b('attn_output.weight')),
      ffnNorm: vec(b('ffn_norm.weight')),
      gate: mat(b('ffn_gate.weight')),
      up: mat(b('ffn_up.weight')),
      down: mat(b('ffn_down.weight')),
    })
  }
  const embd = mat('token_embd.weight')
  return {
    neox: arch === 'qwen2',
    nEmbd,
    nHead,
    nHeadKv: u('attention.head_count_kv'),
    headDim: nEmbd / nHead,
    eps: u('attention.layer_norm_rms_epsilon'),
    freqBase: Number(g.get(`${arch}.rope.freq_base`) ?? 10000),
    embd,
    layers,
    outNorm: vec('output_norm.weight'),
    output: info.has('output.weight') ? mat('output.weight') : embd,
  }
}

/** The matmul input as ggml's CPU rounds it for weights of this type (vec_dot_type). */
function roundInput(x: Float64Array, emu: Emulation | undefined): Float64Array {
  if (!emu || emu.weightType === 'f32' || emu.rounds === 'webgpu') return x
  if (emu.weightType === 'f16') return x.map(f16)
  return q8Round(x)
}

function matvec(m: Mat, x: Float64Array, emu?: Emulation): Float64Array {
  x = roundInput(x, emu)
  const y = new Float64Array(m.rows)
  for (let r = 0; r < m.rows; r++) {
    let s = 0
    const o = r * m.cols
    for (let c = 0; c < m.cols; c++) s += m.w[o + c] * x[c]
    y[r] = s
  }
  return y
}

function rmsNorm(x: Float64Array, w: Float64Array, eps: number): Float64Array {
  let ss = 0
  for (const v of x) ss += v * v
  const k = 1 / Math.sqrt(ss / x.length + eps)
  return x.map((v, i) => v * k * w[i])
}

/**
 * Rotate each head's pairs by pos * base^(-2i/headDim): adjacent pairs (2i, 2i+1) for llama,
 * (i, i + headDim/2) for GPT-NeoX style (qwen2).
 */
function rope(x: Float64Array, heads: number, headDim: number, pos: number, base: number, neox: boolean): void {
  for (let h = 0; h < heads; h++) {
    for (let i = 0; i < headDim / 2; i++) {
      const theta = pos * base ** ((-2 * i) / headDim)
      const [c, s] = [Math.cos(theta), Math.sin(theta)]
      const i0 = h * headDim + (neox ? i : 2 * i)
      const i1 = i0 + (neox ? headDim / 2 : 1)
      const a = x[i0]
      const b = x[i1]
      x[i0] = a * c - b * s
      x[i1] = a * s + b * c
    }
  }
}

/** One head's attention output over the cached keys and values (exact, or as ggml rounds it). */
function attend(qHead: Float64Array, ks: Float64Array[], vs: Float64Array[], off: number, dim: number, emu?: Emulation): Float64Array {
  const out = new Float64Array(dim)
  // Q meets f16 keys: the CPU converts it to f16 on both paths, WebGPU in flash attention only.
  const qh = emu && (emu.rounds !== 'webgpu' || emu.flashAttn) ? qHead.map(f16) : qHead
  const scores = ks.map((k) => {
    let s = 0
    for (let i = 0; i < dim; i++) s += qh[i] * k[off + i]
    return emu ? Math.fround(Math.fround(s) / Math.sqrt(dim)) : s / Math.sqrt(dim)
  })
  const f16Sum = emu?.rounds === 'webgpu' ? (x: number) => x : f16
  if (emu?.flashAttn) {
    // ggml's CPU flash attention: online softmax, V summed in f16 (in f32 on WebGPU, where the
    // reference's f64 sum stands for it).
    let M = -Infinity
    let S = 0
    const acc = new Float64Array(dim)
    scores.forEach((s, j) => {
      let ms = 1
      let vsc = 1
      if (s > M) {
        const old = M
        M = s
        ms = Math.fround(Math.exp(old - M))
        for (let i = 0; i < dim; i++) acc[i] = f16Sum(acc[i] * ms)
      } else {
        vsc = Math.fround(Math.exp(s - M))
      }
      for (let i = 0; i < dim; i++) acc[i] = f16Sum(acc[i] + vs[j][off + i] * vsc)
      S = S * ms + vsc
    })
    for (let i = 0; i < dim; i++) out[i] = acc[i] / S
    return out
  }
  const max = Math.max(...scores)
  const p = scores.map((s) => Math.exp(s - max))
  const sum = p.reduce((a, b) => a + b, 0)
  vs.forEach((v, j) => {
    // The CPU's MUL_MAT path multiplies f16 V by the probabilities rounded to f16.
    const w = emu && emu.rounds !== 'webgpu' ? f16(p[j] / sum) : p[j] / sum
    for (let i = 0; i < dim; i++) out[i] += w * v[off + i]
  })
  return out
}

/** The logits at every position of `tokens` (position = index), causal attention. */
export function referenceLogits(
  m: RefModel,
  tokens: number[],
  emu?: Emulation,
  trace?: (name: string, pos: number, x: Float64Array) => void,
): Float64Array[] {
  const { nEmbd, nHead, nHeadKv, headDim } = m
  const group = nHead / nHeadKv
  const keys: Float64Array[][] = m.layers.map(() => [])
  const values: Float64Array[][] = m.layers.map(() => [])
  const cache = (x: Float64Array) => (emu ? x.map(f16) : x)
  const out: Float64Array[] = []
  tokens.forEach((tok, pos) => {
    let x = m.embd.w.slice(tok * nEmbd, (tok + 1) * nEmbd)
    m.layers.forEach((L, l) => {
      const h = rmsNorm(x, L.attnNorm, m.eps)
      const bias = (y: Float64Array, b?: Float64Array) => (b ? y.map((v, i) => v + b[i]) : y)
      const q = bias(matvec(L.wq, h, emu), L.bq)
      const k = bias(matvec(L.wk, h, emu), L.bk)
      const v = bias(matvec(L.wv, h, emu), L.bv)
      rope(q, nHead, headDim, pos, m.freqBase, m.neox)
      rope(k, nHeadKv, headDim, pos, m.freqBase, m.neox)
      keys[l].push(cache(k))
      values[l].push(cache(v))
      const att = new Float64Array(nEmbd)
      for (let hd = 0; hd < nHead; hd++) {
        const kvOff = Math.floor(hd / group) * headDim
        const o = attend(q.subarray(hd * headDim, (hd + 1) * headDim), keys[l], values[l], kvOff, headDim, emu)
        att.set(o, hd * headDim)
      }
      const o = matvec(L.wo, att, emu)
      trace?.(`kqv_out-${l}`, pos, o)
      x = x.map((v, i) => v + o[i])
      const f = rmsNorm(x, L.ffnNorm, m.eps)
      const g = matvec(L.gate, f, emu)
      const u = matvec(L.up, f, emu)
      const a = g.map((gv, i) => (gv / (1 + Math.exp(-gv))) * u[i])
      const d = matvec(L.down, a, emu)
      x = x.map((v, i) => v + d[i])
      trace?.(`l_out-${l}`, pos, x)
    })
    out.push(matvec(m.output, rmsNorm(x, m.outNorm, m.eps), emu))
  })
  return out
}

/** test-backend-ops' normalized mean squared error. */
export function nmse(got: ArrayLike<number>, want: ArrayLike<number>): number {
  let err = 0
  let ref = 0
  for (let i = 0; i < want.length; i++) {
    err += (got[i] - want[i]) ** 2
    ref += want[i] ** 2
  }
  return err / ref
}
