// ggml's test-backend-ops in perf mode as a child process that can be held between cases:
// each result line it prints resolves `next()`, and the process is stopped (SIGSTOP) in the
// same callback when the caller asked to hold it there, so weft can run the same case while
// ggml sits between its timed loops; `resume()` continues it. Stopped time is not counted in
// ggml's running time. ggml's OpenMP workers spin after each graph, so a ggml left running
// while weft measures would slow weft down (and a stopped one cannot).

import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createInterface } from 'node:readline';

/** One case line of a perf run (ggml's or weft's, the same format). */
export interface PerfLine {
  name: string;
  /** us per run; null when the case printed "not supported" or failed. */
  us: number | null;
  text: string;
}

const ANSI = /\x1b\[[0-9;]*m/g;

/** Parse "  NAME(params):   N runs - X us/run - ..." (or "not supported"); null for other lines. */
export function parsePerfLine(line: string): PerfLine | null {
  const s = line.replace(ANSI, '');
  const m = /^\s+([A-Z0-9_]+\(.*?\)):\s+(.*)$/.exec(s);
  if (!m) return null;
  const us = /(\d+)\s+runs\s+-\s+([\d.]+)\s+us\/run/.exec(m[2]!);
  return { name: m[1]!, us: us ? Number(us[2]) : null, text: m[2]!.trim() };
}

export class GgmlPerf {
  private readonly child: ChildProcess;
  private readonly lines: PerfLine[] = [];
  private waiting: ((l: PerfLine | null) => void) | null = null;
  private exited = false;
  private stoppedAt: number | null = null;
  private stoppedMs = 0;
  private readonly started = performance.now();
  private holdNext = false;
  readonly stderr: string[] = [];

  /** Start `bin perf -b CPU [-o op]`; line-buffered through stdbuf where there is one. */
  constructor(bin: string, op: string | null) {
    const args = ['perf', '-b', 'CPU', ...(op ? ['-o', op] : [])];
    const stdbuf = ['/usr/bin/stdbuf', '/bin/stdbuf'].find((p) => existsSync(p));
    this.child = stdbuf ? spawn(stdbuf, ['-oL', bin, ...args]) : spawn(bin, args);
    this.child.stdin?.end();
    createInterface({ input: this.child.stdout! }).on('line', (line) => {
      const l = parsePerfLine(line);
      if (!l) return;
      if (this.holdNext && this.child.pid && !this.exited) {
        // Stop at once: the timed loop of this case is over, the next one has not started.
        this.child.kill('SIGSTOP');
        this.stoppedAt = performance.now();
        this.holdNext = false;
      }
      this.push(l);
    });
    createInterface({ input: this.child.stderr! }).on('line', (l) => this.stderr.push(l));
    this.child.on('exit', () => {
      this.exited = true;
      this.push(null);
    });
    this.child.on('error', (e) => {
      this.stderr.push(String(e));
      this.exited = true;
      this.push(null);
    });
  }

  private push(l: PerfLine | null): void {
    if (l) this.lines.push(l);
    if (this.waiting && (this.lines.length > 0 || this.exited)) {
      const w = this.waiting;
      this.waiting = null;
      w(this.lines.shift() ?? null);
    }
  }

  /** The next case line; with `hold`, the process is stopped right after printing it. null at exit. */
  next(hold: boolean): Promise<PerfLine | null> {
    if (this.lines.length > 0) {
      // Already printed (a buffered batch): holding now is still between timed loops only if
      // nothing else is pending, which a line-buffered run guarantees; resume() undoes it.
      return Promise.resolve(this.lines.shift()!);
    }
    if (this.exited) return Promise.resolve(null);
    this.holdNext = hold;
    return new Promise((res) => (this.waiting = res));
  }

  /** Continue a held process. */
  resume(): void {
    if (this.stoppedAt === null) return;
    this.stoppedMs += performance.now() - this.stoppedAt;
    this.stoppedAt = null;
    if (!this.exited) this.child.kill('SIGCONT');
  }

  /** Seconds the process has run so far, not counting the time it was held. */
  runningSeconds(): number {
    const held = this.stoppedMs + (this.stoppedAt === null ? 0 : performance.now() - this.stoppedAt);
    return (performance.now() - this.started - held) / 1000;
  }

  /** Stop it for good (after the last case wanted). */
  async kill(): Promise<void> {
    if (this.exited) return;
    const gone = new Promise<void>((res) => this.child.once('exit', () => res()));
    this.child.kill('SIGKILL');
    await gone;
  }

  /** Wait for it to end by itself. */
  async done(): Promise<void> {
    if (this.exited) return;
    await new Promise<void>((res) => this.child.once('exit', () => res()));
  }
}
