// What a fuzzed call did, and the tally a worker reports to the runner. Failures are:
// a crash or hang (the runner sees those), a caught panic (WEFT_INTERNAL, or the panic
// count going up), an error without a WEFT_ code, and a throw that is not an Error.
import fs from 'node:fs'
import { UserThrow } from './values.ts'

export interface Tally {
  calls: number
  /** Outcomes by error code ('ok' for calls that returned). */
  byCode: Record<string, number>
  /** Up to a few examples of each kind of failure, with the call that caused it. */
  panics: string[]
  uncoded: string[]
  nonErrors: string[]
  /** Caught panics according to the binding's own count (weft.caughtPanics()). */
  panicCount: number
}

export function newTally(): Tally {
  return { calls: 0, byCode: {}, panics: [], uncoded: [], nonErrors: [], panicCount: 0 }
}

const KEEP = 5

/** Record one call's outcome: `error` undefined when it returned. */
export function record(t: Tally, call: string, error?: unknown): void {
  t.calls++
  let code = 'ok'
  if (error !== undefined) {
    if (error instanceof UserThrow || (error instanceof Error && error.cause instanceof UserThrow)) {
      code = 'user-throw' // the fuzzer's own throwing getter: not weft's to code
    } else if (!(error instanceof Error)) {
      code = 'non-error'
      if (t.nonErrors.length < KEEP) t.nonErrors.push(`${call} threw ${String(error)}`)
    } else {
      const c = (error as { code?: unknown }).code
      code = typeof c === 'string' && c.startsWith('WEFT_') ? c : `uncoded:${String(c)}`
      if (code === 'WEFT_INTERNAL' && t.panics.length < KEEP) t.panics.push(`${call}: ${error.message}`)
      if (code.startsWith('uncoded') && t.uncoded.length < KEEP) t.uncoded.push(`${call}: ${error.name}: ${error.message}`)
    }
  }
  t.byCode[code] = (t.byCode[code] ?? 0) + 1
  // FUZZ_VERBOSE=1 prints every outcome to stderr, to see what the fuzzer reaches.
  if (process.env.FUZZ_VERBOSE) process.stderr.write(`${code} ${call}${error instanceof Error ? ` -- ${error.message}` : ''}\n`)
}

/** Sum tallies (the runner's total over batches). */
export function merge(into: Tally, t: Tally): void {
  into.calls += t.calls
  for (const [k, v] of Object.entries(t.byCode)) into.byCode[k] = (into.byCode[k] ?? 0) + v
  into.panics.push(...t.panics.slice(0, KEEP - into.panics.length))
  into.uncoded.push(...t.uncoded.slice(0, KEEP - into.uncoded.length))
  into.nonErrors.push(...t.nonErrors.slice(0, KEEP - into.nonErrors.length))
  into.panicCount += t.panicCount
}

export function uncodedCount(t: Tally): number {
  return Object.entries(t.byCode)
    .filter(([k]) => k.startsWith('uncoded'))
    .reduce((s, [, v]) => s + v, 0)
}

/**
 * The journal: one line per call, written before the call runs, so that when a call
 * crashes the process the runner can print the sequence that led there.
 */
export class Journal {
  private fd: number | null
  constructor(file: string | undefined) {
    this.fd = file ? fs.openSync(file, 'w') : null
  }
  write(line: string): void {
    if (this.fd !== null) fs.writeSync(this.fd, line + '\n')
  }
}

/** Await `p`, or report a hang after `ms`. */
export async function settle<T>(p: Promise<T>, ms: number): Promise<{ value?: T; error?: unknown; hung?: true }> {
  let timer: NodeJS.Timeout | undefined
  const hang = new Promise<{ hung: true }>((res) => {
    timer = setTimeout(() => res({ hung: true }), ms)
  })
  try {
    return await Promise.race([p.then((value) => ({ value }), (error) => ({ error })), hang])
  } finally {
    clearTimeout(timer)
  }
}

/** Exit status a worker uses for a promise that never settled. */
export const HANG_EXIT = 86

/** A call never settled: journal it, report the tally so far, end the worker. */
export function exitOnHang(tally: Tally, journal: Journal, call: string): never {
  journal.write(`HANG ${call}`)
  process.stdout.write(JSON.stringify({ ...tally, hang: call }) + '\n')
  process.exit(HANG_EXIT)
}
