// Argument values for the API fuzzer, made from the parameter types in index.d.ts: mostly
// values of the declared type that weft is likely to accept (small dimensions, existing
// objects of the right class, options objects with their fields), and at a set rate
// hostile ones (wrong types, NaN, fractions, huge and negative numbers, objects of another
// class, disposed objects, nested junk).
import util from 'node:util'
import ts from 'typescript'
import { Rng } from '../backend-ops/rng.ts'
import type { ApiModel } from './api-model.ts'

export class FuzzRng extends Rng {
  /** An integer in [lo, hi]. */
  int(lo: number, hi: number): number {
    return lo + (this.nextU32() % (hi - lo + 1))
  }
  chance(p: number): boolean {
    return this.unit() < p
  }
  pick<T>(xs: readonly T[]): T {
    return xs[this.nextU32() % xs.length]
  }
}

/** Objects the fuzzer made so far, by class name (newest last), to pass as arguments. */
export class ObjectPool {
  private byClass = new Map<string, object[]>()
  add(cls: string, o: unknown): void {
    if (o === null || typeof o !== 'object') return
    const list = this.byClass.get(cls) ?? []
    list.push(o)
    if (list.length > 64) list.splice(0, list.length - 64)
    this.byClass.set(cls, list)
  }
  any(cls: string, rng: FuzzRng): object | undefined {
    const list = this.byClass.get(cls)
    if (!list?.length) return undefined
    // Favour recent objects: they are the ones a real program would use next.
    return rng.chance(0.6) ? list[list.length - 1 - rng.int(0, Math.min(3, list.length - 1))] : rng.pick(list)
  }
  classes(): string[] {
    return [...this.byClass.keys()]
  }
}

/** Thrown by the getter of a hostile options object: recognised as the caller's own error. */
export class UserThrow extends Error {}

/** Numbers weft's integer arguments must refuse or handle at their edges. */
const HOSTILE_NUMBERS = [-1, 2.5, NaN, Infinity, -Infinity, 2 ** 31, 2 ** 32 + 1, 2 ** 53, 2 ** 62, -(2 ** 40), 1e300, -0]
const STRINGS = ['', 'CPU', 'WebGPU0', 'x'.repeat(300), 'général.ñame', 'a\u0000b', 'f32', 'general.alignment']

export class ValueMaker {
  constructor(
    private model: ApiModel,
    private rng: FuzzRng,
    private pool: ObjectPool,
    /** How often a value is hostile (0..1). */
    private hostility: number,
  ) {}

  /** A value for a parameter of this type. */
  make(type: ts.TypeNode, depth = 0): unknown {
    if (this.rng.chance(this.hostility)) return this.hostile(depth)
    return this.valid(type, depth)
  }

  /** A value of the declared type, likely accepted. */
  valid(type: ts.TypeNode, depth: number): unknown {
    const rng = this.rng
    switch (type.kind) {
      case ts.SyntaxKind.NumberKeyword:
        return rng.chance(0.8) ? rng.pick([0, 1, 2, 3, 4, 8, 16, 32, 64, 256]) : rng.int(0, 300)
      case ts.SyntaxKind.BooleanKeyword:
        return rng.chance(0.5)
      case ts.SyntaxKind.StringKeyword:
        return rng.pick(STRINGS)
      case ts.SyntaxKind.BigIntKeyword:
        return BigInt(rng.int(0, 1000))
      case ts.SyntaxKind.UndefinedKeyword:
        return undefined
      case ts.SyntaxKind.NullKeyword:
      case ts.SyntaxKind.LiteralType:
        if (ts.isLiteralTypeNode(type) && ts.isStringLiteral(type.literal)) return type.literal.text
        return null
      case ts.SyntaxKind.UnknownKeyword:
      case ts.SyntaxKind.AnyKeyword:
        return this.hostile(depth)
    }
    if (ts.isUnionTypeNode(type)) return this.make(rng.pick(type.types), depth)
    if (ts.isParenthesizedTypeNode(type)) return this.make(type.type, depth)
    if (ts.isArrayTypeNode(type)) return this.array(type.elementType, depth)
    if (ts.isTypeReferenceNode(type)) {
      const name = type.typeName.getText()
      if (name === 'Array' && type.typeArguments?.length) return this.array(type.typeArguments[0], depth)
      const union = this.model.unions.get(name)
      if (union) return rng.pick(union)
      if (this.model.classes.has(name)) return this.pool.any(name, rng) ?? this.hostile(depth)
      const iface = this.model.interfaces.get(name)
      if (iface) return this.object(iface, depth)
      const alias = this.model.aliases.get(name)
      if (alias) return this.make(alias, depth)
      return this.typedArray(name)
    }
    return this.hostile(depth)
  }

