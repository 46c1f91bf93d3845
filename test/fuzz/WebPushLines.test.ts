/**
 * Hostile `WEBPUSH` lines against the IRC client listener (src/listener/WebPush.ts), over real TCP to the whole
 * application: generated subcommands (the two, in any case, and others), endpoints (https URLs that pass, and
 * hostile, huge, spaced, schemeless, private ones), `<keys>` (a real P-256 point and secret, padded or not, and hostile
 * tag strings), missing and excess parameters — one line at a time, each fenced by a PING. Each line is held to:
 * exactly one answer, the echo or `FAIL WEBPUSH <code>` (417 for a line past the listener's bound; nothing for a
 * line with NUL, which is no IRC line); an echo of REGISTER only for an https endpoint with good keys, stored; and
 * afterwards the connection alive, every stored endpoint an https URL within bounds, never more than the account's
 * limit (set low so INTERNAL_ERROR is reached), and nothing stored for an endpoint no echo named.
 *
 * Reproducible: the lines come from fast-check with a fixed seed, printed at the start; FUZZ_SEED overrides it and
 * FUZZ_RUNS (divided by 20) the number of lines. A failure prints the seed, the case's label and its first bytes.
 */
import * as Crypto from "node:crypto"
import { SqlClient } from "@effect/sql"
import { expect, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import fc from "fast-check"
import { MAX_CLIENT_LINE_BYTES } from "../../src/listener/LineReader.js"
import { Accounts } from "../../src/services/identity/Accounts.js"
import { AccountLimits } from "../../src/services/identity/AccountLimits.js"
import { CAPS, PASSWORD, startListenerApp, welcomedClient } from "../support/IrcListenerApp.js"
import type { ClientLine } from "../support/IrcTestClient.js"
import { hostileString } from "./support/HostileValues.js"

const SEED = process.env.FUZZ_SEED !== undefined && process.env.FUZZ_SEED !== "" ? Number(process.env.FUZZ_SEED) : 424242
const RUNS = Math.ceil((process.env.FUZZ_RUNS !== undefined && process.env.FUZZ_RUNS !== "" ? Number(process.env.FUZZ_RUNS) : 10_000) / 20)
/** The account's push-subscriptions limit during the run: low, so that the refusal at the limit is reached. */
const LIMIT = 5

const ecdh = Crypto.createECDH("prime256v1")
ecdh.generateKeys()
const P256DH = ecdh.getPublicKey().toString("base64url")
const AUTH = Crypto.randomBytes(16).toString("base64url")

interface Case {
  readonly label: string
  readonly line: string
}

/** One parameter, never a line break (that would be two lines; NUL stays: the listener must drop the line). */
const param = (s: string) => s.replace(/[\r\n]/g, "")

const goodEndpoint = fc.stringMatching(/^[a-z0-9]{1,12}$/).map((path) => `https://push.example/${path}`)
const endpoint: fc.Arbitrary<string> = fc.oneof(
  { weight: 4, arbitrary: goodEndpoint },
  { weight: 1, arbitrary: fc.constantFrom("http://push.example/x", "ftp://push.example/x", "push.example", "https://u:p@push.example/x", "https://push.example/#f", "https://push.example/a b", "https://push.example/\tx", ":https://push.example/x", `https://push.example/${"a".repeat(2100)}`) },
  { weight: 3, arbitrary: hostileString.map(param) }
)
const keys: fc.Arbitrary<string> = fc.oneof(
  { weight: 4, arbitrary: fc.constant(`p256dh=${P256DH};auth=${AUTH}`) },
  { weight: 1, arbitrary: fc.constant(`auth=${AUTH}==;p256dh=${P256DH}=`) },
  { weight: 1, arbitrary: fc.constantFrom(`p256dh=${P256DH}`, `auth=${AUTH}`, "p256dh=AAAA;auth=AAAA", `p256dh=${P256DH};auth=${AUTH}AA`, ";;;", "=") },
  { weight: 3, arbitrary: hostileString.map(param) }
)
const subcommand = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom("REGISTER", "register", "Register", "UNREGISTER", "unregister") },
  { weight: 1, arbitrary: hostileString.map(param) }
)
const webPushCase: fc.Arbitrary<Case> = fc
  .tuple(subcommand, fc.array(fc.oneof(endpoint, keys, hostileString.map(param)), { maxLength: 1 }), endpoint, keys, fc.nat(9))
  .map(([sub, extra, ep, ks, shape]) => {
    // Shapes: the command alone, a subcommand alone, with an endpoint, with both, with one more, keys as trailing.
    const parts = shape === 0 ? [] : shape === 1 ? [sub] : shape === 2 ? [sub, ep] : shape <= 6 ? [sub, ep, ks] : shape === 7 ? [sub, ep, ks, ...extra] : [sub, ep, `:${ks}`]
    return { label: `${sub.slice(0, 12)}/${shape}`, line: ["WEBPUSH", ...parts].join(" ") }
  })

