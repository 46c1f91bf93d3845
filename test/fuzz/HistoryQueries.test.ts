/**
 * Hostile query strings against the web client's history reads (src/http/buffers/MentionRoutes.ts): first the pure
 * reader of whole-number parameters against a model (thousands of strings: signs, decimals, exponents, huge numbers,
 * Unicode digits), then generated `limit`, `before`, `networkId`, `target` and `around` values against the running
 * routes `GET /api/mentions` and `GET /api/buffers/context`: every answer 200 or 400/404 with a JSON error, never a
 * 5xx; a 200 only for parameters the model accepts, holding at most `limit` messages (for mentions, all below
 * `before`, and a `nextBefore` cursor below it too); nothing stored changes.
 *
 * Reproducible: fast-check with a fixed seed, printed at the start; FUZZ_SEED overrides it, FUZZ_RUNS scales the count.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import fc from "fast-check"
import { CONTEXT_MAX_LIMIT, intParam, MENTIONS_MAX_LIMIT } from "../../src/http/buffers/MentionRoutes.js"
import { MessageWriter } from "../../src/services/history/MessageWriter.js"
import { Networks } from "../../src/services/networks/Networks.js"
import { bearer, passwordToken } from "../http/auth/MemberHarness.js"
import { fetchP, startOAuthApp } from "../http/oauth/OAuthHarness.js"

const SEED = process.env.FUZZ_SEED !== undefined && process.env.FUZZ_SEED !== "" ? Number(process.env.FUZZ_SEED) : 515151
const RUNS = process.env.FUZZ_RUNS !== undefined && process.env.FUZZ_RUNS !== "" ? Number(process.env.FUZZ_RUNS) : 10_000
/** Requests to the running routes: each reads the database, so a twentieth of RUNS. */
const HTTP_RUNS = Math.ceil(RUNS / 20)

/** What a query-string number may look like, honest or not. */
const numberish = fc.oneof(
  fc.integer({ min: -1000, max: 1000 }).map(String),
  fc.nat().map(String),
  fc.constantFrom("", "0", "00", "007", "1e2", "1.0", "1.5", "+5", "-0", " 5", "5 ", "0x10", "Infinity", "NaN", "٣", "５",
    "9007199254740993", "99999999999999999999", "1".repeat(400), "%00", "null", "[]"),
  fc.string({ maxLength: 30 }),
  fc.fullUnicodeString({ maxLength: 10 })
)

/** The model: only plain ASCII digits (at most 16), in range. */
const model = (value: string, min: number, max: number): number | null => {
  if (!/^[0-9]+$/.test(value) || value.length > 16) return null
  const n = Number(value)
  return n >= min && n <= max ? n : null
}

const target = fc.oneof(
  fc.constantFrom("#fuzz", "#FUZZ", "bob", ":server:1", "#a\r\nJOIN #b", "#\u0000", "", "#" + "x".repeat(600), "%", "#日本"),
  fc.string({ maxLength: 40 }),
  fc.fullUnicodeString({ maxLength: 20 })
)

describe("the history reads under hostile query strings", () => {
  it("intParam reads exactly what the model reads", () => {
    console.info(`belay fuzz: history queries, seed ${SEED}`)
    fc.assert(
      fc.property(numberish, fc.integer({ min: 0, max: 200 }), fc.integer({ min: 0, max: 300 }), (value, min, span) => {
        expect(intParam(value, 7, min, min + span)).toBe(model(value, min, min + span))
      }),
      { seed: SEED, numRuns: RUNS }
    )
    expect(intParam(null, 7, 1, 10)).toBe(7)
  })

  it.scopedLive("the routes answer 200 or a JSON 4xx, never more than limit, and change nothing", () =>
    Effect.gen(function*() {
      const app = yield* startOAuthApp()
      const networkId = yield* app.service(Networks).add("alice", {
        name: "fuzznet",
        host: "irc.test",
        port: 6667,
        tls: false,
        tlsInsecure: false,
        nick: "alice",
        username: Option.none(),
        realname: Option.none(),
        serverPassword: Option.none(),
        sasl: Option.none(),
        join: []
      }).pipe(Effect.orDie)
      const writer = app.service(MessageWriter)
      for (let i = 0; i < 30; i++) {
        yield* writer.append({
          networkId,
          target: "#fuzz",
          targetFolded: "#fuzz",
          bufferKind: "channel",
          time: new Date(),
          kind: "privmsg",
          nick: "bob",
          text: i % 3 === 0 ? `alice: line ${i}` : `line ${i}`,
          self: false
        })
      }
      yield* writer.flush
      const count = () => app.sql<{ n: number }>`SELECT count(*)::int AS n FROM messages`.pipe(Effect.orDie, Effect.map((r) => r[0]!.n))
      const before = yield* count()
      const token = yield* passwordToken(app.url)
      const cases = fc.sample(
        fc.record({
          mentions: fc.boolean(),
          limit: fc.option(numberish, { nil: undefined }),
          before: fc.option(fc.oneof(numberish, fc.integer({ min: 1, max: 40 }).map(String)), { nil: undefined }),
          networkId: fc.option(fc.oneof(numberish, fc.constant(String(networkId))), { nil: undefined }),
          around: fc.option(numberish, { nil: undefined }),
          target: fc.option(target, { nil: undefined })
        }),
        { seed: SEED, numRuns: HTTP_RUNS }
      )
      for (const c of cases) {
        const params = new URLSearchParams()
        for (const key of ["limit", "before", "networkId", "around", "target"] as const) if (c[key] !== undefined) params.set(key, c[key])
        const path = c.mentions ? "/api/mentions" : "/api/buffers/context"
        const res = yield* fetchP(`${app.url}${path}?${params}`, { headers: bearer(token) })
        const label = `${path}?${params}`.slice(0, 200)
        expect(res.status, label).toBeLessThan(500)
        const body = (yield* Effect.promise(() => res.json())) as {
          messages?: ReadonlyArray<{ readonly id: number }>
          nextBefore?: number | null
          error?: string
        }
        if (res.status === 200) {
          const max = c.mentions ? MENTIONS_MAX_LIMIT : 2 * CONTEXT_MAX_LIMIT + 1
          const limit = c.limit === undefined ? null : model(c.limit, 1, c.mentions ? MENTIONS_MAX_LIMIT : CONTEXT_MAX_LIMIT)
          expect(c.limit === undefined || limit !== null, label).toBe(true)
          expect(body.messages!.length, label).toBeLessThanOrEqual(limit === null ? max : c.mentions ? limit : 2 * limit + 1)
          if (c.mentions && c.before !== undefined) {
            const below = model(c.before, 1, Number.MAX_SAFE_INTEGER)
            expect(below, label).not.toBeNull()
            for (const m of body.messages!) expect(m.id, label).toBeLessThan(below!)
            if (body.nextBefore != null) expect(body.nextBefore, label).toBeLessThan(below!)
          }
        } else {
          expect([400, 404], label).toContain(res.status)
          expect(typeof body.error, label).toBe("string")
        }
      }
      expect(yield* count()).toBe(before)
    }), 300_000)
})
