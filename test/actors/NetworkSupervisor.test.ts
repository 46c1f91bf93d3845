// NetworkSupervisor over the real services (Networks, E2eKeys, MessageWriter on a fresh embedded or TEST_DATABASE_URL
// database) with irc-framework against scripted fake IRC servers. The supervisor is built inside each test so its
// start and shutdown are observable; MessageWriter is swapped for the in-memory one where a fault must be injected.
import { describe, expect, it } from "@effect/vitest"
import { Clock, Duration, Effect, Option, TestClock } from "effect"
import type { NetworkControlService } from "../../src/actors/NetworkApi.js"
import type { NetworkStatus } from "../../src/schema/Network.js"
import { Accounts } from "../../src/services/identity/Accounts.js"
import { E2eKeys } from "../../src/services/networks/E2eKeys.js"
import { MessageHistory } from "../../src/services/history/MessageHistory.js"
import { MessageWriter } from "../../src/services/history/MessageWriter.js"
import { Metrics } from "../../src/services/upkeep/Metrics.js"
import { Networks } from "../../src/services/networks/Networks.js"
import { live } from "../support/ActorHarness.js"
import * as FakeIrcServer from "../support/FakeIrcServer.js"
import * as MemoryMessageStore from "../support/MemoryMessageStore.js"
import { describeMode } from "../support/TestDatabase.js"
import { startSupervisor as startSharedSupervisor, TestServicesLive } from "../support/TestServices.js"

const liveClock = Clock.make()

const ServicesTest = TestServicesLive

/** A supervisor in its own scope (closed by `stop`), optionally over an in-memory MessageWriter. */
const startSupervisor = (store?: MemoryMessageStore.MemoryMessageStore) =>
  startSharedSupervisor(store === undefined ? {} : { store })

let accountSeq = 0
const newAccount = Effect.gen(function*() {
  const name = `sup${++accountSeq}`
  yield* (yield* Accounts).create(name, "a long password").pipe(Effect.orDie)
  return name
})

const addNetwork = (account: string, server: FakeIrcServer.FakeIrcServer, nick: string, join: ReadonlyArray<string> = []) =>
  Effect.gen(function*() {
    const networks = yield* Networks
    return yield* networks.add(account, {
      name: `net-${nick}-${server.port}`,
      host: server.host,
      port: server.port,
      tls: false,
      tlsInsecure: false,
      nick,
      username: Option.none(),
      realname: Option.none(),
      serverPassword: Option.none(),
      sasl: Option.none(),
      join
    }).pipe(Effect.orDie)
  })

/** Polls (real time) until the network's status matches. */
const waitStatus = (
  control: NetworkControlService,
  networkId: number,
  predicate: (s: NetworkStatus) => boolean,
  timeout: Duration.DurationInput = "5 seconds"
) =>
  live(
    Effect.gen(function*() {
      for (;;) {
        const status = yield* control.status(networkId)
        if (predicate(status)) return status
        yield* Effect.sleep("10 millis")
      }
    }),
    timeout
  )

const connectedAs = (server: FakeIrcServer.FakeIrcServer, control: NetworkControlService, networkId: number) =>
  Effect.gen(function*() {
    const conn = yield* server.nextConnection()
    yield* conn.register()
    yield* waitStatus(control, networkId, (s) => s.state === "connected")
    return conn
  })

