// The fuzzer's runner: batches of the API, kernel and GGUF fuzzers, each in its own node
// process (a crash is then one failed batch, with the calls that led to it), until the
// time is up. Prints call counts by error code and every failure: crashes, hangs, caught
// panics, errors without a WEFT_ code, throws that are not Errors.
//   npm run fuzz -- --seconds 600 --seed 7
import { spawn } from 'node:child_process'
import { createRequire } from 'node:module'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { parseArgs } from 'node:util'
import { HANG_EXIT, merge, newTally, uncodedCount, type Tally } from './outcome.ts'

export type Kind = 'api' | 'kernel' | 'gguf'

interface Batch {
  kind: Kind
  /** Extra arguments: how many calls, graphs or files. */
  size: string[]
  /** Longest a batch may run before it counts as hung. */
  timeoutMs: number
}

/** Batch sizes: each runs 10-40 s on a loaded 2-core machine. */
const BATCHES: Record<Kind, Batch> = {
  api: { kind: 'api', size: ['--calls', '400'], timeoutMs: 300_000 },
  kernel: { kind: 'kernel', size: ['--graphs', '40'], timeoutMs: 600_000 },
  gguf: { kind: 'gguf', size: ['--files', '150'], timeoutMs: 300_000 },
}

export interface Failure {
  kind: Kind
  what: 'crash' | 'hang'
  detail: string
  reproduce: string
  journal: string[]
}

export interface Report {
  tallies: Record<Kind, Tally>
  batches: number
  failures: Failure[]
  compared: number
  disagreements: string[]
}

const here = path.dirname(fileURLToPath(import.meta.url))
const root = path.resolve(here, '../..')
/** Data-size cap for workers (RLIMIT_DATA: heap and private mappings, not V8 and wasm reservations), so a fuzzed size cannot take the machine's memory. */
const MEMORY_LIMIT_KB = 6_000_000

/**
 * tsx by URL: a worker runs in a scratch directory (below), where `--import tsx` would not
 * resolve; its tsconfig is named for the same reason.
 */
const tsx = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href

function workerArgs(kind: Kind, seed: number, size: string[], journal: string): string[] {
  return ['--import', tsx, path.join(here, `${kind}-worker.ts`), '--seed', String(seed), ...size, '--journal', journal]
}

/** Run one batch in a child process. */
function runBatch(kind: Kind, seed: number, sizeOverride?: string[]): Promise<{ tally?: Tally & Record<string, unknown>; failure?: Failure }> {
  const b = BATCHES[kind]
  const size = sizeOverride ?? b.size
  const journal = path.join(os.tmpdir(), `weft-fuzz-${process.pid}-${kind}-${seed}.log`)
  // The API fuzzer calls Gguf.writeFile and open with strings from its pool ('CPU', 'f32',
  // ...) as relative paths: in the repository they wrote GGUF files into its root (found
  // committed), so each batch runs in a directory of its own, removed after.
  const scratch = fs.mkdtempSync(path.join(os.tmpdir(), `weft-fuzz-${kind}-`))
  const args = workerArgs(kind, seed, size, journal)
  const reproduce = `node ${args.slice(0, -2).map((a) => (a.includes(' ') ? JSON.stringify(a) : a)).join(' ')}`
  const quoted = [process.execPath, ...args].map((a) => `'${a.replace(/'/g, "'\\''")}'`).join(' ')
  return new Promise((resolve) => {
    // Through sh for the memory cap where there is one; Windows runs node directly.
    const [cmd, cmdArgs] =
      process.platform === 'win32'
        ? [process.execPath, args]
        : ['sh', ['-c', `ulimit -d ${MEMORY_LIMIT_KB} 2>/dev/null; exec ${quoted}`]]
    const child = spawn(cmd, cmdArgs, {
      cwd: scratch,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: {
        ...process.env,
        XDG_RUNTIME_DIR: process.env.XDG_RUNTIME_DIR ?? os.tmpdir(),
        TSX_TSCONFIG_PATH: path.join(root, 'tsconfig.json'),
      },
    })
    let out = ''
    let err = ''
    child.stdout.on('data', (d) => (out += d))
    child.stderr.on('data', (d) => (err = (err + d).slice(-4000)))
    const timer = setTimeout(() => child.kill('SIGKILL'), b.timeoutMs)
    child.on('close', (code, signal) => {
      clearTimeout(timer)
      const lines = fs.existsSync(journal) ? fs.readFileSync(journal, 'utf8').trimEnd().split('\n') : []
      fs.rmSync(journal, { force: true })
      fs.rmSync(scratch, { recursive: true, force: true })
      const last = out.trim().split('\n').pop() ?? ''
      let tally: (Tally & Record<string, unknown>) | undefined
      try {
        tally = last ? JSON.parse(last) : undefined
      } catch {
        tally = undefined
      }
      if (code === 0 && tally) return resolve({ tally })
      const hang = code === HANG_EXIT || signal === 'SIGKILL'
      const stderrTail = err
        .split('\n')
        .filter((l) => l && !l.includes('XDG_RUNTIME_DIR'))
        .slice(-6)
        .join('\n')
      resolve({
        tally,
        failure: {
          kind,
          what: hang ? 'hang' : 'crash',
          detail: `exit code ${code}, signal ${signal}\n${stderrTail}`,
          reproduce,
          journal: lines.slice(-30),
        },
      })
    })
  })
}

