// BoundedJson: JSON text read with a bound on how deep it nests (docs/decisions/http-and-mcp.md "Bounded JSON"). Every JSON body
// and WebSocket frame the server reads goes through it, so that no value nested deeper than JSON_MAX_DEPTH reaches a
// Schema decoder, a refusal message that shows the offending value, or a log: those walk a value recursively, and a
// value nested some thousands deep (a 1 MiB body holds 500,000 levels) ends them in a stack overflow. The text is
// measured before it is parsed: V8's JSON.parse does read any depth, but a 1 MiB body of nesting costs it about
// 300 ms, where the measure stops at the 65th bracket. Pure; no state, safe from any fiber.
import { Either } from "effect"

/**
 * The deepest nesting a JSON body or frame may have: an array or object counts one level, a scalar none. Every shape
 * the server reads fits in far fewer (a tools/call's arguments start at level 3, a channel-mode change at 5), and a
 * value this deep is still shallow for every recursive walk.
 */
export const JSON_MAX_DEPTH = 64

/** Why a text was not read as bounded JSON. */
export type JsonRefusal = "not-json" | "too-deep"

const QUOTE = 0x22
const BACKSLASH = 0x5c
const OPEN_ARRAY = 0x5b
const CLOSE_ARRAY = 0x5d
const OPEN_OBJECT = 0x7b
const CLOSE_OBJECT = 0x7d

/**
 * Whether the JSON text opens at most `maxDepth` arrays and objects inside one another, brackets within strings not
 * counted. One pass, no recursion; a string is skipped with indexOf to its closing quote (one not escaped: preceded by
 * an even number of backslashes), so long text costs little. Exact for JSON; of a text that is not JSON it says
 * nothing useful, and JSON.parse refuses that text anyway.
 */
export const textNestsWithin = (text: string, maxDepth: number): boolean => {
  let depth = 0
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c === QUOTE) {
      for (;;) {
        const end = text.indexOf("\"", i + 1)
        if (end < 0) return true
        let before = end - 1
        while (text.charCodeAt(before) === BACKSLASH) before--
        i = end
        if (((end - 1 - before) & 1) === 0) break
      }
    } else if (c === OPEN_ARRAY || c === OPEN_OBJECT) {
      if (++depth > maxDepth) return false
    } else if (c === CLOSE_ARRAY || c === CLOSE_OBJECT) {
      depth--
    }
  }
  return true
}

/**
 * Whether the text holds at most `max` opening brackets, `[` and `{` together, strings included: a text that does
 * cannot nest deeper than `max`. Counted with indexOf, which V8 runs natively over the text, and stopped past `max`:
 * a request's body holds a few brackets, and this is a fraction of the character-by-character walk of
 * `textNestsWithin`, which only a text with more brackets than that still needs.
 */
const fewBrackets = (text: string, max: number): boolean => {
  let count = 0
  for (let i = text.indexOf("{"); i >= 0; i = text.indexOf("{", i + 1)) if (++count > max) return false
  for (let i = text.indexOf("["); i >= 0; i = text.indexOf("[", i + 1)) if (++count > max) return false
  return true
}

/** The value of a JSON text that nests at most JSON_MAX_DEPTH deep; otherwise why not (depth is measured first). */
export const parseBoundedJson = (text: string): Either.Either<unknown, JsonRefusal> => {
  if (!fewBrackets(text, JSON_MAX_DEPTH) && !textNestsWithin(text, JSON_MAX_DEPTH)) return Either.left("too-deep")
  try {
    return Either.right(JSON.parse(text))
  } catch {
    return Either.left("not-json")
  }
}
