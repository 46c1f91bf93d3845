// System test: the network actors against a real IRC server (ngircd 26, /usr/sbin/ngircd) on a free loopback port,
// over the real services (embedded PGlite or TEST_DATABASE_URL, MessageStore, Networks) and irc-framework. A second,
// bare-socket client plays the other person in the channel. ngircd throttles bursts (PENALTY), so waits are long.
//
// Proves: connect and register, rejoin of the network's channels, a message round trip in both directions, the
// reconnect after ngircd is restarted (backoff, then back, channels rejoined), and that the history survived it.
import { CredentialCache } from "../../src/services/CredentialCache.js"
import * as Child from "node:child_process"
import * as Fs from "node:fs"
import * as Net from "node:net"
import * as Os from "node:os"
import * as Path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Context, Duration, Effect, Layer, Option, Queue, type Scope } from "effect"
import { IrcTransportLive } from "../../src/actors/IrcTransport.js"
import { NetworkControl, type NetworkControlService, type NetworkStatus } from "../../src/actors/NetworkApi.js"
import { NetworkSupervisorLive } from "../../src/actors/NetworkSupervisor.js"
import { Accounts } from "../../src/services/Accounts.js"
import { E2eKeys } from "../../src/services/E2eKeys.js"
import { MessageStoreLive } from "../../src/services/MessageStore.js"
import { MessageStore } from "../../src/services/MessageStoreApi.js"
import { Metrics } from "../../src/services/Metrics.js"
import { Networks } from "../../src/services/Networks.js"
import { SecretBoxLive } from "../../src/services/SecretBox.js"
import { freePort } from "../support/BelayProcess.js"
import { TestDatabaseLive } from "../support/TestDatabase.js"

const NGIRCD = "/usr/sbin/ngircd"
const WAIT = Duration.seconds(30)

// ---------------------------------------------------------------------------------------------------------------
// ngircd, started and stopped by this test only (by its pid).

interface Ngircd {
  readonly port: number
  readonly stop: Effect.Effect<void>
  readonly start: Effect.Effect<void>
}

const writeConfig = (dir: string, port: number) => {
  Fs.writeFileSync(
    Path.join(dir, "ngircd.conf"),
    [
      "[Global]",
      "\tName = irc.belay.test",
      "\tInfo = Belay system test",
      "\tListen = 127.0.0.1",
      `\tPorts = ${port}`,
      "\tMotdPhrase = \"Belay system test\"",
      `\tPidFile = ${Path.join(dir, "ngircd.pid")}`,
      "\tAdminInfo1 = Belay",
      "\tAdminInfo2 = test",
      "\tAdminEMail = test@belay.test",
      "[Limits]",
      "\tMaxConnectionsIP = 0",
      "\tMaxJoins = 0",
      "[Options]",
      "\tPAM = no",
      "\tIdent = no",
      "\tDNS = no",
      ""
    ].join("\n")
  )
}

const waitListening = (port: number) =>
  Effect.promise(async () => {
    const deadline = Date.now() + 15_000
    while (Date.now() < deadline) {
      const ok = await new Promise<boolean>((resolve) => {
        const socket = Net.connect({ host: "127.0.0.1", port }, () => {
          socket.destroy()
          resolve(true)
        })
        socket.on("error", () => resolve(false))
      })
      if (ok) return
      await new Promise((r) => setTimeout(r, 100))
    }
    throw new Error(`ngircd did not listen on ${port}`)
  })

const ngircd: Effect.Effect<Ngircd, never, Scope.Scope> = Effect.gen(function*() {
  const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "belay-ngircd-"))
  // ngircd drops root for "nobody"; it must still read its config (and may write its pid file).
  Fs.chmodSync(dir, 0o777)
  const port = yield* freePort
  writeConfig(dir, port)
  let child: Child.ChildProcess | undefined
  const start = Effect.gen(function*() {
    const proc = Child.spawn(NGIRCD, ["-n", "-f", Path.join(dir, "ngircd.conf")], { stdio: ["ignore", "pipe", "pipe"] })
    proc.stdout.resume()
    proc.stderr.resume()
    child = proc
    yield* waitListening(port)
  })
  const stop = Effect.promise(
    () =>
      new Promise<void>((resolve) => {
        const proc = child
        child = undefined
        if (proc === undefined || proc.exitCode !== null) return resolve()
        proc.once("exit", () => resolve())
        proc.kill("SIGTERM")
      })
  )
  yield* Effect.acquireRelease(start, () =>
    Effect.zipRight(stop, Effect.sync(() => Fs.rmSync(dir, { recursive: true, force: true }))))
  return { port, stop, start }
})