/** Run batches round robin (api, kernel, api, gguf, ...) until `seconds` have passed. */
export async function runFuzz(opts: {
  seconds: number
  seed: number
  sizes?: Partial<Record<Kind, string[]>>
  maxBatches?: number
  log?: (s: string) => void
}): Promise<Report> {
  const log = opts.log ?? (() => {})
  const report: Report = {
    tallies: { api: newTally(), kernel: newTally(), gguf: newTally() },
    batches: 0,
    failures: [],
    compared: 0,
    disagreements: [],
  }
  const order: Kind[] = ['api', 'kernel', 'api', 'gguf']
  const end = Date.now() + opts.seconds * 1000
  for (let i = 0; Date.now() < end && i < (opts.maxBatches ?? Infinity); i++) {
    const kind = order[i % order.length]
    const seed = opts.seed * 100_000 + i
    const t0 = Date.now()
    const r = await runBatch(kind, seed, opts.sizes?.[kind])
    report.batches++
    if (r.tally) {
      merge(report.tallies[kind], r.tally)
      if (typeof r.tally.compared === 'number') report.compared += r.tally.compared
      if (Array.isArray(r.tally.disagreements)) report.disagreements.push(...(r.tally.disagreements as string[]))
    }
    if (r.failure) report.failures.push(r.failure)
    log(`batch ${i} ${kind} seed ${seed}: ${r.tally?.calls ?? '?'} calls in ${((Date.now() - t0) / 1000).toFixed(1)} s${r.failure ? ` ${r.failure.what.toUpperCase()}` : ''}`)
  }
  return report
}

/** Failures that make the run fail. */
export function failureCount(r: Report): { crashes: number; hangs: number; panics: number; uncoded: number; nonErrors: number } {
  const all = Object.values(r.tallies)
  return {
    crashes: r.failures.filter((f) => f.what === 'crash').length,
    hangs: r.failures.filter((f) => f.what === 'hang').length,
    panics: all.reduce((s, t) => s + Math.max(t.byCode.WEFT_INTERNAL ?? 0, t.panicCount), 0),
    uncoded: all.reduce((s, t) => s + uncodedCount(t), 0),
    nonErrors: all.reduce((s, t) => s + (t.byCode['non-error'] ?? 0), 0),
  }
}

export function formatReport(r: Report): string {
  const lines: string[] = []
  const f = failureCount(r)
  for (const [kind, t] of Object.entries(r.tallies)) {
    if (!t.calls) continue
    const codes = Object.entries(t.byCode)
      .sort((a, b) => b[1] - a[1])
      .map(([k, v]) => `${k} ${v}`)
      .join(', ')
    lines.push(`${kind}: ${t.calls} calls: ${codes}`)
    for (const p of t.panics) lines.push(`  caught panic: ${p}`)
    for (const u of t.uncoded) lines.push(`  no WEFT_ code: ${u}`)
    for (const n of t.nonErrors) lines.push(`  not an Error: ${n}`)
  }
  if (r.compared) lines.push(`kernel: ${r.compared} graphs compared CPU vs WebGPU0, ${r.disagreements.length} beyond NMSE 1e-3`)
  for (const d of r.disagreements.slice(0, 5)) lines.push(`  ${d}`)
  for (const fl of r.failures) {
    lines.push(`${fl.what.toUpperCase()} in a ${fl.kind} batch: ${fl.detail}`)
    lines.push(`  reproduce: ${fl.reproduce}`)
    lines.push(`  last calls:`)
    for (const j of fl.journal) lines.push(`    ${j}`)
  }
  lines.push(
    `${r.batches} batches: ${f.crashes} crashes, ${f.hangs} hangs, ${f.panics} caught panics, ${f.uncoded} errors without a WEFT_ code, ${f.nonErrors} non-Error throws`,
  )
  return lines.join('\n')
}

async function cli(): Promise<void> {
  const { values } = parseArgs({
    options: { seconds: { type: 'string', default: '60' }, seed: { type: 'string', default: '1' } },
  })
  const report = await runFuzz({
    seconds: Number(values.seconds),
    seed: Number(values.seed),
    log: (s) => console.log(s),
  })
  console.log(formatReport(report))
  const f = failureCount(report)
  process.exitCode = f.crashes + f.hangs + f.panics + f.uncoded + f.nonErrors > 0 ? 1 : 0
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) void cli()
