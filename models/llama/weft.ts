// The weft addon, by the package's own name: from the checkout (package self-reference) and
// from dist/ once shipped alike.
import * as weft from 'weft-ml'

export { weft }
