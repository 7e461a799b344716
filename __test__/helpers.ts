// Shared helpers of the JS tests.
import { createRequire } from 'node:module'
import assert from 'node:assert/strict'
import type * as Weft from '../index.js'

const require = createRequire(import.meta.url)
export const weft: typeof Weft = require('../index.js')

/** Deterministic values in [-1, 1). */
export function randomFloats(n: number, seed: number): Float32Array {
  let s = (seed * 2654435761) >>> 0 || 1
  const out = new Float32Array(n)
  for (let i = 0; i < n; i++) {
    s ^= s << 13
    s >>>= 0
    s ^= s >>> 17
    s ^= s << 5
    s >>>= 0
    out[i] = (s / 4294967296) * 2 - 1
  }
  return out
}

/** `f` throws an Error with this `code` whose message mentions every one of `parts`. */
export function throwsWith(f: () => unknown, code: string, ...parts: string[]): void {
  assert.throws(f, (e: any) => {
    assert.ok(e instanceof Error, 'an Error')
    assert.equal((e as { code?: string }).code, code, e.message)
    for (const p of parts) assert.ok(e.message.includes(p), `"${e.message}" should mention "${p}"`)
    return true
  })
}

/**
 * `call()` returns a Promise rather than throwing, and it rejects with an Error with this
 * `code` whose message mentions every one of `parts`.
 */
export async function rejectsWith(call: () => Promise<unknown>, code: string, ...parts: string[]): Promise<void> {
  let p: Promise<unknown>
  try {
    p = call()
  } catch (e) {
    assert.fail(`threw synchronously instead of rejecting: ${(e as Error).message}`)
  }
  assert.ok(p instanceof Promise, 'returns a Promise')
  await assert.rejects(p, (e: any) => {
    assert.ok(e instanceof Error, 'an Error')
    assert.equal((e as { code?: string }).code, code, e.message)
    for (const part of parts) assert.ok(e.message.includes(part), `"${e.message}" should mention "${part}"`)
    return true
  })
}

export function assertClose(got: ArrayLike<number>, want: ArrayLike<number>, tol: number, what = ''): void {
  if (got.length !== want.length) throw new Error(`${what}: length ${got.length} != ${want.length}`)
  for (let i = 0; i < got.length; i++) {
    if (!(Math.abs(got[i] - want[i]) <= tol * (1 + Math.abs(want[i])))) {
      throw new Error(`${what}: element ${i}: got ${got[i]}, want ${want[i]} (tol ${tol})`)
    }
  }
}

/** Names of the backends this machine has, CPU first. */
export function backendNames(): string[] {
  return weft.Backend.devices().map((d) => d.name)
}
