/**
 * Hostile draft/multiline batches and tag frames (docs/contract.md "The IRC client listener", multiline; "The member's
 * browser surface", the tag frames).
 *
 * Batches, over real TCP to the whole application with an upstream that has draft/multiline: generated sequences of
 * BATCH opens and closes (good and hostile references, other batch types, nested by tag, to other targets), lines
 * tagged with open, closed and unknown references (PRIVMSG, NOTICE, other commands, concat, blank, long, hostile text),
 * unterminated batches, batches past max-lines and max-bytes — each sequence fenced by a PING. Each answer must be a
 * `FAIL BATCH` of the extension (or of the send queue) or a 417 for a line past the listener's bound; afterwards the
 * connection answers, and every line the upstream received is well-formed: batches opened and closed in pairs, each
 * holding PRIVMSG or NOTICE lines of its own reference and target only, within the upstream's limits.
 *
 * Frames, pure: hostile `react`, `reply`, `typing` and `redact` frames through `decodeClientFrame`: each decodes into a
 * frame whose fields are bounded and line-safe, or is refused with an `error` frame that never shows a field's value.
 *
 * Reproducible: fast-check with a fixed seed, printed at the start; FUZZ_SEED overrides it, FUZZ_RUNS scales the count.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either } from "effect"
import fc from "fast-check"
import { MAX_CLIENT_LINE_BYTES } from "../../src/listener/LineReader.js"
import { decodeClientFrame, FRAME_MSGID_MAX, FRAME_REACTION_MAX, FRAME_REPLY_TEXT_MAX } from "../../src/schema/SocketFrame.js"
import { CAPS, PASSWORD, startListenerApp, welcomedClient } from "../support/IrcListenerApp.js"
import { parseLine } from "../support/FakeIrcServer.js"
import { hostileString } from "./support/HostileValues.js"

const SEED = process.env.FUZZ_SEED !== undefined && process.env.FUZZ_SEED !== "" ? Number(process.env.FUZZ_SEED) : 515151
const SCALE = process.env.FUZZ_RUNS !== undefined && process.env.FUZZ_RUNS !== "" ? Number(process.env.FUZZ_RUNS) : 10_000
const SEQUENCES = Math.ceil(SCALE / 50)
const FRAMES = SCALE
const UPSTREAM_MAX_LINES = 10

/** One parameter, never a line break (that would be two lines; NUL stays: the listener must drop the line). */
const param = (s: string) => s.replace(/[\r\n]/g, "")

const ref = fc.oneof({ weight: 5, arbitrary: fc.constantFrom("a", "b", "zz") }, { weight: 1, arbitrary: hostileString.map(param) })
const target = fc.oneof({ weight: 6, arbitrary: fc.constant("#belay") }, { weight: 1, arbitrary: fc.constantFrom("#other", "#BELAY", "bob") }, {
  weight: 1,
  arbitrary: hostileString.map(param)
})
const text = fc.oneof(
  { weight: 5, arbitrary: fc.stringMatching(/^[a-z ]{0,40}$/) },
  { weight: 1, arbitrary: fc.integer({ min: 300, max: 700 }).map((n) => "y".repeat(n)) },
  { weight: 2, arbitrary: hostileString.map(param) }
)
const command = fc.oneof({ weight: 8, arbitrary: fc.constant("PRIVMSG") }, { weight: 1, arbitrary: fc.constantFrom("NOTICE", "TAGMSG", "JOIN") })

/** A stray line: a batch start of another type, one nested by tag, a close, a line of any reference. */
const stray: fc.Arbitrary<string> = fc.oneof(
  fc.tuple(ref, fc.constantFrom("chathistory", "netsplit", "")).map(([r, type]) => `BATCH +${r} ${type} #belay`),
  fc.tuple(ref, ref).map(([outer, inner]) => `@batch=${outer} BATCH +${inner} draft/multiline #belay`),
  ref.map((r) => `BATCH -${r}`),
  fc.tuple(ref, command, target, text).map(([r, c, t, x]) => `@batch=${r} ${c} ${t} :${x}`)
)

