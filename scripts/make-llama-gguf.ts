// Writes a llama-architecture GGUF with random weights from a fixed seed and the llama-spm
// vocabulary (llama.cpp's models/ggml-vocab-llama-spm.gguf, in ../shared/vocab beside the
// checkout; --qwen2 writes a qwen2 model with the gpt-2 vocabulary): test data the repo makes
// itself instead of committing binaries.
//
//   node --import tsx scripts/make-llama-gguf.ts --out /tmp/tiny-q4_0.gguf --type q4_0
//   node --import tsx scripts/make-llama-gguf.ts --out /tmp/big-q4_0.gguf --type q4_0 --preset bench
//
// Matrices (token embedding, attention, FFN, output) are stored in --type; norms stay f32,
// as llama.cpp's quantize leaves them.
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type * as Weft from '../index.js'
import { randomFloats } from '../__test__/helpers.ts'

const require = createRequire(import.meta.url)
const weft: typeof Weft = require('../index.js')

export interface LlamaShape {
  nEmbd: number
  nFf: number
  nHead: number
  nHeadKv: number
  nLayer: number
  nCtxTrain: number
  ropeFreqBase: number
  rmsEps: number
}

/** A 2-layer model small enough for tests, with grouped-query attention (4 heads, 2 KV heads). */
export const TINY: LlamaShape = {
  nEmbd: 256,
  nFf: 512,
  nHead: 4,
  nHeadKv: 2,
  nLayer: 2,
  nCtxTrain: 512,
  ropeFreqBase: 10000,
  rmsEps: 1e-5,
}

/** TinyLlama's shape: 1.1B parameters (~620 MB in q4_0), for memory and speed figures. */
export const BENCH: LlamaShape = {
  nEmbd: 2048,
  nFf: 5632,
  nHead: 32,
  nHeadKv: 4,
  nLayer: 22,
  nCtxTrain: 2048,
  ropeFreqBase: 10000,
  rmsEps: 1e-5,
}

export interface MakeOptions {
  type: Weft.GgmlType
  seed?: number
  shape?: LlamaShape
  /** Leave out output.weight: the LM head is the token embedding (as SmolLM files do). */
  tied?: boolean
  /** 'qwen2': q/k/v biases, GPT-NeoX rope, GPT-2's BPE vocabulary. Default 'llama'. */
  arch?: 'llama' | 'qwen2'
  /** The vocabulary GGUF to copy the tokenizer from. */
  vocabPath?: string
}

const root = fileURLToPath(new URL('..', import.meta.url))
const vocabDir = process.env.WEFT_VOCAB_DIR ?? join(root, '..', 'shared', 'vocab')
export const DEFAULT_VOCAB = join(vocabDir, 'ggml-vocab-llama-spm.gguf')
export const BPE_VOCAB = join(vocabDir, 'ggml-vocab-gpt-2.gguf')

/** Uniform values in [-scale, scale), deterministic per seed (the tests' xorshift stream). */
function uniform(n: number, seed: number, scale: number): Float32Array {
  const out = randomFloats(n, seed)
  for (let i = 0; i < n; i++) out[i] *= scale
  return out
}

/** llama_ftype of a file whose matrices are all `type`. */
const FTYPE: Partial<Record<Weft.GgmlType, number>> = { f32: 0, f16: 1, q4_0: 2, q4_1: 3, q8_0: 7, q5_0: 8, q5_1: 9, q6_K: 18, bf16: 32 }

