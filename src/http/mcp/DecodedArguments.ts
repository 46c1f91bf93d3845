/**
 * DecodedArguments: tools/call arguments decoded once per distinct value. Decoding a tool's arguments through its
 * Schema (ToolCatalog.decodeToolArguments: unknown keys, refinements, defaults) cost about 12 µs for recent_messages'
 * three fields, the largest part of a poll answered from memory (CPU profile of /mcp under load); an agent polling a
 * buffer sends the same arguments each time. Decoding is a pure function of the tool and the value, so a value decoded
 * before gives the same input again, and a failure is decoded every time (its message is made from the value).
 *
 * What is kept: for read-only tools only, successful decodes of arguments whose canonical JSON text (`argumentsKey`) is at most KEY_CHARS long —
 * only values that are exactly JSON (as parsed from a request body or a WebSocket frame); anything else is decoded and
 * not kept — at most ENTRIES of them, the oldest kept dropped first. The inputs are frozen: handlers share them.
 *
 * Concurrency rule: one plain Map per dispatcher, changed by synchronous calls only.
 */
import { Either } from "effect"
import { type ToolInput, type ToolName, toolsByName } from "../../schema/McpTools.js"
import { decodeToolArguments } from "../../schema/ToolCatalog.js"
import type { InvalidArguments } from "../../schema/ToolErrors.js"

/** Decoded arguments kept per dispatcher: a few hundred bytes each, so well under a megabyte in all. */
export const ENTRIES = 1024
/** The longest canonical JSON text of arguments that is kept: polls' arguments are tens of characters. */
export const KEY_CHARS = 512
/** Nesting followed when making the key; deeper values are decoded and not kept (no tool's arguments nest so deep). */
const KEY_DEPTH = 8

const encode = (value: unknown, depth: number): string | undefined => {
  switch (typeof value) {
    case "string":
      return value.length > KEY_CHARS ? undefined : JSON.stringify(value)
    case "boolean":
      return value ? "true" : "false"
    case "number":
      // String() tells every finite number apart but -0 from 0, which a Schema might.
      return Number.isFinite(value) && !Object.is(value, -0) ? String(value) : undefined
    case "object": {
      if (value === null) return "null"
      if (depth >= KEY_DEPTH) return undefined
      let text: string
      if (Array.isArray(value)) {
        text = "["
        for (let i = 0; i < value.length; i++) {
          const item = encode(value[i], depth + 1)
          if (item === undefined) return undefined
          text += i === 0 ? item : `,${item}`
          if (text.length > KEY_CHARS) return undefined
        }
        return `${text}]`
      }
      const proto: unknown = Object.getPrototypeOf(value)
      if (proto !== Object.prototype && proto !== null) return undefined
      text = "{"
      const record = value as Record<string, unknown>
      for (const key of Object.keys(record)) {
        const member = encode(record[key], depth + 1)
        if (member === undefined) return undefined
        text += `${text.length === 1 ? "" : ","}${JSON.stringify(key)}:${member}`
        if (text.length > KEY_CHARS) return undefined
      }
      return `${text}}`
    }
    default:
      // undefined, functions, symbols, bigints: not JSON, so two different values could share a text.
      return undefined
  }
}

/**
 * The arguments' JSON text, members in their own order, when the value is exactly JSON and the text at most KEY_CHARS
 * long; else undefined. Two values with the same key are the same JSON value (or both absent), so they decode alike.
 */
export const argumentsKey = (args: unknown): string | undefined => {
  // Absent arguments count as `{}` (decodeToolArguments); a key no JSON text can be.
  if (args === undefined) return "absent"
  const text = encode(args, 0)
  return text !== undefined && text.length <= KEY_CHARS ? text : undefined
}

export interface DecodedArguments {
  /** As ToolCatalog.decodeToolArguments, answered from what is kept when the same arguments were decoded before. */
  readonly decode: <N extends ToolName>(name: N, args: unknown) => Either.Either<ToolInput<N>, InvalidArguments>
  /** Entries kept, for tests. */
  readonly size: () => number
}

export const makeDecodedArguments = (): DecodedArguments => {
  const kept = new Map<string, unknown>()
  /**
   * Inputs decoded from arguments that cannot change: the frozen values of requests sent again (RequestTemplates, which
   * freezes what it keeps deeply). Found by the value itself, without making its key; gone with the value.
   */
  const byValue = new WeakMap<object, { readonly name: ToolName; readonly input: unknown }>()

  const decode = <N extends ToolName>(name: N, args: unknown): Either.Either<ToolInput<N>, InvalidArguments> => {
    // Read-only tools alone (what agents poll): a write's arguments (a message's text, a raw line that may identify to
    // NickServ) are not kept past the call, nor do one-off writes push the polls out.
    if (!toolsByName[name].hints.readOnlyHint) return decodeToolArguments(name, args)
    const frozen = typeof args === "object" && args !== null && Object.isFrozen(args) ? args : undefined
    if (frozen !== undefined) {
      const same = byValue.get(frozen)
      // Only decoded inputs of this tool are kept under its name.
      if (same !== undefined && same.name === name) return Either.right(same.input as ToolInput<N>)
    }
    const json = argumentsKey(args)
    if (json === undefined) return decodeToolArguments(name, args)
    const key = `${name}\u0000${json}`
    const hit = kept.get(key)
    if (hit !== undefined) {
      if (frozen !== undefined) byValue.set(frozen, { name, input: hit })
      return Either.right(hit as ToolInput<N>)
    }
    const decoded = decodeToolArguments(name, args)
    if (Either.isRight(decoded)) {
      if (kept.size >= ENTRIES) kept.delete(kept.keys().next().value!)
      const input = Object.freeze(decoded.right)
      kept.set(key, input)
      if (frozen !== undefined) byValue.set(frozen, { name, input })
    }
    return decoded
  }

  return { decode, size: () => kept.size }
}
