// npm run bench -- --vs-ggml PATH [--rounds N] [-o OP] [-p SUBSTRING] [--max-minutes M]
//
// ggml's perf mode (PATH = its test-backend-ops binary, built from the reference commit
// outside this repo) and weft's, interleaved: for each case group (an op: ADD, MUL_MAT) a
// ggml process runs the group's perf list, and weft runs each case right after ggml printed
// it. MUL_MAT groups hold ggml (SIGSTOP) between cases, so the two take turns case by case
// and never run at the same time; the short ADD group runs whole, then weft's ADD cases.
// Round after round (ggml first each time); then per case the best us/run of each and the
// ratio weft speed / ggml speed (= ggml us / weft us), and each perf mode's running time.
// Run it on an otherwise idle machine: ggml's OpenMP threads spin, so any other process
// inflates its times.

import { createRequire } from 'node:module';
import type * as Weft from '../index.js';
import { makeTestCasesPerf } from '../__test__/backend-ops/lists.js';
import { evalPerf } from '../__test__/backend-ops/modes/perf.js';
import { caseRng, quietGpuDrivers, selectCases } from '../__test__/backend-ops/runner.js';
import { DEFAULT_SEED } from '../__test__/backend-ops/rng.js';
import type { TestCase } from '../__test__/backend-ops/test-case.js';
import { GgmlPerf, parsePerfLine } from './ggml-perf.js';

const require = createRequire(import.meta.url);
const { Backend }: typeof Weft = require('../index.js');

export interface VsOptions {
  bin: string;
  rounds: number;
  op: string | null;
  params: string | null;
  maxMinutes: number;
}

const USAGE = 'usage: npm run bench -- --vs-ggml PATH [--rounds N (3)] [-o OP] [-p SUBSTRING] [--max-minutes M (90)]';

export function parseVsArgs(argv: string[]): VsOptions | string {
  const o: VsOptions = { bin: '', rounds: 3, op: null, params: null, maxMinutes: 90 };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const v = argv[i + 1];
    if (v === undefined) return USAGE;
    i++;
    if (a === '--vs-ggml') o.bin = v;
    else if (a === '--rounds') o.rounds = Number(v);
    else if (a === '-o') o.op = v;
    else if (a === '-p') o.params = v;
    else if (a === '--max-minutes') o.maxMinutes = Number(v);
    else return USAGE;
  }
  if (!o.bin || !(o.rounds >= 1) || !(o.maxMinutes > 0)) return USAGE;
  return o;
}

interface Best {
  ggml: number;
  weft: number;
}

