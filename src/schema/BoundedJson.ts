// BoundedJson: JSON text read with a bound on how deep it nests (docs/decisions.md "Bounded JSON"). Every JSON body
// and WebSocket frame the server reads goes through it, so that no value nested deeper than JSON_MAX_DEPTH reaches a
// Schema decoder, a refusal message that shows the offending value, or a log: those walk a value recursively, and a
// value nested some thousands deep (a 1 MiB body holds 500,000 levels) ends them in a stack overflow. JSON.parse itself
// is not the risk: V8 parses nesting of any depth without recursion. Pure; no state, safe from any fiber.
import { Either } from "effect"

/**
 * The deepest nesting a JSON body or frame may have: an array or object counts one level, a scalar none. Every shape
 * the server reads fits in far fewer (a tools/call's arguments start at level 3, a channel-mode change at 5), and a
 * value this deep is still shallow for every recursive walk.
 */
export const JSON_MAX_DEPTH = 64

/** Why a text was not read as bounded JSON. */
export type JsonRefusal = "not-json" | "too-deep"

/**
 * Whether `value` nests at most `maxDepth` arrays and objects deep. Walks the value without recursion (its own stack
 * of containers), so any depth is answered; stops at the first container past the bound.
 */
export const nestsWithin = (value: unknown, maxDepth: number): boolean => {
  if (typeof value !== "object" || value === null) return true
  const containers: Array<object> = [value]
  const depths: Array<number> = [1]
  while (containers.length > 0) {
    const container = containers.pop()!
    const depth = depths.pop()!
    if (depth > maxDepth) return false
    const members: ReadonlyArray<unknown> = Array.isArray(container) ? container : Object.values(container)
    for (const member of members) {
      if (typeof member === "object" && member !== null) {
        containers.push(member)
        depths.push(depth + 1)
      }
    }
  }
  return true
}

/** The value of a JSON text that nests at most JSON_MAX_DEPTH deep; otherwise why not. */
export const parseBoundedJson = (text: string): Either.Either<unknown, JsonRefusal> => {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    return Either.left("not-json")
  }
  return nestsWithin(value, JSON_MAX_DEPTH) ? Either.right(value) : Either.left("too-deep")
}