describe(`NetworkSupervisor on ${describeMode}`, () => {
  it.layer(ServicesTest(), { timeout: 120_000 })((it) => {
    it.scoped("boots an actor for every stored network, follows add and remove without a restart", () =>
      Effect.gen(function*() {
        const account = yield* newAccount
        const serverA = yield* FakeIrcServer.make()
        const serverB = yield* FakeIrcServer.make()
        const a = yield* addNetwork(account, serverA, "alpha", ["#boot"])
        const { control } = yield* startSupervisor()
        const connA = yield* connectedAs(serverA, control, a)
        // The network's --join channels are rejoined from the store.
        yield* connA.waitFor("JOIN #boot")

        const b = yield* addNetwork(account, serverB, "beta")
        const connB = yield* connectedAs(serverB, control, b)
        expect((yield* control.status(b)).nick).toBe("beta")

        yield* (yield* Networks).remove(account, a).pipe(Effect.orDie)
        yield* connA.waitFor("QUIT")
        yield* connA.waitClosed()
        expect(yield* Effect.flip(control.say(a, "privmsg", "#x", "hi"))).toMatchObject({ _tag: "UnknownNetwork", networkId: a })
        expect(yield* connB.isOpen).toBe(true)
        expect((yield* control.status(b)).state).toBe("connected")
      }))

    it.scoped("an actor that dies is logged and restarted; another network is untouched", () =>
      Effect.gen(function*() {
        const account = yield* newAccount
        const store = yield* MemoryMessageStore.make
        const serverA = yield* FakeIrcServer.make()
        const serverB = yield* FakeIrcServer.make()
        const a = yield* addNetwork(account, serverA, "alpha")
        const b = yield* addNetwork(account, serverB, "beta")
        const { control } = yield* startSupervisor(store)
        const [connA, connB] = yield* Effect.all([connectedAs(serverA, control, a), connectedAs(serverB, control, b)], {
          concurrency: "unbounded"
        })

        // A store bug on one message kills network A's dispatcher.
        yield* store.poison("boom")
        yield* connA.send(":x!x@h PRIVMSG alpha :boom")
        yield* connA.waitClosed()
        // The restart waits out its delay (1 s, on the supervisor's Clock).
        yield* TestClock.adjust("1 second")
        yield* connectedAs(serverA, control, a)

        expect(yield* connB.isOpen).toBe(true)
        expect((yield* serverB.stats).accepted).toBe(1)
        expect((yield* control.status(b)).state).toBe("connected")
        yield* control.say(b, "privmsg", "#c", "still here")
        yield* connB.waitFor("PRIVMSG #c :still here")
      }))

    it.scoped("shutdown: QUIT on every network in parallel, history flushed, within 5 s", () =>
      Effect.gen(function*() {
        const account = yield* newAccount
        const serverA = yield* FakeIrcServer.make()
        const serverB = yield* FakeIrcServer.make()
        const a = yield* addNetwork(account, serverA, "alpha")
        const b = yield* addNetwork(account, serverB, "beta")
        const { control, stop } = yield* startSupervisor()
        const [connA, connB] = yield* Effect.all([connectedAs(serverA, control, a), connectedAs(serverB, control, b)], {
          concurrency: "unbounded"
        })
        yield* connA.send(":x!x@h PRIVMSG alpha :remember me")
        yield* live(Effect.sleep("100 millis"))

        // Neither server closes after QUIT: each actor gives up after its grace period, both at once.
        const started = Date.now()
        yield* stop
        const elapsed = Date.now() - started
        expect(elapsed).toBeLessThan(5000)
        yield* connA.waitFor("QUIT :Belay: shutting down")
        yield* connB.waitFor("QUIT :Belay: shutting down")
        yield* connA.waitClosed()
        yield* connB.waitClosed()

        const store = yield* MessageHistory
        const dm = yield* store.recent(a, "x", { before: Option.none(), limit: 10 })
        expect(dm.map((m) => m.text)).toEqual(["remember me"])
      }).pipe(Effect.withClock(liveClock)))

    it.scoped("shutdown stays within 5 s when the database is down", () =>
      Effect.gen(function*() {
        const account = yield* newAccount
        const store = yield* MemoryMessageStore.make
        const server = yield* FakeIrcServer.make()
        const a = yield* addNetwork(account, server, "alpha")
        const { control, stop } = yield* startSupervisor(store)
        const conn = yield* connectedAs(server, control, a)
        yield* store.setOutage(true)
        const started = Date.now()
        yield* stop
        expect(Date.now() - started).toBeLessThan(5500)
        yield* conn.waitFor("QUIT")
      }).pipe(Effect.withClock(liveClock)), { timeout: 20_000 })

    it.scoped("CR, LF and NUL in any argument are refused before anything is sent", () =>
      Effect.gen(function*() {
        const account = yield* newAccount
        const server = yield* FakeIrcServer.make()
        const a = yield* addNetwork(account, server, "alpha")
        const { control } = yield* startSupervisor()
        const conn = yield* connectedAs(server, control, a)
        const before = (yield* conn.lines).length
        const refused: ReadonlyArray<Effect.Effect<unknown, unknown>> = [
          control.say(a, "privmsg", "#c", "one\r\nQUIT :pwned"),
          control.say(a, "notice", "#c\n", "x"),
          control.raw(a, "PRIVMSG #c :x\rQUIT"),
          control.raw(a, "PRIVMSG #c :x\u0000"),
          control.join(a, "#c", Option.some("k\n")),
          control.part(a, "#c", Option.some("bye\r\nQUIT")),
          control.nick(a, "n\r"),
          control.away(a, Option.some("away\n")),
          control.whois(a, "x\n"),
          control.setTopic(a, "#c", "t\r\n"),
          control.setModes(a, "#c", [{ sign: "+", letter: "b", param: "x\n" }])
        ]
        for (const call of refused) expect(yield* Effect.flip(call)).toMatchObject({ _tag: "InvalidArguments" })
        yield* live(Effect.sleep("100 millis"))
        expect((yield* conn.lines).length).toBe(before)
      }))

    it.scoped("send_raw refuses plaintext to an end-to-end encrypted target; isEncrypted reads the keys", () =>
      Effect.gen(function*() {
        const account = yield* newAccount
        const server = yield* FakeIrcServer.make()
        const a = yield* addNetwork(account, server, "alpha")
        yield* (yield* E2eKeys).set(account, a, "#Secret", "fishkey").pipe(Effect.orDie)
        const { control } = yield* startSupervisor()
        const conn = yield* connectedAs(server, control, a)
        expect(yield* control.isEncrypted(a, "#secret")).toBe(true)
        expect(yield* control.isEncrypted(a, "#open")).toBe(false)
        expect(yield* Effect.flip(control.raw(a, "PRIVMSG #SECRET :plain"))).toMatchObject({
          _tag: "E2eChannelUseSendMessage",
          target: "#SECRET"
        })
        expect(yield* Effect.flip(control.raw(a, "NOTICE #open,#secret :plain"))).toMatchObject({
          _tag: "E2eChannelUseSendMessage",
          target: "#secret"
        })
        yield* control.raw(a, "PRIVMSG #open :plain")
        yield* conn.waitFor("PRIVMSG #open :plain")
      }))

    it.scoped("disconnect is remembered across a restart; connect brings it back", () =>
      Effect.gen(function*() {
        const account = yield* newAccount
        const server = yield* FakeIrcServer.make()
        const a = yield* addNetwork(account, server, "alpha")
        const first = yield* startSupervisor()
        const conn = yield* connectedAs(server, first.control, a)
        yield* first.control.disconnect(a)
        yield* conn.waitFor("QUIT")
        yield* waitStatus(first.control, a, (s) => s.state === "offline")
        // Let the persistence fiber write `enabled = false`.
        yield* live(Effect.sleep("200 millis"))
        yield* first.stop

        const second = yield* startSupervisor()
        yield* waitStatus(second.control, a, (s) => s.state === "offline")
        yield* server.nextConnection("300 millis").pipe(Effect.flip)
        yield* second.control.connect(a, false)
        yield* connectedAs(server, second.control, a)
      }))

    it.scoped("history through the real MessageWriter: per-buffer order, own messages, server buffer", () =>
      Effect.gen(function*() {
        const account = yield* newAccount
        const server = yield* FakeIrcServer.make()
        const a = yield* addNetwork(account, server, "alpha")
        const { control } = yield* startSupervisor()
        const conn = yield* connectedAs(server, control, a)
        yield* conn.send(":alpha!u@h JOIN #a", ":alpha!u@h JOIN #b")
        yield* conn.flood(1200, (i) => `:x!x@h PRIVMSG ${i % 2 === 0 ? "#a" : "#B"} :${i}`)
        const writer = yield* MessageWriter
        const store = yield* MessageHistory
        // The flood is in once its last line is stored; only then is our own message surely after it.
        yield* live(Effect.gen(function*() {
          for (;;) {
            yield* writer.flush
            const last = yield* store.recent(a, "#b", { before: Option.none(), limit: 1 })
            if (last[0]?.text === "1199") return
            yield* Effect.sleep("20 millis")
          }
        }), "10 seconds")
        yield* control.say(a, "privmsg", "#a", "mine")
        yield* conn.waitFor("PRIVMSG #a mine")
        yield* writer.flush
        const recentA = yield* store.recent(a, "#a", { before: Option.none(), limit: 500 })
        const texts = recentA.filter((m) => m.kind === "privmsg").map((m) => m.text)
        expect(texts.slice(-3)).toEqual(["1196", "1198", "mine"])
        const numbers = texts.filter((t) => t !== "mine").map(Number)
        expect(numbers).toEqual([...numbers].sort((x, y) => x - y))
        expect(recentA.at(-1)).toMatchObject({ self: true, nick: "alpha", text: "mine" })
        const recentB = yield* store.recent(a, "#b", { before: Option.none(), limit: 500 })
        expect(recentB.filter((m) => m.kind === "privmsg")).toHaveLength(500)
        const server1 = yield* store.recent(a, `:server:${a}`, { before: Option.none(), limit: 50 })
        expect(server1.some((m) => m.kind === "numeric" && m.numeric === "001")).toBe(true)
      }))

    it.scoped("metrics: belay_connections counts networks by state", () =>
      Effect.gen(function*() {
        const account = yield* newAccount
        const server = yield* FakeIrcServer.make()
        const a = yield* addNetwork(account, server, "alpha")
        const { control } = yield* startSupervisor()
        // The earlier tests' networks share this database and start too: past the connect burst, alpha (the newest,
        // started last) waits its slot CONNECT_SPACING behind theirs, on the TestClock.
        yield* TestClock.adjust("1 second")
        yield* connectedAs(server, control, a)
        const text = yield* (yield* Metrics).render
        expect(text).toMatch(/belay_connections\{state="connected"\} [1-9]/)
        expect(text).toContain(`belay_connections{state="backoff"}`)
      }))
  })

  it.layer(ServicesTest({ BELAY_ALLOWED_HOSTS: "irc.example.org" }), { timeout: 120_000 })((it) => {
    it.scoped("BELAY_ALLOWED_HOSTS: a network on another host is locked-down and never contacted", () =>
      Effect.gen(function*() {
        const account = yield* newAccount
        const server = yield* FakeIrcServer.make()
        const a = yield* addNetwork(account, server, "alpha")
        const { control } = yield* startSupervisor()
        const status = yield* waitStatus(control, a, (s) => s.lastError !== null)
        expect(status).toMatchObject({ state: "offline" })
        expect(yield* Effect.flip(control.connect(a, true))).toMatchObject({ _tag: "LockedDown" })
        expect((yield* server.stats).accepted).toBe(0)
      }))
  })
})