/** One batch: opened (hostile reference or target at times), lines mostly good, closed, left open, or closed wrong. */
const batch: fc.Arbitrary<ReadonlyArray<string>> = fc
  .tuple(
    ref,
    target,
    fc.oneof({ weight: 4, arbitrary: fc.integer({ min: 1, max: 8 }) }, { weight: 1, arbitrary: fc.integer({ min: 30, max: 45 }) }),
    fc.array(fc.tuple(fc.integer({ min: 0, max: 19 }), text, stray, fc.boolean()), { minLength: 45, maxLength: 45 }),
    fc.integer({ min: 0, max: 9 })
  )
  .map(([r, t, n, bodies, close]) => [
    `BATCH +${r} draft/multiline ${t}`,
    ...bodies.slice(0, n).map(([roll, x, odd, concat]) =>
      roll === 0 ? odd : `@batch=${r}${concat && roll === 1 ? ";draft/multiline-concat" : ""} PRIVMSG ${roll === 2 ? "#other" : t} :${x}`
    ),
    ...(close <= 7 ? [`BATCH -${r}`] : close === 8 ? [] : ["BATCH -nothere"])
  ])

const sequence = fc.array(fc.oneof({ weight: 4, arbitrary: batch }, { weight: 1, arbitrary: stray.map((l) => [l]) }), {
  minLength: 1,
  maxLength: 4
}).map((parts) => parts.flat())

const FAIL_CODES = new Set([
  "MULTILINE_INVALID",
  "MULTILINE_MAX_LINES",
  "MULTILINE_MAX_BYTES",
  "MULTILINE_INVALID_TARGET",
  "SEND_QUEUE_FULL",
  "INVALID_ARGUMENTS"
])

/** Why the upstream's lines are not well-formed batches, if they are not. */
const upstreamProblem = (lines: ReadonlyArray<string>): string | undefined => {
  let open: { ref: string; target: string; count: number } | undefined
  for (const raw of lines) {
    const l = parseLine(raw)
    if (l.command === "BATCH") {
      const r = l.params[0] ?? ""
      if (r.startsWith("+")) {
        if (open !== undefined) return `nested upstream batch: ${raw}`
        if (l.params[1] !== "draft/multiline") return `a batch of another type: ${raw}`
        open = { ref: r.slice(1), target: l.params[2] ?? "", count: 0 }
      } else if (open === undefined || r !== `-${open.ref}`) return `a close without its open: ${raw}`
      else if (open.count === 0 || open.count > UPSTREAM_MAX_LINES) return `a batch of ${open.count} lines`
      else open = undefined
    } else if (l.tags.batch !== undefined) {
      if (open === undefined || l.tags.batch !== open.ref) return `a line of no open batch: ${raw}`
      if ((l.command !== "PRIVMSG" && l.command !== "NOTICE") || l.params[0] !== open.target) return `a stray line in a batch: ${raw}`
      open.count++
    }
  }
  return undefined
}

