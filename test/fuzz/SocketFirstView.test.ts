/**
 * Hostile `?first=` values on the browser WebSocket (src/http/ws/FirstView.ts): first the pure reader against a model
 * (thousands of strings: digits and colons in every arrangement, huge ids, long and Unicode targets, control
 * characters), then generated values against the running socket: every upgrade accepted (`first` is a preference,
 * never refused), its hello carrying a first view whose buffer opened is one of the member's own (never another
 * member's), and nothing stored changed.
 *
 * Reproducible: fast-check with a fixed seed, printed at the start; FUZZ_SEED overrides it, FUZZ_RUNS scales the count.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import fc from "fast-check"
import { type FirstWish, parseFirst } from "../../src/http/ws/FirstView.js"
import { Accounts } from "../../src/services/identity/Accounts.js"
import { MessageWriter } from "../../src/services/history/MessageWriter.js"
import { Networks } from "../../src/services/networks/Networks.js"
import { bearer, passwordToken } from "../http/auth/MemberHarness.js"
import { PASSWORD, startOAuthApp } from "../http/oauth/OAuthHarness.js"
import { connect } from "../http/ws/SocketClient.js"

const SEED = process.env.FUZZ_SEED !== undefined && process.env.FUZZ_SEED !== "" ? Number(process.env.FUZZ_SEED) : 616161
const RUNS = process.env.FUZZ_RUNS !== undefined && process.env.FUZZ_RUNS !== "" ? Number(process.env.FUZZ_RUNS) : 10_000
/** Sockets opened against the running app: each reads the database, so a twentieth of RUNS. */
const SOCKET_RUNS = Math.ceil(RUNS / 20)

/** What a `first` may look like, honest or not. */
const firstish = (networkIds: ReadonlyArray<number>) =>
  fc.oneof(
    fc.tuple(
      fc.oneof(
        fc.constantFrom(...networkIds.map(String)),
        fc.nat().map(String),
        fc.constantFrom("", "0", "-1", "+1", "01", "1e2", "٣", "1".repeat(16), "1".repeat(400))
      ),
      fc.constantFrom(":", "::", "", " :", ":\u0000"),
      fc.oneof(
        fc.constantFrom("#belay", "#BELAY", "#later", "#secret", ":server:1", "", "#a\r\nJOIN #b", "%", "%zz", "#日本", "x".repeat(1100)),
        fc.string({ maxLength: 40 }),
        fc.fullUnicodeString({ maxLength: 20 })
      )
    ).map(([id, colon, target]) => `${id}${colon}${target}`),
    fc.string({ maxLength: 60 }),
    fc.fullUnicodeString({ maxLength: 30 })
  )

/** The model: at most 1024 characters, 1–15 ASCII digits, a colon, then at least one character. */
const model = (raw: string | null): Option.Option<FirstWish> => {
  if (raw === null) return Option.none()
  const colon = raw.indexOf(":")
  const id = raw.slice(0, Math.max(colon, 0))
  if (raw.length > 1024 || colon < 1 || colon > 15 || !/^[0-9]+$/.test(id) || colon === raw.length - 1) {
    return Option.some({ _tag: "Pick" })
  }
  return Option.some({ _tag: "Named", networkId: Number(id), target: raw.slice(colon + 1) })
}

describe("the socket's first view under hostile ?first= values", () => {
  it("parseFirst reads exactly what the model reads", () => {
    console.info(`belay fuzz: socket first view, seed ${SEED}`)
    fc.assert(
      fc.property(firstish([1, 2, 3]), (raw) => {
        expect(parseFirst(raw)).toEqual(model(raw))
      }),
      { seed: SEED, numRuns: RUNS }
    )
    expect(parseFirst(null)).toEqual(Option.none())
  })

  it.scopedLive("every socket opens with a hello whose first view is the member's own, and nothing stored changes", () =>
    Effect.gen(function*() {
      const app = yield* startOAuthApp()
      const network = (account: string) =>
        app.service(Networks).add(account, {
          name: `${account}net`,
          host: "irc.test",
          port: 6667,
          tls: false,
          tlsInsecure: false,
          nick: account,
          username: Option.none(),
          realname: Option.none(),
          serverPassword: Option.none(),
          sasl: Option.none(),
          join: []
        }).pipe(Effect.orDie)
      const networkId = yield* network("alice")
      yield* app.service(Accounts).create("bob", PASSWORD).pipe(Effect.orDie)
      const bobNetwork = yield* network("bob")
      const writer = app.service(MessageWriter)
      for (const [id, target] of [[networkId, "#belay"], [networkId, "#later"], [bobNetwork, "#secret"]] as const) {
        for (let i = 0; i < 5; i++) {
          yield* writer.append({
            networkId: id,
            target,
            targetFolded: target,
            bufferKind: "channel",
            time: new Date(),
            kind: "privmsg",
            nick: "carol",
            text: `${target} line ${i}`,
            self: false
          })
        }
      }
      yield* writer.flush
      const count = () => app.sql<{ n: number }>`SELECT count(*)::int AS n FROM messages`.pipe(Effect.orDie, Effect.map((r) => r[0]!.n))
      const before = yield* count()
      const token = yield* passwordToken(app.url)
      const own = new Set(["#belay", "#later"])
      const answers = new Map<string, number>()
      const honest = [`${networkId}:#belay`, `${networkId}:#BELAY`, `${bobNetwork}:#secret`, ""]
      for (const first of [...honest, ...fc.sample(firstish([networkId, bobNetwork]), { seed: SEED, numRuns: SOCKET_RUNS })]) {
        const query = `?${new URLSearchParams({ first })}`
        const label = query.slice(0, 120)
        const socket = yield* connect(app.url, { headers: bearer(token), query })
        const hello = (yield* socket.next()) as { type: string; first?: { open: { networkId: number; target: string } | null } }
        yield* socket.close
        expect(hello.type, label).toBe("hello")
        const open = hello.first?.open
        expect(open?.networkId, label).toBe(networkId)
        expect(own.has(open!.target), label).toBe(true)
        expect(JSON.stringify(hello), label).not.toContain("#secret line")
        answers.set(open!.target, (answers.get(open!.target) ?? 0) + 1)
      }
      console.info(`belay fuzz: ${SOCKET_RUNS} sockets with ?first=, opened ${[...answers].map(([t, n]) => `${t}×${n}`).join(", ")}`)
      // The honest names were honoured (the server's pick is #later, the most recently active).
      expect(answers.get("#belay") ?? 0).toBeGreaterThanOrEqual(2)
      expect(yield* count()).toBe(before)
    }), 300_000)
})