/** The parameters that differ between the cases of one op: enough to tell them apart. */
function shortLabels(cases: TestCase[]): Map<string, string> {
  const labels = new Map<string, string>();
  const byOp = new Map<string, TestCase[]>();
  for (const tc of cases) byOp.set(tc.op, [...(byOp.get(tc.op) ?? []), tc]);
  for (const [op, group] of byOp) {
    const vars = group.map((tc) => tc.vars() as Record<string, unknown>);
    const keys = Object.keys(vars[0]!).filter((k) => new Set(vars.map((v) => JSON.stringify(v[k]))).size > 1);
    for (const [i, tc] of group.entries()) {
      const shown = keys.length ? keys : Object.keys(vars[i]!);
      labels.set(tc.name, `${op} ${shown.map((k) => `${k}=${JSON.stringify(vars[i]![k]).replace(/"/g, '')}`).join(',')}`);
    }
  }
  return labels;
}

function pad(s: string, n: number, left = false): string {
  return left ? s.padStart(n) : s.padEnd(n);
}

export async function vsGgml(o: VsOptions): Promise<number> {
  quietGpuDrivers();
  const cases = selectCases(makeTestCasesPerf(), o.op, o.params);
  if (cases.length === 0) {
    console.error('no perf case matches the filters');
    return 1;
  }
  const groups: string[] = [...new Set(cases.map((tc) => tc.op))];
  const best = new Map<string, Best>(cases.map((tc) => [tc.name, { ggml: Infinity, weft: Infinity }]));
  const cpu = Backend.init('CPU');
  const started = performance.now();
  const budgetMs = o.maxMinutes * 60_000;
  const totals: { ggml: number; weft: number; complete: boolean }[] = [];
  console.log(`ggml: ${o.bin}; ${cases.length} cases in ${groups.join(', ')}; up to ${o.rounds} rounds, ${o.maxMinutes} min`);
  try {
    for (let round = 1; round <= o.rounds; round++) {
      const t = { ggml: 0, weft: 0, complete: true };
      for (const op of groups) {
        if (performance.now() - started > budgetMs) {
          t.complete = false;
          break;
        }
        const mine = cases.filter((tc) => tc.op === op);
        const hold = op === 'MUL_MAT'; // big inputs: ggml's next case spends long initializing first
        const ggml = new GgmlPerf(o.bin, op);
        const wanted = new Set(mine.map((tc) => tc.name));
        const weftQueue: TestCase[] = [];
        const runWeft = async (tc: TestCase): Promise<void> => {
          const r = await evalPerf(tc, cpu, caseRng(DEFAULT_SEED, tc), { minSeconds: 1 });
          t.weft += r.seconds;
          const us = parsePerfLine(`  ${r.name}: ${r.text}`)?.us ?? null;
          if (us !== null) best.get(tc.name)!.weft = Math.min(best.get(tc.name)!.weft, us);
          console.log(`  [${round}] weft ${r.name}: ${us === null ? r.text : `${us.toFixed(2)} us/run`}`);
        };
        let seen = 0;
        while (seen < mine.length) {
          const line = await ggml.next(hold);
          if (line === null) break;
          if (!wanted.has(line.name)) {
            ggml.resume();
            continue;
          }
          seen++;
          const tc = mine.find((c) => c.name === line.name)!;
          if (line.us !== null) best.get(tc.name)!.ggml = Math.min(best.get(tc.name)!.ggml, line.us);
          console.log(`  [${round}] ggml ${line.name}: ${line.us === null ? line.text : `${line.us.toFixed(2)} us/run`}`);
          if (hold) {
            await runWeft(tc);
            ggml.resume();
          } else weftQueue.push(tc);
        }
        if (seen < mine.length) {
          console.error(`ggml ended after ${seen} of ${mine.length} ${op} cases:\n${ggml.stderr.slice(-5).join('\n')}`);
          t.complete = false;
        }
        // the cases wanted are done: the rest of ggml's list is not measured
        if (seen === mine.length && (o.params !== null || hold)) await ggml.kill();
        else await ggml.done();
        t.ggml += ggml.runningSeconds();
        for (const tc of weftQueue) await runWeft(tc);
      }
      totals.push(t);
      if (!t.complete) break;
    }
  } finally {
    cpu.dispose();
  }
  printTable(cases, best, totals, o);
  return 0;
}

function printTable(cases: TestCase[], best: Map<string, Best>, totals: { ggml: number; weft: number; complete: boolean }[], o: VsOptions): void {
  const labels = shortLabels(cases);
  const w = Math.max(...[...labels.values()].map((l) => l.length), 4);
  console.log('');
  console.log(`best us/run over ${totals.length} round(s); ratio = weft speed / ggml speed (>= 1: weft as fast or faster)`);
  console.log(`${pad('case', w)}  ${pad('ggml us', 12, true)}  ${pad('weft us', 12, true)}  ${pad('ratio', 7, true)}`);
  let below = 0;
  for (const tc of cases) {
    const b = best.get(tc.name)!;
    const ratio = b.ggml / b.weft;
    if (!(ratio >= 1)) below++;
    const f = (x: number): string => (Number.isFinite(x) ? x.toFixed(2) : '-');
    console.log(`${pad(labels.get(tc.name)!, w)}  ${pad(f(b.ggml), 12, true)}  ${pad(f(b.weft), 12, true)}  ${pad(Number.isFinite(ratio) ? ratio.toFixed(2) : '-', 7, true)}`);
  }
  console.log(`${cases.length - below}/${cases.length} cases at >= 1.00x ggml's speed`);
  for (const [i, t] of totals.entries()) {
    const note = t.complete ? '' : ' (incomplete round)';
    const extra = o.params !== null ? ' (ggml ran every case of the op up to the last one selected)' : '';
    console.log(`round ${i + 1} perf mode time: ggml ${t.ggml.toFixed(1)} s, weft ${t.weft.toFixed(1)} s${note}${extra}`);
  }
}