  private array(element: ts.TypeNode, depth: number): unknown[] {
    const n = this.rng.chance(0.8) ? this.rng.int(1, 4) : this.rng.int(0, 9)
    return Array.from({ length: n }, () => (depth > 3 ? 1 : this.make(element, depth + 1)))
  }

  private object(props: { name: string; type: ts.TypeNode; optional: boolean }[], depth: number): object {
    const o: Record<string, unknown> = {}
    for (const p of props) {
      if (p.optional && this.rng.chance(0.5)) continue
      if (!p.optional && this.rng.chance(this.hostility / 4)) continue // a required field missing
      o[p.name] = depth > 3 ? 1 : this.make(p.type, depth + 1)
    }
    return o
  }

  private typedArray(name: string): unknown {
    const n = this.rng.pick([0, 1, 4, 16, 32, 64, 256, 1024])
    switch (name) {
      case 'Float32Array':
        return Float32Array.from({ length: n }, () => this.rng.uniform(-2, 2))
      case 'Uint8Array':
        return Uint8Array.from({ length: n }, () => this.rng.int(0, 255))
      case 'Int32Array':
        return Int32Array.from({ length: n }, () => this.rng.int(0, 3))
      case 'Buffer':
        return Buffer.alloc(n)
      default:
        return new Uint8Array(n)
    }
  }

  /** A value of any type, often one the parameter does not take. */
  hostile(depth: number): unknown {
    const rng = this.rng
    switch (rng.int(0, 13)) {
      case 0:
        return undefined
      case 1:
        return null
      case 2:
        return rng.pick(HOSTILE_NUMBERS)
      case 3:
        return rng.pick(STRINGS)
      case 4:
        return rng.pick([0n, -1n, 2n ** 64n])
      case 5:
        return {}
      case 6:
        return depth > 2 ? [] : [this.hostile(depth + 1), this.hostile(depth + 1)]
      case 7:
        return Symbol('fuzz')
      case 8:
        return () => 1
      case 9:
        return new Float32Array(rng.pick([0, 3, 17]))
      case 10: {
        // An object of some class, most likely not the one expected.
        const cls = this.pool.classes()
        return cls.length ? this.pool.any(rng.pick(cls), rng) : {}
      }
      case 11:
        // An options-like object whose getter throws: the error is the caller's own.
        return new Proxy(
          {},
          {
            get() {
              throw new UserThrow('thrown by the fuzzer')
            },
          },
        )
      case 12:
        return rng.chance(0.5)
      default:
        return rng.int(-3, 5)
    }
  }
}

/** A short readable rendering of an argument, for the call journal. */
export function show(v: unknown, depth = 0): string {
  if (v === undefined) return 'undefined'
  if (v === null) return 'null'
  if (typeof v === 'number') return Object.is(v, -0) ? '-0' : String(v)
  if (typeof v === 'bigint') return `${v}n`
  if (typeof v === 'string') return JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}...(${v.length})` : v)
  if (typeof v === 'symbol') return 'Symbol()'
  if (typeof v === 'function') return '() => 1'
  if (ArrayBuffer.isView(v)) return `new ${v.constructor.name}(${(v as Uint8Array).length})`
  if (util.types.isProxy(v)) return 'throwingProxy'
  if (Array.isArray(v)) return depth > 2 ? '[...]' : `[${v.map((x) => show(x, depth + 1)).join(', ')}]`
  const tag = (v as { [REF]?: string })[REF]
  if (tag) return tag
  if (depth > 2) return '{...}'
  return `{ ${Object.entries(v as object)
    .map(([k, x]) => `${k}: ${show(x, depth + 1)}`)
    .join(', ')} }`
}


/** Objects the fuzzer keeps get a name (`Tensor#12`) used in the journal. */
export const REF = Symbol('fuzz ref')
