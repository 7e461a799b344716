// Command-line flags of the llama example, in llama.cpp's spellings.

export interface Flags {
  command: 'generate' | 'bench'
  model: string
  prompt: string
  nPredict: number
  backend: string
  threads?: number
  ctxSize: number
  batchSize: number
  flashAttn: boolean
  mmap: boolean
  temp: number
  topK: number
  topP: number
  minP: number
  repeatPenalty: number
  repeatLastN: number
  seed?: number
  /** bench: prompt and generation lengths, repetitions. */
  nPrompt: number
  nGen: number
  reps: number
  profile: boolean
  peer?: string
}

export const USAGE = `usage:
  npm run llama -- --model FILE [--prompt TEXT] [-n 64] [--backend CPU|WebGPU0] [--threads N]
                   [--ctx-size 2048] [--batch-size 512] [--flash-attn] [--no-mmap]
                   [--temp 0.8] [--top-k 40] [--top-p 0.95] [--min-p 0.05]
                   [--repeat-penalty 1.0] [--repeat-last-n 64] [--seed N]
  npm run llama -- bench --model FILE [-p 512] [-n 128] [-r 5] [--backend ...] [--threads N]
                   [--flash-attn] [--profile] [--peer PATH/TO/llama-bench]`

export function parseFlags(argv: string[]): Flags {
  const args = [...argv]
  const command = args[0] === 'bench' ? 'bench' : 'generate'
  if (command === 'bench') args.shift()
  const f: Flags = {
    command,
    model: '',
    prompt: 'Once upon a time',
    nPredict: command === 'bench' ? 128 : 64,
    backend: 'CPU',
    ctxSize: 2048,
    batchSize: 512,
    flashAttn: false,
    mmap: true,
    temp: 0.8,
    topK: 40,
    topP: 0.95,
    minP: 0.05,
    repeatPenalty: 1,
    repeatLastN: 64,
    nPrompt: 512,
    nGen: 128,
    reps: 5,
    profile: false,
  }
  const num = (flag: string, v: string | undefined): number => {
    const x = Number(v)
    if (v === undefined || !Number.isFinite(x)) throw new Error(`${flag} needs a number`)
    return x
  }
  for (let i = 0; i < args.length; i++) {
    const a = args[i]
    const next = () => args[++i]
    switch (a) {
      case '-m':
      case '--model':
        f.model = next() ?? ''
        break
      case '--prompt':
        f.prompt = next() ?? ''
        break
      case '-n':
      case '--n-predict':
      case '--n-gen':
        f.nPredict = f.nGen = num(a, next())
        break
      case '-p':
      case '--n-prompt':
        f.nPrompt = num(a, next())
        break
      case '-r':
      case '--repetitions':
        f.reps = num(a, next())
        break
      case '--backend':
        f.backend = next() ?? 'CPU'
        break
      case '-t':
      case '--threads':
        f.threads = num(a, next())
        break
      case '-c':
      case '--ctx-size':
        f.ctxSize = num(a, next())
        break
      case '-b':
      case '--batch-size':
        f.batchSize = num(a, next())
        break
      case '-fa':
      case '--flash-attn':
        f.flashAttn = true
        break
      case '--no-mmap':
        f.mmap = false
        break
      case '--temp':
        f.temp = num(a, next())
        break
      case '--top-k':
        f.topK = num(a, next())
        break
      case '--top-p':
        f.topP = num(a, next())
        break
      case '--min-p':
        f.minP = num(a, next())
        break
      case '--repeat-penalty':
        f.repeatPenalty = num(a, next())
        break
      case '--repeat-last-n':
        f.repeatLastN = num(a, next())
        break
      case '-s':
      case '--seed':
        f.seed = num(a, next())
        break
      case '--profile':
        f.profile = true
        break
      case '--peer':
        f.peer = next()
        break
      default:
        throw new Error(`unknown flag '${a}'\n${USAGE}`)
    }
  }
  if (!f.model) throw new Error(`--model is required\n${USAGE}`)
  return f
}
