// numpy (OpenBLAS) as a peer that times one operation per request, so weft's and
// OpenBLAS's measurements alternate within the same run: `python3` stays up, holds its
// arrays, and answers each line ("gemm N CALLS" or "gemv M K CALLS": the best of CALLS
// calls in a row; "gemvs M K COPIES CALLS": one mat-vec of each of COPIES matrices in turn,
// the best of CALLS such passes) with the seconds one call (one mat-vec) took.

import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createInterface, type Interface } from 'node:readline';

const SCRIPT = `
import sys, time
import numpy as np
cache = {}
def arrays(key, make):
    if key not in cache:
        cache[key] = make()
    return cache[key]
def best(calls, a, b):
    t = float('inf')
    for _ in range(calls):
        t0 = time.perf_counter(); a @ b; t = min(t, time.perf_counter() - t0)
    return t
for line in sys.stdin:
    p = line.split()
    if p[0] == 'gemm':
        n, calls = int(p[1]), int(p[2])
        a, b = arrays(('gemm', n), lambda: (np.random.rand(n, n).astype(np.float32), np.random.rand(n, n).astype(np.float32)))
        print(best(calls, a, b), flush=True)
    elif p[0] == 'gemv':
        m, k, calls = int(p[1]), int(p[2]), int(p[3])
        a, b = arrays(('gemv', m, k), lambda: (np.random.rand(m, k).astype(np.float32), np.random.rand(k).astype(np.float32)))
        print(best(calls, a, b), flush=True)
    elif p[0] == 'gemvs':
        m, k, copies, calls = int(p[1]), int(p[2]), int(p[3]), int(p[4])
        mats, x = arrays(('gemvs', m, k, copies), lambda: ([np.random.rand(m, k).astype(np.float32) for _ in range(copies)], np.random.rand(k).astype(np.float32)))
        t = float('inf')
        for _ in range(calls):
            t0 = time.perf_counter()
            for a in mats: a @ x
            t = min(t, (time.perf_counter() - t0) / copies)
        print(t, flush=True)
`;

export class BlasPeer {
  private readonly child: ChildProcess;
  private readonly lines: Interface;
  private readonly pending: ((s: string) => void)[] = [];

  private constructor() {
    // Some machines pin OpenBLAS to an old core type for safety; that slows it down, so the
    // peer runs without those two settings.
    const env = { ...process.env };
    delete env.OPENBLAS_CORETYPE;
    delete env.OPENBLAS_L2_SIZE;
    this.child = spawn('python3', ['-c', SCRIPT], { env, stdio: ['pipe', 'pipe', 'ignore'] });
    this.lines = createInterface({ input: this.child.stdout! });
    this.lines.on('line', (l) => this.pending.shift()?.(l));
  }

  /** A running peer, or null when python3 with numpy is not installed. */
  static start(): BlasPeer | null {
    try {
      const check = spawnSync('python3', ['-c', 'import numpy'], { stdio: 'ignore' });
      if (check.status !== 0) return null;
    } catch {
      return null;
    }
    return new BlasPeer();
  }

  private ask(line: string): Promise<number> {
    return new Promise((res, rej) => {
      this.pending.push((s) => (Number.isFinite(Number(s)) ? res(Number(s)) : rej(new Error(`numpy peer: ${s}`))));
      this.child.stdin!.write(line + '\n');
    });
  }

  /** Seconds of one f32 n x n x n matrix product: the best of `calls` made back to back. */
  gemm(n: number, calls: number): Promise<number> {
    return this.ask(`gemm ${n} ${calls}`);
  }

  /**
   * Seconds of one f32 mat-vec of an m x k matrix taken from DRAM: one pass makes a mat-vec
   * of each of `copies` matrices in turn (enough that none is still cached when its turn
   * comes); the best of `calls` passes, per mat-vec.
   */
  gemvCopies(m: number, k: number, copies: number, calls: number): Promise<number> {
    return this.ask(`gemvs ${m} ${k} ${copies} ${calls}`);
  }

  /** Seconds of one f32 mat-vec of an m x k matrix: the best of `calls` made back to back. */
  gemv(m: number, k: number, calls: number): Promise<number> {
    return this.ask(`gemv ${m} ${k} ${calls}`);
  }

  close(): void {
    this.child.stdin!.end();
    this.lines.close();
  }
}
