// What running one case in one mode on one backend came to, and how it prints.

import { NotSupported } from '../capabilities.js';
import { color } from '../format.js';
import type { Context, Tensor } from 'weft-ml';
import type { Mode, TestCase } from '../test-case.js';

/**
 * ok / fail: the case ran and its results were checked. not supported: a backend cannot run
 * one of its ops or types, or the binding lacks an API the mode needs. not implemented: the
 * case's graph could not even be built (an op or method weft lacks). skipped: ggml's own
 * silent skips (OPT_STEP_ADAMW in grad mode).
 */
export type Status = 'ok' | 'fail' | 'not supported' | 'not implemented' | 'skipped';

export interface CaseResult {
  name: string;
  op: string;
  status: Status;
  /** What ggml prints after "  NAME: " (without the trailing newline); '' for silent skips. */
  text: string;
  /** Why a case was not supported / not implemented / skipped, or why it failed. */
  reason: string;
  /** Seconds the case took. */
  seconds: number;
}

/** A result's printed status word as ggml colors it. */
export function okText(): string {
  return color('green', 'OK');
}

export function failText(): string {
  return color('red', 'FAIL');
}

/** A case whose graph could not be built: weft lacks the op or a method, or rejects its shapes. */
export class NotImplemented extends Error {}

/** Build the case's graph; any error becomes NotImplemented naming the case's op. */
export function buildCase(tc: TestCase, ctx: Context, mode: Mode): Tensor {
  tc.begin(mode);
  if (mode === 'test') tc.addSentinel(ctx); // pre-graph sentinel
  let out: Tensor;
  try {
    out = tc.buildGraph(ctx);
  } catch (e) {
    const err = e as Error & { code?: string };
    throw new NotImplemented(err.code ? `${err.message} (${err.code})` : err.message);
  }
  const desc = tc.opDesc(out);
  if (desc !== tc.op) throw new Error(`port bug: ${tc.constructor.name} declares op ${tc.op} but builds ${desc}`);
  return out;
}

/** What a result is reported under: a case, or a conformance file before its case is built. */
export interface CaseLabel {
  readonly name: string;
  readonly op: string;
}

/** Turn what a mode threw into a result: NotSupported / NotImplemented, any other error a failure. */
export function resultOfError(tc: CaseLabel, e: unknown, started: number, prefix = ''): CaseResult {
  const base = { name: tc.name, op: tc.op, seconds: (performance.now() - started) / 1000 };
  if (e instanceof NotSupported) {
    return { ...base, status: 'not supported', text: `${prefix}not supported: ${e.message}`, reason: e.message };
  }
  if (e instanceof NotImplemented) {
    return { ...base, status: 'not implemented', text: `not implemented: ${e.message}`, reason: e.message };
  }
  const err = e as Error;
  return { ...base, status: 'fail', text: `${prefix}error: ${err.message} ${failText()}`, reason: err.message };
}

/** A finished result. */
export function result(tc: CaseLabel, status: Status, text: string, reason: string, started: number): CaseResult {
  return { name: tc.name, op: tc.op, status, text, reason, seconds: (performance.now() - started) / 1000 };
}

interface Disposable {
  dispose(): void;
}

/** One case's run in one mode: when it started and what to free when it ends. */
export class CaseRun {
  readonly started = performance.now();
  readonly held: Disposable[] = [];

  constructor(readonly tc: CaseLabel) {}

  /** Free `x` (a context, a buffer, a file) when the run ends, last held first; returns it. */
  hold<T extends Disposable | null>(x: T): T {
    if (x) this.held.push(x);
    return x;
  }

  result(status: Status, text: string, reason: string): CaseResult {
    return result(this.tc, status, text, reason, this.started);
  }
}

/** Run a mode's body for one case: what it throws becomes a result, what it held is freed. */
export async function runCase(tc: CaseLabel, body: (run: CaseRun) => Promise<CaseResult>): Promise<CaseResult> {
  const run = new CaseRun(tc);
  try {
    return await body(run);
  } catch (e) {
    return resultOfError(tc, e, run.started);
  } finally {
    for (const x of run.held.reverse()) x.dispose();
  }
}
