import { describe, expect, it } from "@effect/vitest"
import { Context, Duration, Effect, Layer, Option } from "effect"
import { appConfigFromMap } from "../../../src/services/AppConfig.js"
import { CLIENT_TIMEOUT, IdentServer, LATE_REGISTRATION, MAX_CLIENTS } from "../../../src/services/egress/IdentServer.js"
import { exchange, holdOpen } from "./IdentClient.js"

/** The service, built in the test's scope (it listens until the test ends). */
const identServer = (env: Record<string, string>) =>
  Effect.map(Layer.build(IdentServer.Default.pipe(Layer.provide(appConfigFromMap(env)))), Context.get(IdentServer))

/** An ident server on a free port of every IPv4 address, so that it can be asked at 127.0.0.x as a member's source. */
const listening = Effect.gen(function*() {
  const server = yield* identServer({ BELAY_IDENTD_LISTEN: "0.0.0.0:0" })
  return { server, port: Option.getOrThrow(server.listening).port }
})

/** Our connection from 127.0.0.2:40001 to the IRC server at 127.0.0.1:6667, held by member b2. */
const UPSTREAM = { localAddress: "127.0.0.2", localPort: 40001, remoteAddress: "127.0.0.1", remotePort: 6667, ident: "b2" }

describe("IdentServer", () => {
  it.scopedLive("answers the server a connection goes to with its member's ident, and nobody else", () =>
    Effect.gen(function*() {
      const { server, port } = yield* listening
      server.register(UPSTREAM)
      server.register({ ...UPSTREAM, localAddress: "::ffff:127.0.0.3", ident: "b3" })
      const ask = (line: string, from: string, to: string) =>
        Effect.map(exchange(port, line, { from, to }), (e) => e.answer)

      expect(yield* ask("40001 , 6667\r\n", "127.0.0.1", "127.0.0.2")).toBe("40001 , 6667 : USERID : UNIX : b2\r\n")
      // Same ports, another member's source address: that member's connection.
      expect(yield* ask("40001,6667\n", "127.0.0.1", "127.0.0.3")).toBe("40001 , 6667 : USERID : UNIX : b3\r\n")
      // Another server asking about a connection to the first (RFC 1413 §2: the pair of addresses must match).
      expect(yield* ask("40001 , 6667\r\n", "127.0.0.9", "127.0.0.2")).toBe("40001 , 6667 : ERROR : NO-USER\r\n")
      // Asked at an address the connection does not leave from.
      expect(yield* ask("40001 , 6667\r\n", "127.0.0.1", "127.0.0.4")).toBe("40001 , 6667 : ERROR : NO-USER\r\n")
      expect(yield* ask("40002 , 6667\r\n", "127.0.0.1", "127.0.0.2")).toBe("40002 , 6667 : ERROR : NO-USER\r\n")
      expect(yield* ask("6667 , 40001\r\n", "127.0.0.1", "127.0.0.2")).toBe("6667 , 40001 : ERROR : NO-USER\r\n")
      expect(server.size()).toBe(2)
    }))

  it.scopedLive("forgets a connection once it is removed, and a stale removal keeps the new one", () =>
    Effect.gen(function*() {
      const { server, port } = yield* listening
      const remove = server.register(UPSTREAM)
      remove()
      const again = server.register({ ...UPSTREAM, ident: "b7" })
      remove()
      const first = yield* exchange(port, "40001 , 6667\r\n", { from: "127.0.0.1", to: "127.0.0.2" })
      expect(first.answer).toBe("40001 , 6667 : USERID : UNIX : b7\r\n")
      again()
      const second = yield* exchange(port, "40001 , 6667\r\n", { from: "127.0.0.1", to: "127.0.0.2" })
      expect(second.answer).toBe("40001 , 6667 : ERROR : NO-USER\r\n")
      expect(server.size()).toBe(0)
    }))

  it.scopedLive("waits a moment for a connection whose query came first", () =>
    Effect.gen(function*() {
      const { server, port } = yield* listening
      const asked = yield* Effect.fork(exchange(port, "40001 , 6667\r\n", { from: "127.0.0.1", to: "127.0.0.2" }))
      yield* Effect.sleep(Duration.millis(Duration.toMillis(LATE_REGISTRATION) / 3))
      server.register(UPSTREAM)
      const answered = yield* asked.await.pipe(Effect.flatten)
      expect(answered.answer).toBe("40001 , 6667 : USERID : UNIX : b2\r\n")
    }))

  it.scopedLive("answers INVALID-PORT to a line that is no query, and closes on a line too long or a silent client", () =>
    Effect.gen(function*() {
      const { server, port } = yield* listening
      server.register(UPSTREAM)
      for (const line of ["hello\r\n", "0 , 6667\r\n", "40001 , 6667 , 1\r\n", "\r\n", "\x00\xff\r\n"]) {
        const answered = yield* exchange(port, line, { from: "127.0.0.1", to: "127.0.0.2" })
        expect(answered.answer).toBe("0 , 0 : ERROR : INVALID-PORT\r\n")
      }
      const long = yield* exchange(port, "4".repeat(200), { from: "127.0.0.1", to: "127.0.0.2" })
      expect(long).toMatchObject({ answer: "", closed: true })
      // One query a connection: what follows the first line is never answered.
      const two = yield* exchange(port, "40001 , 6667\r\n40001 , 6667\r\n", { from: "127.0.0.1", to: "127.0.0.2" })
      expect(two.answer).toBe("40001 , 6667 : USERID : UNIX : b2\r\n")
      const silent = yield* exchange(port, null, { within: Duration.toMillis(CLIENT_TIMEOUT) + 3000 })
      expect(silent.closed).toBe(true)
      expect(silent.ms).toBeGreaterThanOrEqual(Duration.toMillis(CLIENT_TIMEOUT) - 100)
    }), { timeout: 30_000 })

  it.scopedLive(`serves at most ${MAX_CLIENTS} clients at once`, () =>
    Effect.gen(function*() {
      const { server, port } = yield* listening
      server.register(UPSTREAM)
      const held = yield* Effect.scoped(Effect.gen(function*() {
        for (let i = 0; i < MAX_CLIENTS; i++) yield* holdOpen(port, "127.0.0.1", "127.0.0.2")
        // Let the server accept them all before the one too many.
        yield* Effect.sleep(Duration.millis(200))
        return yield* exchange(port, "40001 , 6667\r\n", { from: "127.0.0.1", to: "127.0.0.2", within: 3000 })
      }))
      expect(held).toMatchObject({ answer: "", closed: true })
      // Once they are gone, a query is answered again.
      yield* Effect.sleep(Duration.millis(200))
      const after = yield* exchange(port, "40001 , 6667\r\n", { from: "127.0.0.1", to: "127.0.0.2" })
      expect(after.answer).toBe("40001 , 6667 : USERID : UNIX : b2\r\n")
    }))

  it.scopedLive("without BELAY_IDENTD_LISTEN listens nowhere and keeps nothing", () =>
    Effect.gen(function*() {
      const server = yield* identServer({})
      expect(server.enabled).toBe(false)
      expect(Option.isNone(server.listening)).toBe(true)
      server.register(UPSTREAM)
      expect(server.size()).toBe(0)
    }))
})
