// The JS API as the fuzzer sees it, read from index.d.ts (the file napi generates from the
// binding): every class with its constructor, static and instance methods, getters and
// setters; every module function; the options interfaces and the string unions. A method
// added to the binding is fuzzed without an edit here.
import fs from 'node:fs'
import { fileURLToPath } from 'node:url'
import ts from 'typescript'

/** A parameter or property: its name, its type as written in index.d.ts, optional or not. */
export interface Param {
  name: string
  type: ts.TypeNode
  optional: boolean
}

export type MemberKind = 'constructor' | 'static' | 'method' | 'getter' | 'setter'

export interface Member {
  className: string | null // null for module functions
  name: string
  /** The property key: the name, or a well-known symbol (`[globalThis.Symbol.dispose]`). */
  key: string | symbol
  kind: MemberKind
  params: Param[]
  /** The return type as text (class names identify objects to keep). */
  returns: string
}

export interface ApiModel {
  classes: Set<string>
  members: Member[]
  interfaces: Map<string, Param[]>
  /** String unions: `export type GgmlType = 'f32' | ...` */
  unions: Map<string, string[]>
  /** Other type aliases (TypedArray): their type nodes. */
  aliases: Map<string, ts.TypeNode>
}

const dts = fileURLToPath(new URL('../../index.d.ts', import.meta.url))

function params(ps: ts.NodeArray<ts.ParameterDeclaration>): Param[] {
  return ps.map((p) => ({
    name: p.name.getText(),
    type: p.type ?? ts.factory.createKeywordTypeNode(ts.SyntaxKind.UnknownKeyword),
    optional: !!p.questionToken,
  }))
}

function isStatic(m: ts.ClassElement): boolean {
  return !!ts.getModifiers(m as ts.MethodDeclaration)?.some((x) => x.kind === ts.SyntaxKind.StaticKeyword)
}

/** `[globalThis.Symbol.dispose]` -> Symbol.dispose; other names as they are. */
function keyOf(name: string): string | symbol {
  const m = /^\[(?:globalThis\.)?Symbol\.(\w+)\]$/.exec(name)
  return m ? (Symbol as unknown as Record<string, symbol>)[m[1]] ?? name : name
}

/** Parse index.d.ts. */
export function loadApiModel(): ApiModel {
  const src = ts.createSourceFile('index.d.ts', fs.readFileSync(dts, 'utf8'), ts.ScriptTarget.Latest, true)
  const model: ApiModel = { classes: new Set(), members: [], interfaces: new Map(), unions: new Map(), aliases: new Map() }
  for (const st of src.statements) {
    if (ts.isClassDeclaration(st) && st.name) {
      const cls = st.name.text
      model.classes.add(cls)
      for (const m of st.members) {
        const name = m.name?.getText() ?? 'constructor'
        const key = keyOf(name)
        if (ts.isConstructorDeclaration(m)) {
          model.members.push({ className: cls, name, key, kind: 'constructor', params: params(m.parameters), returns: cls })
        } else if (ts.isMethodDeclaration(m)) {
          const kind = isStatic(m) ? 'static' : 'method'
          model.members.push({ className: cls, name, key, kind, params: params(m.parameters), returns: m.type?.getText() ?? 'void' })
        } else if (ts.isGetAccessorDeclaration(m)) {
          model.members.push({ className: cls, name, key, kind: 'getter', params: [], returns: m.type?.getText() ?? 'unknown' })
        } else if (ts.isSetAccessorDeclaration(m)) {
          model.members.push({ className: cls, name, key, kind: 'setter', params: params(m.parameters), returns: 'void' })
        }
      }
    } else if (ts.isFunctionDeclaration(st) && st.name) {
      model.members.push({
        className: null,
        name: st.name.text,
        key: st.name.text,
        kind: 'static',
        params: params(st.parameters),
        returns: st.type?.getText() ?? 'void',
      })
    } else if (ts.isInterfaceDeclaration(st)) {
      const props: Param[] = []
      for (const m of st.members) {
        if (ts.isPropertySignature(m) && m.type) {
          props.push({ name: m.name.getText(), type: m.type, optional: !!m.questionToken })
        }
      }
      model.interfaces.set(st.name.text, props)
    } else if (ts.isTypeAliasDeclaration(st)) {
      const t = st.type
      const literals =
        ts.isUnionTypeNode(t) &&
        t.types.every((u) => ts.isLiteralTypeNode(u) && ts.isStringLiteral(u.literal))
      if (literals) {
        model.unions.set(
          st.name.text,
          (t as ts.UnionTypeNode).types.map((u) => ((u as ts.LiteralTypeNode).literal as ts.StringLiteral).text),
        )
      } else {
        model.aliases.set(st.name.text, t)
      }
    }
  }
  return model
}

/** The class an API member returns objects of (through Promise, Array and null), if any. */
export function returnedClass(model: ApiModel, returns: string): string | null {
  const m = /^(?:Promise<)?(?:Array<)?(\w+)/.exec(returns)
  return m && model.classes.has(m[1]) ? m[1] : null
}