// ---------------------------------------------------------------------------------------------------------------
// A bare IRC client for the other side of the conversation.

interface Peer {
  readonly send: (line: string) => Effect.Effect<void>
  /** Reads lines until one satisfies `match`, answering PINGs on the way. */
  readonly waitFor: (match: (line: string) => boolean) => Effect.Effect<string, Error>
}

const peer = (port: number, nick: string): Effect.Effect<Peer, Error, Scope.Scope> =>
  Effect.gen(function*() {
    const lines = yield* Queue.unbounded<string>()
    const socket = yield* Effect.acquireRelease(
      Effect.async<Net.Socket, Error>((resume) => {
        const s = Net.connect({ host: "127.0.0.1", port }, () => resume(Effect.succeed(s)))
        s.once("error", (e) => resume(Effect.fail(e)))
      }),
      (s) => Effect.sync(() => s.destroy())
    )
    let buffer = ""
    socket.setEncoding("utf8")
    socket.on("data", (chunk: string) => {
      buffer += chunk
      const parts = buffer.split("\r\n")
      buffer = parts.pop() ?? ""
      for (const line of parts) lines.unsafeOffer(line)
    })
    const send = (line: string) => Effect.sync(() => void socket.write(line + "\r\n"))
    const waitFor = (match: (line: string) => boolean) =>
      Effect.gen(function*() {
        for (;;) {
          const line = yield* Queue.take(lines)
          if (line.startsWith("PING ")) yield* send(`PONG ${line.slice(5)}`)
          if (match(line)) return line
        }
      }).pipe(Effect.timeoutFail({ duration: WAIT, onTimeout: () => new Error(`peer ${nick}: timed out`) }))
    yield* send(`NICK ${nick}`)
    yield* send(`USER ${nick} 0 * :Peer`)
    yield* waitFor((l) => / 001 /.test(l))
    return { send, waitFor }
  })

// ---------------------------------------------------------------------------------------------------------------

const Services = Layer.mergeAll(E2eKeys.Default, MessageStoreLive).pipe(
  Layer.provideMerge(Networks.Default),
  Layer.provideMerge(Accounts.Default),
  Layer.provideMerge(Layer.mergeAll(SecretBoxLive, Metrics.Default, CredentialCache.Default)),
  Layer.provideMerge(TestDatabaseLive())
)

const waitStatus = (control: NetworkControlService, id: number, predicate: (s: NetworkStatus) => boolean) =>
  Effect.gen(function*() {
    for (;;) {
      const status = yield* control.status(id)
      if (predicate(status)) return status
      yield* Effect.sleep("50 millis")
    }
  }).pipe(
    Effect.timeoutFail({
      duration: Duration.seconds(90),
      onTimeout: () => new Error("the network did not reach the expected state")
    })
  )

