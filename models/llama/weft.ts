// The weft addon, loaded once for the module (CommonJS, from the package root).
import { createRequire } from 'node:module'
import type * as Weft from '../../index.js'

const require = createRequire(import.meta.url)
export const weft: typeof Weft = require('../../index.js')
