// Running JS in a child process, for tests whose failure mode is a crash (abort, SIGSEGV,
// SIGBUS): in the test runner's own process a crash would end the run instead of failing
// one test. The child gets `weft` (the addon) and prints what the test checks.
import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'

const addon = fileURLToPath(new URL('../index.js', import.meta.url))

export interface ChildResult {
  status: number | null
  signal: NodeJS.Signals | null
  stdout: string
  stderr: string
}

/**
 * Run `body` (an ES module body; `weft` is in scope and top-level await works) in a fresh
 * node process and return how it ended.
 */
export function runIsolated(body: string, env: Record<string, string> = {}, timeoutMs = 60_000): ChildResult {
  const script = `import { createRequire } from 'node:module'\nconst weft = createRequire(import.meta.url)(${JSON.stringify(addon)})\n${body}`
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
    encoding: 'utf8',
    timeout: timeoutMs,
    env: { ...process.env, ...env },
  })
  return { status: r.status, signal: r.signal, stdout: r.stdout ?? '', stderr: r.stderr ?? '' }
}

/** A one-line summary of how a child ended, for assertion messages. */
export function describeEnd(r: ChildResult): string {
  const tail = r.stderr.split('\n').filter((l) => l && !l.includes('XDG_RUNTIME_DIR')).slice(-4).join(' | ')
  return `status=${r.status} signal=${r.signal} stdout=${JSON.stringify(r.stdout.slice(-400))} stderr=${tail}`
}