/** Why the answer to `c` is wrong, if it is. */
const judge = (c: Case, answers: ReadonlyArray<ClientLine>): string | undefined => {
  if (Buffer.byteLength(c.line, "utf8") + 2 > MAX_CLIENT_LINE_BYTES) {
    return answers.length === 1 && answers[0]!.command === "417" ? undefined : `an overlong line answered ${answers.map((a) => a.raw.slice(0, 80)).join(" | ")}`
  }
  if (c.line.includes("\u0000")) return answers.length === 0 ? undefined : `a line with NUL was answered: ${answers[0]!.raw}`
  if (answers.length !== 1) return `${answers.length} answers: ${answers.map((a) => a.raw.slice(0, 80)).join(" | ")}`
  const a = answers[0]!
  if (a.command === "FAIL") {
    return a.params[0] === "WEBPUSH" && (a.params[1] === "INVALID_PARAMS" || a.params[1] === "INTERNAL_ERROR")
      ? undefined
      : `not a FAIL of the extension: ${a.raw}`
  }
  if (a.command !== "WEBPUSH") return `unexpected answer ${a.raw.slice(0, 80)}`
  if (a.params[0] === "REGISTER" && !/^https:\/\/push\.example\/[a-z0-9]{1,12}$/.test(a.params[1] ?? "")) {
    return `registered ${a.params[1]}`
  }
  return undefined
}

it.scopedLive(`WEBPUSH: ${RUNS} hostile lines (seed ${SEED})`, () =>
  Effect.gen(function*() {
    console.log(`webpush fuzz: seed ${SEED}, ${RUNS} lines`)
    const app = yield* startListenerApp()
    const sql = app.get(SqlClient.SqlClient)
    const account = Option.getOrThrow(yield* app.get(Accounts).findByName("alice"))
    yield* app.get(AccountLimits).set(account.id, { "push-subscriptions": LIMIT }).pipe(Effect.orDie)
    const client = yield* welcomedClient(app.port, "alice/fake@fuzz", PASSWORD, `${CAPS} soju.im/webpush`)
    const cases = fc.sample(webPushCase, { seed: SEED, numRuns: RUNS })
    const failures: Array<string> = []
    const kinds = { registered: 0, unregistered: 0, INVALID_PARAMS: 0, INTERNAL_ERROR: 0 }
    const echoed = new Set<string>()
    let i = 0
    for (const c of cases) {
      const fence = `fuzz${++i}`
      yield* client.send(c.line, `PING ${fence}`)
      const got = yield* client.until((l) => l.command === "PONG" && l.params.at(-1) === fence, "15 seconds")
      const answers = got.slice(0, -1)
      for (const a of answers) {
        const code = a.params[1]
        if (a.command === "WEBPUSH" && a.params[0] === "REGISTER") {
          kinds.registered++
          echoed.add(a.params[1]!)
        } else if (a.command === "WEBPUSH") kinds.unregistered++
        else if (a.command === "FAIL" && (code === "INVALID_PARAMS" || code === "INTERNAL_ERROR")) kinds[code]++
      }
      const wrong = judge(c, answers)
      if (wrong !== undefined) failures.push(`${c.label} ${JSON.stringify(c.line.slice(0, 60))}: ${wrong}`)
    }
    console.log(`webpush fuzz: answers ${JSON.stringify(kinds)}`)
    expect(failures.slice(0, 10), `seed ${SEED}: ${failures.length} wrong answers`).toEqual([])
    // Every kind of answer was exercised, or the cases say less than they seem to.
    expect(Object.values(kinds).every((n) => n > 0), JSON.stringify(kinds)).toBe(true)

    // Still itself: alive, within the limit, and only what was echoed stored, each an https URL within bounds.
    yield* client.send("PING alive")
    yield* client.next("PONG")
    const stored = yield* sql<{ endpoint: string; kind: string }>`SELECT endpoint, kind FROM push_subscriptions`.pipe(Effect.orDie)
    expect(stored.length).toBeLessThanOrEqual(LIMIT)
    for (const row of stored) {
      expect(row.kind).toBe("irc")
      expect(echoed.has(row.endpoint), row.endpoint).toBe(true)
      expect(row.endpoint).toMatch(/^https:\/\/push\.example\/[a-z0-9]{1,12}$/)
    }
  }), { timeout: 600_000 })
