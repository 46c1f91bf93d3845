/**
 * JoinLines: packs channels and their keys into the fewest JOIN lines (the rejoin after every reconnect), like soju's
 * `xirc.GenerateJoin`. Pure functions; safe to call from any fiber.
 *
 * RFC 2812 §3.2.1: `JOIN <channel>{,<channel>} [<key>{,<key>}]` — keys pair with channels by position, so channels
 * with a key come first and the ones without follow without placeholders. Each line, CR-LF included, stays within
 * 512 bytes (RFC 1459 §2.3.1).
 */
import { MAX_LINE_BYTES, utf8ByteLength } from "./IrcLine.js"
import { isMiddleParam } from "./Safety.js"

export interface JoinTarget {
  readonly name: string
  readonly key: string | null
}

// A name or key with a comma would split into two list items; one that is not a middle param cannot be sent.
const sendable = (s: string) => isMiddleParam(s) && !s.includes(",")

/**
 * The JOIN lines (without CR-LF) for `targets`, keyed channels first, each in the given order. Unsendable names are
 * skipped; an unsendable key is dropped (the server then answers 475 for that channel, which lands in the history).
 */
export const joinLines = (targets: ReadonlyArray<JoinTarget>, maxLineBytes: number = MAX_LINE_BYTES): ReadonlyArray<string> => {
  const valid = targets
    .filter((t) => sendable(t.name))
    .map((t) => ({ name: t.name, key: t.key !== null && sendable(t.key) ? t.key : null }))
  const ordered = [...valid.filter((t) => t.key !== null), ...valid.filter((t) => t.key === null)]

  const lines: Array<string> = []
  let names: Array<string> = []
  let keys: Array<string> = []
  const render = (n: ReadonlyArray<string>, k: ReadonlyArray<string>) =>
    `JOIN ${n.join(",")}${k.length > 0 ? ` ${k.join(",")}` : ""}`
  const flush = () => {
    if (names.length > 0) lines.push(render(names, keys))
    names = []
    keys = []
  }
  for (const target of ordered) {
    const nextNames = [...names, target.name]
    const nextKeys = target.key !== null ? [...keys, target.key] : keys
    if (names.length > 0 && utf8ByteLength(render(nextNames, nextKeys)) + 2 > maxLineBytes) {
      flush()
      names = [target.name]
      keys = target.key !== null ? [target.key] : []
    } else {
      names = nextNames
      keys = nextKeys
    }
  }
  flush()
  return lines
}
