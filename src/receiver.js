// Run once when the addon loads (receiver.rs). An instance method of a weft class called
// with a `this` that is not one of its objects (`const f = t.toFloat32; f()`) fails in
// V8's receiver check before weft runs, with a TypeError that has no code; an accessor
// called so fails in napi's trampoline with napi's own code. This wraps each method and
// accessor so that such errors, and any other error that escapes without a WEFT_ code,
// reach JS coded: WEFT_INVALID_ARGUMENT naming what `this` should be, or WEFT_INTERNAL
// for a caught panic. Errors with a WEFT_ code pass through untouched.
;(function installReceiverChecks(exports) {
  'use strict'
  const INTERNAL = 'internal error (a bug in weft; please report it): '
  const coded = (code, message, cause) => Object.assign(new Error(message, { cause }), { code })
  const recode = (e, className, name, self) => {
    if (e === null || typeof e !== 'object' || String(e.code).startsWith('WEFT_')) return e
    if (typeof e.message === 'string' && e.message.startsWith(INTERNAL)) return coded('WEFT_INTERNAL', e.message, e)
    const got = self === null ? 'null' : typeof self === 'object' ? 'another object' : typeof self
    if (!(self instanceof exports[className]) || e.message === 'Illegal invocation' || /unwrap|recover/.test(e.message)) {
      return coded('WEFT_INVALID_ARGUMENT', `${className}.${name}: called on ${got}, not a ${className} (call it as a method of one)`, e)
    }
    return coded('WEFT_INVALID_ARGUMENT', `${className}.${name}: ${e.message}`, e)
  }
  const wrap = (className, name, fn) =>
    ({
      [name](...args) {
        try {
          return Reflect.apply(fn, this, args)
        } catch (e) {
          throw recode(e, className, name, this)
        }
      },
    })[name]
  for (const [className, C] of Object.entries(exports)) {
    if (typeof C !== 'function' || typeof C.prototype !== 'object' || C.prototype === null) continue
    const proto = C.prototype
    for (const key of Reflect.ownKeys(proto)) {
      if (key === 'constructor') continue
      const d = Object.getOwnPropertyDescriptor(proto, key)
      const name = typeof key === 'symbol' ? `[${key.description}]` : key
      if (typeof d.value === 'function') d.value = wrap(className, name, d.value)
      if (typeof d.get === 'function') d.get = wrap(className, name, d.get)
      if (typeof d.set === 'function') d.set = wrap(className, name, d.set)
      Object.defineProperty(proto, key, d)
    }
  }
})