/** Write the model; resolves the file's tensor names so tests can read the bytes back. */
export function makeLlamaGguf(path: string, options: MakeOptions): void {
  const sh = options.shape ?? TINY
  const seed = options.seed ?? 1234
  const arch = options.arch ?? 'llama'
  const vocab = weft.Gguf.open(options.vocabPath ?? (arch === 'qwen2' ? BPE_VOCAB : DEFAULT_VOCAB))
  const tokens = vocab.get('tokenizer.ggml.tokens') as string[]
  const nVocab = tokens.length
  const w = new weft.GgufWriter()
  const k = (key: string) => `${arch}.${key}`
  w.set('general.architecture', arch)
  w.set('general.name', `weft-random-${options.type}`)
  w.set('general.file_type', FTYPE[options.type] ?? 0, 'u32')
  w.set(k('context_length'), sh.nCtxTrain, 'u32')
  w.set(k('embedding_length'), sh.nEmbd, 'u32')
  w.set(k('block_count'), sh.nLayer, 'u32')
  w.set(k('feed_forward_length'), sh.nFf, 'u32')
  w.set(k('attention.head_count'), sh.nHead, 'u32')
  w.set(k('attention.head_count_kv'), sh.nHeadKv, 'u32')
  w.set(k('rope.dimension_count'), sh.nEmbd / sh.nHead, 'u32')
  w.set(k('rope.freq_base'), sh.ropeFreqBase, 'f32')
  w.set(k('attention.layer_norm_rms_epsilon'), sh.rmsEps, 'f32')
  w.set(k('vocab_size'), nVocab, 'u32')
  // The tokenizer, copied key by key with each value's own GGUF type.
  for (const key of vocab.keys().filter((x) => x.startsWith('tokenizer.'))) {
    const type = vocab.getType(key) as string
    const value = vocab.get(key) as number
    const m = /^arr\[(\w+)\]$/.exec(type)
    if (m) w.set(key, value, 'arr', m[1] as Weft.GgufValueType)
    else w.set(key, value, type as Weft.GgufValueType)
  }
  if (arch === 'qwen2') w.set('tokenizer.ggml.pre', 'qwen2')
  vocab.dispose()

  let n = 0
  const tensor = (name: string, ne: [number] | [number, number], scale: number, offset = 0) => {
    const count = ne.reduce((a, b) => a * b, 1)
    const data = uniform(count, seed * 7919 + n++, scale)
    if (offset !== 0) for (let i = 0; i < count; i++) data[i] += offset
    // Vectors (norms) stay f32; matrices go to the file's type.
    const type = ne.length === 1 ? 'f32' : options.type
    const bytes = weft.quantize(type, data, count / ne[0], ne[0])
    w.addTensorData(name, type, ne, bytes)
  }
  const { nEmbd, nFf } = sh
  const headDim = nEmbd / sh.nHead
  // Uniform(-a, a) has variance a^2/3: a = sqrt(3/fan_in) keeps activations near unit scale.
  const fan = (k: number) => Math.sqrt(3 / k)
  tensor('token_embd.weight', [nEmbd, nVocab], 1)
  for (let i = 0; i < sh.nLayer; i++) {
    const b = (s: string) => `blk.${i}.${s}`
    tensor(b('attn_norm.weight'), [nEmbd], 0.2, 1)
    tensor(b('attn_q.weight'), [nEmbd, nEmbd], fan(nEmbd) * 2)
    tensor(b('attn_k.weight'), [nEmbd, headDim * sh.nHeadKv], fan(nEmbd) * 2)
    tensor(b('attn_v.weight'), [nEmbd, headDim * sh.nHeadKv], fan(nEmbd))
    if (arch === 'qwen2') {
      tensor(b('attn_q.bias'), [nEmbd], 0.5)
      tensor(b('attn_k.bias'), [headDim * sh.nHeadKv], 0.5)
      tensor(b('attn_v.bias'), [headDim * sh.nHeadKv], 0.5)
    }
    tensor(b('attn_output.weight'), [nEmbd, nEmbd], fan(nEmbd))
    tensor(b('ffn_norm.weight'), [nEmbd], 0.2, 1)
    tensor(b('ffn_gate.weight'), [nEmbd, nFf], fan(nEmbd))
    tensor(b('ffn_up.weight'), [nEmbd, nFf], fan(nEmbd))
    tensor(b('ffn_down.weight'), [nFf, nEmbd], fan(nFf))
  }
  tensor('output_norm.weight', [nEmbd], 0.2, 1)
  // Logits a few units apart, so greedy choices are clear.
  if (!options.tied) tensor('output.weight', [nEmbd, nVocab], fan(nEmbd) * 3)
  w.writeFile(path)
}

function main(): void {
  const args = process.argv.slice(2)
  const opt = (name: string) => {
    const i = args.indexOf(name)
    return i >= 0 ? args[i + 1] : undefined
  }
  const out = opt('--out')
  if (!out) {
    console.error('usage: make-llama-gguf.ts --out FILE [--type f32|f16|q8_0|q4_0|...] [--preset tiny|bench] [--seed N] [--tied] [--qwen2] [--vocab FILE]')
    process.exit(2)
  }
  const preset = opt('--preset') ?? 'tiny'
  const shape = preset === 'bench' ? BENCH : preset === 'tiny' ? TINY : undefined
  if (!shape) throw new Error(`unknown preset '${preset}' (tiny, bench)`)
  makeLlamaGguf(out, {
    type: (opt('--type') ?? 'f32') as Weft.GgmlType,
    seed: Number(opt('--seed') ?? 1234),
    shape,
    tied: args.includes('--tied'),
    arch: args.includes('--qwen2') ? 'qwen2' : 'llama',
    vocabPath: opt('--vocab'),
  })
  console.log(`wrote ${out}`)
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) main()
