// Llama: a llama-family model loaded from a GGUF file into a backend, with its vocabulary,
// ready to create decoding contexts and generate text.
import { statSync } from 'node:fs'
import type { Backend, BackendBuffer, Context as WeftContext } from 'weft-ml'
import { LlamaContext, type ContextOptions } from './context.js'
import { readHParams, type HParams } from './hparams.js'
import { Sampler, type SamplerOptions } from './sampling.js'
import { Vocab, type TokenizeOptions } from './vocab.js'
import { createWeights, loadWeights, type ModelWeights } from './weights.js'
import { weft } from './weft.js'

export interface LoadOptions {
  /** A backend, or its name for Backend.init ('CPU', 'WebGPU0' ...). Default 'CPU'. */
  backend?: Backend | string
  /** CPU threads (Backend.setNThreads). */
  threads?: number
  /** Map the file in place where the backend computes on host memory. Default true. */
  mmap?: boolean
  /** With mmap, read the pages in during the load. Default true. */
  prefetch?: boolean
  /** Called with the fraction of the weights loaded, 0 to 1. */
  onProgress?: (fraction: number) => void
}

export interface GenerateOptions {
  /** Most tokens to generate. Default 64. */
  maxTokens?: number
  /** A sampler, or options for a new one (default: greedy). */
  sampler?: Sampler | SamplerOptions
  /** Stop at an end-of-generation token. Default true. */
  stopAtEog?: boolean
}

/** llama_model_ftype_name for general.file_type. */
const FTYPE_NAMES: Record<number, string> = {
  0: 'all F32',
  1: 'F16',
  2: 'Q4_0',
  3: 'Q4_1',
  7: 'Q8_0',
  8: 'Q5_0',
  9: 'Q5_1',
  10: 'Q2_K - Medium',
  11: 'Q3_K - Small',
  12: 'Q3_K - Medium',
  13: 'Q3_K - Large',
  14: 'Q4_K - Small',
  15: 'Q4_K - Medium',
  16: 'Q5_K - Small',
  17: 'Q5_K - Medium',
  18: 'Q6_K',
  32: 'BF16',
}

export class Llama {
  private disposed = false

  private constructor(
    readonly path: string,
    readonly hp: HParams,
    readonly vocab: Vocab,
    readonly weights: ModelWeights,
    readonly backend: Backend,
    private readonly weightsCtx: WeftContext,
    /** The weights' memory: 'CPU_Mapped' when they are the file's pages. */
    readonly buffer: BackendBuffer | null,
    readonly nWeightTensors: number,
  ) {}

  /**
   * Open a GGUF file of architecture llama or qwen2 and load its weights into a backend,
   * off the event loop (the file is parsed and the weights mapped or uploaded on worker
   * threads; `onProgress` reports the fraction loaded).
   */
  static async load(path: string, options: LoadOptions = {}): Promise<Llama> {
    const backend = typeof options.backend === 'object' ? options.backend : weft.Backend.init(options.backend ?? 'CPU')
    if (options.threads !== undefined) backend.setNThreads(options.threads)
    const g = await weft.Gguf.openAsync(path)
    try {
      const hp = readHParams(g)
      const vocab = new Vocab(g)
      if (vocab.nVocab !== hp.nVocab) throw new Error(`model: ${vocab.nVocab} tokens but n_vocab=${hp.nVocab}`)
      const { ctx, weights } = createWeights(g, hp)
      const buffer = await loadWeights(g, ctx, backend, { mmap: options.mmap, prefetch: options.prefetch }, options.onProgress)
      return new Llama(path, hp, vocab, weights, backend, ctx, buffer, g.tensorInfos().length)
    } finally {
      // The metadata is read and mapped weights have their own mapping: the file's map can go.
      g.dispose()
    }
  }

  /** llama_model_desc: "llama 1.1B Q4_0". */
  get description(): string {
    const p = this.weights.nParams
    const size = p >= 1e9 ? `${(p / 1e9).toFixed(1)}B` : `${Math.round(p / 1e6)}M`
    return `${this.hp.arch} ${size} ${FTYPE_NAMES[this.hp.fileType] ?? 'unknown type'}`
  }

  /** Bytes of the file. */
  get fileSize(): number {
    return statSync(this.path).size
  }

  createContext(options: ContextOptions = {}): LlamaContext {
    this.check()
    return new LlamaContext({ hp: this.hp, weights: this.weights, backend: this.backend, nWeightTensors: this.nWeightTensors }, options)
  }

  tokenize(text: string, options?: TokenizeOptions): number[] {
    return this.vocab.tokenize(text, options)
  }

  detokenize(ids: number[]): string {
    return this.vocab.detokenize(ids)
  }

  /** A sampler that knows this vocabulary's newline token. */
  sampler(options: SamplerOptions = {}): Sampler {
    return new Sampler(options, this.linefeed())
  }

  private linefeed(): number {
    if (this.vocab.type === 'spm') return this.vocab.tokenToId.get('<0x0A>') ?? -1
    return this.vocab.tokenToId.get('\u010a') ?? -1
  }

  /**
   * Evaluate the prompt after what `ctx` holds, then sample and evaluate one token at a time,
   * yielding each token and the text it completes (UTF-8 split across tokens is held back
   * until it is whole).
   */
  async *generate(
    ctx: LlamaContext,
    prompt: string | number[],
    options: GenerateOptions = {},
  ): AsyncGenerator<{ token: number; text: string }> {
    this.check()
    const tokens = typeof prompt === 'string' ? this.tokenize(prompt) : prompt
    const sampler = options.sampler instanceof Sampler ? options.sampler : this.sampler({ temperature: 0, ...options.sampler })
    for (const t of tokens) sampler.accept(t)
    const maxTokens = options.maxTokens ?? 64
    const decoder = new TextDecoder()
    let logits = await ctx.decode(tokens)
    for (let i = 0; i < maxTokens; i++) {
      const token = sampler.sample(logits)
      if ((options.stopAtEog ?? true) && this.vocab.isEog(token)) break
      yield { token, text: decoder.decode(this.vocab.tokenToPiece(token), { stream: true }) }
      if (i + 1 < maxTokens && ctx.nPast < ctx.nCtx) logits = await ctx.decode([token])
      else break
    }
    const rest = decoder.decode()
    if (rest) yield { token: -1, text: rest }
  }

  private check(): void {
    if (this.disposed) throw new Error('Llama: disposed')
  }

  /** Free the weights (contexts made from this model must not be used afterwards). */
  dispose(): void {
    if (this.disposed) return
    this.disposed = true
    this.buffer?.dispose()
    this.weightsCtx.dispose()
  }
}