describe("NetworkActor against ngircd", () => {
  it.scopedLive.skipIf(!Fs.existsSync(NGIRCD))("connect, join, round trip, reconnect after a server restart, history intact", () =>
    Effect.gen(function*() {
      const server = yield* ngircd
      const context = yield* Layer.build(
        NetworkSupervisorLive.pipe(Layer.provide(IrcTransportLive), Layer.provideMerge(Services))
      )
      const control = Context.get(context, NetworkControl)
      const store = Context.get(context, MessageStore)
      const networks = Context.get(context, Networks)
      yield* Context.get(context, Accounts).create("sys", "a long password").pipe(Effect.orDie)
      const id = yield* networks.add("sys", {
        name: "ngircd",
        host: "127.0.0.1",
        port: server.port,
        tls: false,
        tlsInsecure: false,
        nick: "belaybot",
        username: Option.some("belay"),
        realname: Option.some("Belay system test"),
        serverPassword: Option.none(),
        sasl: Option.none(),
        join: ["#belay"]
      }).pipe(Effect.orDie)

      // Connect and join (the channel comes from the store: the rejoin path).
      const connected = yield* waitStatus(control, id, (s) => s.state === "connected")
      expect(connected.nick).toBe("belaybot")
      const other = yield* peer(server.port, "peer")
      yield* other.send("JOIN #belay")
      yield* other.waitFor((l) => / 366 /.test(l))
      yield* waitMembers(control, id, "#belay", ["belaybot", "peer"])

      // Round trip: peer → Belay's history; Belay → peer.
      yield* other.send("PRIVMSG #belay :hello from peer")
      yield* waitHistory(store, id, "#belay", (texts) => texts.includes("hello from peer"))
      expect(yield* control.say(id, "privmsg", "#belay", "hello from belay")).toEqual({ ok: true })
      yield* other.waitFor((l) => l.includes("PRIVMSG #belay :hello from belay"))
      expect(yield* control.whois(id, "peer")).toEqual({ ok: true })
      yield* waitHistory(store, id, `:server:${id}`, (_, numerics) => numerics.includes("311"))

      // ngircd goes away and comes back: backoff, then connected again with #belay rejoined.
      yield* server.stop
      const down = yield* waitStatus(control, id, (s) => s.state === "backoff")
      expect(down.nextRetryAt).not.toBeNull()
      expect(yield* control.say(id, "privmsg", "#belay", "lost")).toMatchObject({ ok: false, error: "not-connected" })
      yield* server.start
      yield* waitStatus(control, id, (s) => s.state === "connected")
      const again = yield* peer(server.port, "peer")
      yield* again.send("JOIN #belay")
      yield* again.waitFor((l) => / 366 /.test(l))
      yield* waitMembers(control, id, "#belay", ["belaybot", "peer"])
      yield* again.send("PRIVMSG #belay :after the restart")
      yield* waitHistory(store, id, "#belay", (texts) => texts.includes("after the restart"))

      // History intact and in order across the restart.
      yield* store.flush
      const history = yield* store.recent(id, "#belay", { before: Option.none(), limit: 100 })
      const said = history.filter((m) => m.kind === "privmsg").map((m) => [m.nick, m.text, m.self])
      expect(said).toEqual([
        ["peer", "hello from peer", false],
        ["belaybot", "hello from belay", true],
        ["peer", "after the restart", false]
      ])
      expect(history.filter((m) => m.kind === "join" && m.self)).toHaveLength(2)
      const serverBuffer = yield* store.recent(id, `:server:${id}`, { before: Option.none(), limit: 500 })
      expect(serverBuffer.some((m) => m.kind === "error" && m.text.startsWith("disconnected"))).toBe(true)
    }), { timeout: 180_000 })
})

const waitMembers = (control: NetworkControlService, id: number, channel: string, nicks: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    for (;;) {
      const result = yield* control.members(id, channel)
      if (result.ok && nicks.every((n) => result.members.some((m) => m.nick === n))) return
      yield* Effect.sleep("100 millis")
    }
  }).pipe(Effect.timeoutFail({ duration: WAIT, onTimeout: () => new Error(`members of ${channel} never included ${nicks.join(", ")}`) }))

const waitHistory = (
  store: Context.Tag.Service<typeof MessageStore>,
  id: number,
  buffer: string,
  done: (texts: ReadonlyArray<string>, numerics: ReadonlyArray<string>) => boolean
) =>
  Effect.gen(function*() {
    for (;;) {
      yield* store.flush
      const messages = yield* store.recent(id, buffer, { before: Option.none(), limit: 500 })
      if (done(messages.map((m) => m.text), messages.flatMap((m) => (m.numeric === null ? [] : [m.numeric])))) return
      yield* Effect.sleep("100 millis")
    }
  }).pipe(Effect.timeoutFail({ duration: WAIT, onTimeout: () => new Error(`history of ${buffer} never matched`) }))