describe("hostile multiline batches and tag frames", () => {
  it.scopedLive(`draft/multiline: ${SEQUENCES} hostile sequences (seed ${SEED})`, () =>
    Effect.gen(function*() {
      console.log(`multiline fuzz: seed ${SEED}, ${SEQUENCES} sequences`)
      const app = yield* startListenerApp({
        upstreamCaps: ["message-tags", "batch", `draft/multiline=max-bytes=1000,max-lines=${UPSTREAM_MAX_LINES}`]
      })
      const client = yield* welcomedClient(app.port, "alice/fake@fuzz", PASSWORD, `${CAPS} draft/multiline`)
      const failures: Array<string> = []
      const codes: Record<string, number> = {}
      let i = 0
      for (const lines of fc.sample(sequence, { seed: SEED, numRuns: SEQUENCES })) {
        const fence = `fuzz${++i}`
        yield* client.send(...lines, `PING ${fence}`)
        const got = yield* client.until((l) => l.command === "PONG" && l.params.at(-1) === fence, "15 seconds")
        for (const a of got.slice(0, -1)) {
          // The member's own messages come back stored (echo-message): those of earlier batches, sent as lines.
          if (a.command === "417" || ((a.command === "PRIVMSG" || a.command === "NOTICE") && a.source?.startsWith("alice!"))) continue
          // A batch sent whole comes back as its draft/multiline batch (MultilineEcho.ts).
          if (a.command === "BATCH" && (a.params[1] === "draft/multiline" || a.params[0]?.startsWith("-") === true)) continue
          const code = a.params[1] ?? ""
          if (a.command === "FAIL" && a.params[0] === "BATCH" && FAIL_CODES.has(code)) codes[code] = (codes[code] ?? 0) + 1
          else failures.push(`${JSON.stringify(lines.map((l) => l.slice(0, 50)))}: answered ${a.raw.slice(0, 100)}`)
        }
        const overlong = lines.some((l) => Buffer.byteLength(l) + 2 > MAX_CLIENT_LINE_BYTES)
        if (overlong && !got.some((a) => a.command === "417")) failures.push(`an overlong line was not answered 417`)
      }
      console.log(`multiline fuzz: FAIL codes ${JSON.stringify(codes)}`)
      expect(failures.slice(0, 10), `seed ${SEED}: ${failures.length} wrong answers`).toEqual([])
      for (const code of ["MULTILINE_INVALID", "MULTILINE_MAX_LINES", "MULTILINE_INVALID_TARGET"]) {
        expect(codes[code] ?? 0, `${code} never reached: ${JSON.stringify(codes)}`).toBeGreaterThan(0)
      }
      // Alive, and what reached the upstream so far is well-formed (the rest is still paced by flood control).
      yield* client.send("PING alive")
      yield* client.next("PONG")
      expect(upstreamProblem(yield* app.upstream.lines)).toBeUndefined()
    }), { timeout: 600_000 })

  it(`tag frames: ${FRAMES} hostile frames (seed ${SEED})`, () => {
    const value = fc.oneof(hostileString, fc.integer(), fc.constant(null), fc.constant(undefined), fc.stringMatching(/^[a-z#]{1,10}$/))
    const frame = fc.record({
      type: fc.constantFrom("react", "reply", "typing", "redact"),
      id: fc.oneof(fc.constant(undefined), fc.string({ maxLength: 200 }), fc.integer()),
      networkId: fc.oneof(fc.integer({ min: 1, max: 5 }), value),
      target: value,
      msgid: value,
      reaction: value,
      text: fc.oneof(value, fc.integer({ min: 4000, max: 5000 }).map((n) => "t".repeat(n))),
      state: fc.oneof(fc.constantFrom("active", "paused", "done"), value)
    }, { requiredKeys: ["type"] })
    const lineSafe = (s: unknown) => typeof s === "string" && !/[\r\n\0]/.test(s)
    let decoded = 0
    for (const f of fc.sample(frame, { seed: SEED, numRuns: FRAMES })) {
      const out = decodeClientFrame(JSON.stringify(f))
      if (Either.isRight(out)) {
        decoded++
        const g = out.right as Record<string, unknown>
        expect(lineSafe(g.target) && !String(g.target).includes(" "), JSON.stringify(f)).toBe(true)
        if (g.msgid !== undefined) expect(lineSafe(g.msgid) && String(g.msgid).length <= FRAME_MSGID_MAX).toBe(true)
        if (g.reaction !== undefined) expect(lineSafe(g.reaction) && String(g.reaction).length <= FRAME_REACTION_MAX).toBe(true)
        if (g.text !== undefined) expect(lineSafe(g.text) && String(g.text).length <= FRAME_REPLY_TEXT_MAX).toBe(true)
      } else {
        const e = out.left as { type: string; message: string }
        expect(e.type).toBe("error")
        // The fixed text, at most naming a field of the frame: no value of it can be in there.
        const [generic, named] = e.message.split("}: ")
        expect(generic!.startsWith("expected {type: \"call\"") && /networkId, target, …}?$/.test(generic!), e.message).toBe(true)
        if (named !== undefined) {
          expect(named, e.message).toMatch(/^the (react|reply|typing|redact) frame's (id|networkId|target|msgid|reaction|text|state) is missing or invalid$/)
        }
      }
    }
    expect(decoded).toBeGreaterThan(0)
  })
})
