/**
 * Fuzzed RFC 1413 queries for Belay's ident server (docs/decisions/hosting.md "Each member their own face upstream"):
 * the bytes a client sends — a right query for the one registered connection, the same with its ports swapped or
 * off by one, the same asked from another address, queries spaced and padded every way, lines mutated byte by byte
 * (NUL, CR alone, high bytes, Unicode digits, signs, a third port), several lines at once, lines longer than the
 * limit, no line break at all, and random bytes — and the judge of each answer: at most one line, of the RFC's
 * form, echoing the query's ports; the member's ident only for the exact query asked by the server the connection
 * goes to, never for anything else; INVALID-PORT for a whole line that is not a query; nothing or INVALID-PORT for a
 * line past the limit; nothing for no line at all.
 */
import fc from "fast-check"
import { IDENT_MAX_LINE, parseIdentQuery } from "../../../src/net/IdentProtocol.js"

/** The one connection the server knows: from 127.0.0.2:LOCAL to the IRC server 127.0.0.1:REMOTE, member IDENT. */
export const REGISTERED = {
  localAddress: "127.0.0.2",
  localPort: 40001,
  remoteAddress: "127.0.0.1",
  remotePort: 6667,
  ident: "b42"
} as const

export interface IdentCase {
  readonly label: string
  readonly bytes: Buffer
  /** The address the query comes from: the IRC server's, or another. */
  readonly from: "127.0.0.1" | "127.0.0.3"
}

const space = fc.stringOf(fc.constantFrom(" ", "\t"), { maxLength: 3 })
const port = fc.oneof(
  fc.constantFrom(REGISTERED.localPort, REGISTERED.remotePort, 0, 1, 65535, 65536, 99999),
  fc.integer({ min: 0, max: 70000 })
)
const ending = fc.constantFrom("\r\n", "\n", "\r\n\r\n", "\n\n")

const right = fc.tuple(space, space, space, space, ending).map(([a, b, c, d, end]) =>
  ({ label: "right", text: `${a}${REGISTERED.localPort}${b},${c}${REGISTERED.remotePort}${d}${end}` }))
const ports = fc.tuple(port, port, space, space, ending).map(([l, r, a, b, end]) =>
  ({ label: "ports", text: `${l}${a},${b}${r}${end}` }))
const swapped = fc.constant({ label: "swapped", text: `${REGISTERED.remotePort} , ${REGISTERED.localPort}\r\n` })

/** One of the right query's characters replaced, or something inserted. */
const mutated = fc.tuple(
  fc.nat(20),
  fc.constantFrom("\x00", "\r", "\xff", "-", "+", "x", "١", "９", ",", ":", " ", "0", "\u00a0", "\t", ", 5")
).map(([at, insert]) => {
  const base = `${REGISTERED.localPort} , ${REGISTERED.remotePort}`
  const i = at % (base.length + 1)
  return { label: "mutated", text: `${base.slice(0, i)}${insert}${base.slice(i + 1)}\r\n` }
})
const several = fc.array(fc.oneof(right, ports), { minLength: 2, maxLength: 4 })
  .map((lines) => ({ label: "several", text: lines.map((l) => l.text).join("") }))
const long = fc.tuple(fc.integer({ min: IDENT_MAX_LINE - 2, max: 400 }), fc.boolean()).map(([n, terminated]) => ({
  label: "long",
  text: `${" ".repeat(n)}${REGISTERED.localPort},${REGISTERED.remotePort}${terminated ? "\r\n" : ""}`
}))
const unterminated = fc.tuple(port, port).map(([l, r]) => ({ label: "unterminated", text: `${l} , ${r}` }))

const asBytes = (c: { readonly label: string; readonly text: string }) => ({
  label: c.label,
  bytes: Buffer.from(c.text, "latin1")
})
const random = fc.uint8Array({ maxLength: 300 }).map((a) => ({ label: "random", bytes: Buffer.from(a) }))

export const identCase: fc.Arbitrary<IdentCase> = fc.tuple(
  fc.oneof(
    { weight: 3, arbitrary: right.map(asBytes) },
    { weight: 3, arbitrary: ports.map(asBytes) },
    { weight: 1, arbitrary: swapped.map(asBytes) },
    { weight: 4, arbitrary: mutated.map(asBytes) },
    { weight: 2, arbitrary: several.map(asBytes) },
    { weight: 2, arbitrary: long.map(asBytes) },
    { weight: 1, arbitrary: unterminated.map(asBytes) },
    { weight: 3, arbitrary: random }
  ),
  fc.constantFrom<IdentCase["from"]>("127.0.0.1", "127.0.0.1", "127.0.0.1", "127.0.0.3")
).map(([c, from]) => ({ ...c, from }))

const ANSWER = /^(\d+) , (\d+) : (?:USERID : UNIX : (\S+)|ERROR : (NO-USER|INVALID-PORT))\r\n$/

/** Why `answer` is wrong for `c`, or undefined when it is right. */
export const judgeIdent = (c: IdentCase, answer: string): string | undefined => {
  const text = c.bytes.toString("latin1")
  const end = text.indexOf("\n")
  const line = end < 0 ? undefined : text.slice(0, end).replace(/\r$/, "")
  if (answer === "") {
    if (line === undefined || line.length > IDENT_MAX_LINE) return undefined
    return "no answer to a whole line"
  }
  const m = ANSWER.exec(answer)
  if (m === null) return `not one answer line: ${JSON.stringify(answer.slice(0, 80))}`
  if (line === undefined) return "an answer without a whole line"
  const query = parseIdentQuery(line)
  if (query === "invalid") {
    return m[4] === "INVALID-PORT" && m[1] === "0" && m[2] === "0" ? undefined : `not INVALID-PORT for ${JSON.stringify(line)}`
  }
  if (Number(m[1]) !== query.local || Number(m[2]) !== query.remote) return "the ports are not the query's"
  const exact = c.from === REGISTERED.remoteAddress && query.local === REGISTERED.localPort &&
    query.remote === REGISTERED.remotePort
  if (exact) return m[3] === REGISTERED.ident ? undefined : `not the member's ident: ${JSON.stringify(answer)}`
  return m[4] === "NO-USER" ? undefined : `not NO-USER for a connection nobody holds: ${JSON.stringify(answer)}`
}
