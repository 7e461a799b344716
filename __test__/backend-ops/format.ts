// Case names and printf-style numbers exactly as test-backend-ops prints them.
//
// ggml builds a case's name with VARS_TO_STR: `name=value` pairs joined by ',', where
// var_to_str is std::to_string for integers (and for bools and plain enums, which promote
// to int: 0/1), std::to_string for floats (C's "%f": 6 decimals), ggml_type_name for types,
// "avg"/"max" for pool ops and "[a,b,c]" for arrays. Here vars() returns a plain object whose
// key order is the VARS_TO_STR order; floats are marked with `float()` since a JS number
// cannot tell 2 from 2.0f.

/** A float parameter: printed as C's "%f" of the float value. */
export class FloatVar {
  readonly value: number;
  constructor(value: number) {
    this.value = Math.fround(value);
  }
}

/** Marks a parameter as a C float (std::to_string prints it with 6 decimals). */
export function float(x: number): FloatVar {
  return new FloatVar(x);
}

export type VarValue = string | number | boolean | FloatVar | readonly VarValue[];
export type Vars = Record<string, VarValue>;

/** C's "%.{digits}f" (std::to_string(float) is "%f" = 6 digits), including "-0.000000". */
export function fixed(x: number, digits = 6): string {
  if (Number.isNaN(x)) return x < 0 ? '-nan' : 'nan';
  if (!Number.isFinite(x)) return x < 0 ? '-inf' : 'inf';
  const neg = x < 0 || Object.is(x, -0);
  const abs = Math.abs(x);
  let s: string;
  if (abs < 1e21) {
    s = abs.toFixed(digits);
  } else {
    // toFixed switches to exponent notation from 1e21; build the integer part by BigInt.
    s = BigInt(Math.round(abs)).toString() + (digits > 0 ? '.' + '0'.repeat(digits) : '');
  }
  return (neg ? '-' : '') + s;
}

/** ggml's var_to_str. */
export function varToStr(v: VarValue): string {
  if (v instanceof FloatVar) return fixed(v.value);
  if (Array.isArray(v)) return '[' + v.map(varToStr).join(',') + ']';
  if (typeof v === 'boolean') return v ? '1' : '0';
  if (typeof v === 'number') {
    if (!Number.isInteger(v)) throw new Error(`var_to_str: ${v} is not an integer; mark floats with float()`);
    return String(v);
  }
  return v as string;
}

/** ggml's VARS_TO_STR: `a=1,b=[1,2],c=0.500000`. */
export function varsToStr(vars: Vars): string {
  return Object.entries(vars)
    .map(([k, v]) => `${k}=${varToStr(v)}`)
    .join(',');
}

/** printf("%*s", width, s) / "%-*s": pad to a width. */
export function pad(s: string, width: number, left = false): string {
  return left ? s.padEnd(width) : s.padStart(width);
}

/** printf("%{w}.{d}f"). */
export function fmtF(x: number, width: number, digits: number): string {
  return pad(fixed(x, digits), width);
}

/** The file name ggml-reference gives a case: characters outside [A-Za-z0-9_.=,-] become '_'. */
export function sanitizeName(name: string): string {
  return name.replace(/[^A-Za-z0-9_.=,-]/g, '_');
}

let colorOn = process.env.NO_COLOR === undefined && (process.env.FORCE_COLOR !== undefined || !!process.stdout.isTTY);

/** Turn ANSI colors on or off (the CLI's default: on for a terminal, off otherwise). */
export function setColor(on: boolean): void {
  colorOn = on;
}

/** ggml's "\033[1;32mOK\033[0m" style; plain text when color is off. */
export function color(code: 'green' | 'red' | 'blue', s: string): string {
  if (!colorOn) return s;
  const c = { green: '1;32', red: '1;31', blue: '1;34' }[code];
  return `\x1b[${c}m${s}\x1b[0m`;
}
