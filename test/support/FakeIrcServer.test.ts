// Self-test of the scripted fake IRC server, driven by a bare node:net/node:tls client so that what is proven is the
// fake's wire behaviour, not any client library's (one case also runs irc-framework against it, the library the
// network actor uses). Tests run under it.scoped, i.e. with TestClock installed, on purpose: the fake's waits must
// still expire on the live clock there.
import { createRequire } from "node:module"
import * as net from "node:net"
import * as tls from "node:tls"
import { describe, expect, it } from "@effect/vitest"
import { Clock, Deferred, Duration, Effect, Exit, Fiber, Queue, Scope } from "effect"
import { FAKE_IRC_TLS_CERT, FAKE_IRC_TLS_FINGERPRINT256 } from "./certs.js"
import * as FakeIrcServer from "./FakeIrcServer.js"

// ---------------------------------------------------------------------------------------------------------------
// A minimal line client.

const liveClock = Clock.make()
const READ_TIMEOUT = Duration.seconds(5)

interface RawClient {
  readonly socket: net.Socket
  readonly send: (...lines: ReadonlyArray<string>) => Effect.Effect<void>
  /** Next line from the server; fails with a description on timeout or close. */
  readonly read: Effect.Effect<string, string>
  /** Reads until a line starting with `prefix` (after the source) arrives; returns every line read. */
  readonly readUntil: (command: string) => Effect.Effect<ReadonlyArray<string>, string>
  /** Completes with the socket error code (ECONNRESET, ...) or "end" (FIN received) or "close". */
  readonly closed: Deferred.Deferred<string>
}

const commandOf = (line: string): string => FakeIrcServer.parseLine(line).command

const connect = (port: number, options: { readonly tls?: boolean } = {}): Effect.Effect<RawClient, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.async<RawClient>((resume) => {
      const socket = options.tls === true
        ? tls.connect({ host: "127.0.0.1", port, ca: FAKE_IRC_TLS_CERT, servername: "localhost" })
        : net.connect({ host: "127.0.0.1", port })
      const inbox = Effect.runSync(Queue.unbounded<string | null>())
      const closed = Effect.runSync(Deferred.make<string>())
      let buffer = ""
      let how = "close"
      socket.setEncoding("utf8")
      socket.on("data", (chunk: string) => {
        buffer += chunk
        const parts = buffer.split("\r\n")
        buffer = parts.pop() ?? ""
        for (const line of parts) inbox.unsafeOffer(line)
      })
      socket.on("end", () => {
        how = "end"
      })
      socket.on("error", (error: NodeJS.ErrnoException) => {
        how = error.code ?? error.message
      })
      socket.on("close", () => {
        inbox.unsafeOffer(null)
        Deferred.unsafeDone(closed, Effect.succeed(how))
      })
      const read = Effect.flatMap(Queue.take(inbox), (line) =>
        line === null
          ? Effect.zipRight(Queue.offer(inbox, null), Effect.fail(`client: closed (${how})`))
          : Effect.succeed(line)).pipe(
          Effect.timeoutFail({ duration: READ_TIMEOUT, onTimeout: () => "client: read timed out" }),
          Effect.withClock(liveClock)
        )
      const readUntil = (command: string) =>
        Effect.gen(function*() {
          const seen: Array<string> = []
          for (;;) {
            const line = yield* read
            seen.push(line)
            if (commandOf(line) === command) return seen
          }
        })
      const client: RawClient = {
        socket,
        send: (...lines) => Effect.sync(() => socket.write(lines.map((l) => l + "\r\n").join(""))),
        read,
        readUntil,
        closed
      }
      socket.once(options.tls === true ? "secureConnect" : "connect", () => resume(Effect.succeed(client)))
      socket.once("error", () => resume(Effect.succeed(client)))
    }),
    (client) => Effect.sync(() => client.socket.destroy())
  )

/** Connect attempt outcome without the scaffolding: "connected", or the error code (ECONNREFUSED). */
const tryConnect = (port: number): Effect.Effect<string> =>
  Effect.async<string>((resume) => {
    const socket = net.connect({ host: "127.0.0.1", port })
    socket.once("connect", () => {
      socket.destroy()
      resume(Effect.succeed("connected"))
    })
    socket.once("error", (error: NodeJS.ErrnoException) => resume(Effect.succeed(error.code ?? "error")))
  })

const live = <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.withClock(self, liveClock)

// ---------------------------------------------------------------------------------------------------------------

describe("parseLine", () => {
  it.each([
    { name: "bare command", raw: "NICK belay", command: "NICK", params: ["belay"], body: "NICK belay" },
    {
      name: "trailing with spaces",
      raw: "USER belay 0 * :Belay Bouncer",
      command: "USER",
      params: ["belay", "0", "*", "Belay Bouncer"],
      body: "USER belay 0 * :Belay Bouncer"
    },
    {
      name: "tags and source stripped from body",
      raw: "@label=a\\sb;+draft/x :me!u@h privmsg #c :hi there",
      command: "PRIVMSG",
      params: ["#c", "hi there"],
      body: "PRIVMSG #c :hi there"
    },
    { name: "empty trailing", raw: "CAP END :", command: "CAP", params: ["END", ""], body: "CAP END :" }
  ])("$name", ({ body, command, params, raw }) => {
    const line = FakeIrcServer.parseLine(raw)
    expect(line.command).toBe(command)
    expect(line.params).toEqual(params)
    expect(line.body).toBe(body)
  })

  it("unescapes tag values", () => {
    const line = FakeIrcServer.parseLine("@label=a\\sb\\:c;flag :src PING x")
    expect(line.tags).toEqual({ label: "a b;c", flag: "" })
    expect(line.source).toBe("src")
  })
})

describe("FakeIrcServer", () => {
  it.scoped("expectNext, waitFor, send and the line logs", () =>
    Effect.gen(function*() {
      const server = yield* FakeIrcServer.make()
      const client = yield* connect(server.port)
      const conn = yield* server.nextConnection()
      expect(conn.id).toBe(1)

      // Split across writes, bare LF accepted, empty lines ignored.
      yield* Effect.sync(() => client.socket.write("NICK be"))
      yield* Effect.sync(() => client.socket.write("lay\r\nUSER belay 0 * :Belay\n\r\nJOIN #a\r\nPRIVMSG #a :hello\r\n"))
      expect((yield* conn.expectNext("NICK")).params).toEqual(["belay"])
      expect((yield* conn.expectNext(/^USER belay /)).params[3]).toBe("Belay")
      const msg = yield* conn.waitFor((l) => l.command === "PRIVMSG")
      expect(msg.params).toEqual(["#a", "hello"])
      expect(yield* conn.skipped).toEqual(["JOIN #a"])
      expect(yield* conn.lines).toEqual(["NICK belay", "USER belay 0 * :Belay", "JOIN #a", "PRIVMSG #a :hello"])

      // A string matcher is a prefix ending at a space, not an arbitrary prefix.
      yield* client.send("PRIVMSG #a :hib")
      const mismatch = yield* Effect.flip(conn.expectNext("PRIVMSG #a :hi"))
      expect(mismatch.reason).toBe("Mismatch")
      expect(mismatch.message).toContain(`expected the next line to match "PRIVMSG #a :hi", got "PRIVMSG #a :hib"`)
      expect(mismatch.message).toContain("  NICK belay")

      yield* conn.send(":irc.fake.test NOTICE * :one", ":irc.fake.test NOTICE * :two")
      expect(yield* client.read).toBe(":irc.fake.test NOTICE * :one")
      expect(yield* client.read).toBe(":irc.fake.test NOTICE * :two")
    }))

  it.scoped("times out on the live clock under TestClock and lists what arrived", () =>
    Effect.gen(function*() {
      const server = yield* FakeIrcServer.make()
      const client = yield* connect(server.port)
      const conn = yield* server.nextConnection()
      yield* client.send("NICK belay", "USER belay 0 * :Belay")
      yield* conn.expectNext("NICK")
      const started = Date.now()
      const error = yield* Effect.flip(conn.waitFor("JOIN", "150 millis"))
      expect(Date.now() - started).toBeGreaterThanOrEqual(140)
      expect(error.reason).toBe("Timeout")
      expect(error.message).toContain(`waiting for a line matching "JOIN" (passed over 1)`)
      expect(error.message).toContain("lines received (2):\n  NICK belay\n  USER belay 0 * :Belay")

      const noConnection = yield* Effect.flip(server.nextConnection("50 millis"))
      expect(noConnection.reason).toBe("Timeout")
      expect(noConnection.message).toContain("accepted 1, refused 0, listening")
    }))

  it.scoped("fails at once with Closed when the client goes away mid-wait", () =>
    Effect.gen(function*() {
      const server = yield* FakeIrcServer.make()
      const client = yield* connect(server.port)
      const conn = yield* server.nextConnection()
      yield* client.send("QUIT :bye")
      yield* Effect.sync(() => client.socket.end())
      const error = yield* Effect.flip(conn.waitFor("NICK", "10 seconds"))
      expect(error.reason).toBe("Closed")
      expect(error.message).toContain("[connection closed]")
      expect(error.message).toContain("  QUIT :bye")
      yield* conn.waitClosed()
      expect(yield* conn.isOpen).toBe(false)
      expect((yield* Effect.flip(conn.expectNext("NICK"))).reason).toBe("Closed")
      expect((yield* Effect.flip(conn.send("PING :x"))).reason).toBe("Closed")
    }))

  it.scoped("register: plain NICK/USER, PASS captured, ISUPPORT and MOTD burst", () =>
    Effect.gen(function*() {
      const server = yield* FakeIrcServer.make()
      const client = yield* connect(server.port)
      const conn = yield* server.nextConnection()
      yield* client.send("PASS :s3cret pass", "NICK belay", "USER belay 0 * :Belay Bouncer")
      const isupport = Array.from({ length: 15 }, (_, i) => `T${i}=${i}`).concat("NETWORK=Libera")
      const registration = yield* conn.register("belay_", isupport)
      expect(registration).toEqual({
        nick: "belay_",
        clientNick: "belay",
        nicksTried: ["belay"],
        username: "belay",
        realname: "Belay Bouncer",
        pass: "s3cret pass",
        capNegotiated: false,
        capsRequested: [],
        capsEnabled: [],
        sasl: undefined,
        saslSucceeded: undefined
      })
      const burst = yield* client.readUntil("376")
      expect(burst.map(commandOf)).toEqual(["001", "002", "003", "004", "005", "005", "375", "372", "376"])
      expect(burst[0]).toBe(
        ":irc.fake.test 001 belay_ :Welcome to the Libera Internet Relay Chat Network belay_!belay@127.0.0.1"
      )
      expect(FakeIrcServer.parseLine(burst[4] ?? "").params).toHaveLength(15) // nick + 13 tokens + trailing
      expect(burst[5]).toBe(":irc.fake.test 005 belay_ T13=13 T14=14 NETWORK=Libera :are supported by this server")
    }))

  it.scoped("register: CAP LS 302, REQ/ACK, SASL PLAIN success, then CAP END", () =>
    Effect.gen(function*() {
      const server = yield* FakeIrcServer.make({ caps: ["multi-prefix", "away-notify", "echo-message", "sasl=PLAIN"] })
      const client = yield* connect(server.port)
      const conn = yield* server.nextConnection()
      const registering = yield* Effect.fork(conn.register())
      yield* client.send("CAP LS 302", "NICK belay", "USER belay 0 * :Belay")
      expect(yield* client.read).toBe(":irc.fake.test CAP * LS :multi-prefix away-notify echo-message sasl=PLAIN")
      yield* client.send("CAP REQ :multi-prefix sasl")
      expect(yield* client.read).toBe(":irc.fake.test CAP * ACK :multi-prefix sasl")
      yield* client.send("AUTHENTICATE PLAIN")
      expect(yield* client.read).toBe("AUTHENTICATE +")
      yield* client.send(`AUTHENTICATE ${Buffer.from("belay\0belay\0hunter2").toString("base64")}`)
      expect(yield* client.read).toBe(
        ":irc.fake.test 900 belay belay!belay@127.0.0.1 belay :You are now logged in as belay"
      )
      expect(yield* client.read).toBe(":irc.fake.test 903 belay :SASL authentication successful")
      yield* client.send("CAP END")
      const registration = yield* Fiber.join(registering)
      expect(registration.capNegotiated).toBe(true)
      expect(registration.capsEnabled).toEqual(["multi-prefix", "sasl"])
      expect(registration.sasl).toEqual({ mechanism: "PLAIN", authzid: "belay", authcid: "belay", password: "hunter2" })
      expect(registration.saslSucceeded).toBe(true)
      expect(commandOf(yield* client.read)).toBe("001")
    }))

  it.scoped("register: SASL failure (904), NAK, 433 retry, 908 for other mechanisms, 422 without MOTD", () =>
    Effect.gen(function*() {
      const server = yield* FakeIrcServer.make({ caps: ["sasl"], sasl: "fail", motd: null })
      const client = yield* connect(server.port)
      const conn = yield* server.nextConnection()
      const registering = yield* Effect.fork(conn.register(undefined, [], { rejectNicks: ["belay"] }))
      yield* client.send("CAP LS", "NICK belay")
      expect(yield* client.read).toBe(":irc.fake.test CAP * LS :sasl")
      expect(yield* client.read).toBe(":irc.fake.test 433 * belay :Nickname is already in use")
      yield* client.send("NICK belay_", "USER belay 0 * :Belay", "CAP REQ :sasl bogus")
      expect(yield* client.read).toBe(":irc.fake.test CAP * NAK :sasl bogus")
      yield* client.send("CAP REQ :sasl", "AUTHENTICATE EXTERNAL")
      expect(yield* client.read).toBe(":irc.fake.test CAP * ACK :sasl")
      expect(yield* client.read).toBe(":irc.fake.test 908 belay_ PLAIN :are available SASL mechanisms")
      expect(yield* client.read).toBe(":irc.fake.test 904 belay_ :SASL authentication failed")
      // A payload of exactly 400 base64 characters is followed by "AUTHENTICATE +" (sasl-3.1).
      const long = Buffer.from(`belay\0belay\0${"p".repeat(288)}`).toString("base64")
      expect(long).toHaveLength(400)
      yield* client.send("AUTHENTICATE PLAIN")
      expect(yield* client.read).toBe("AUTHENTICATE +")
      yield* client.send(`AUTHENTICATE ${long}`, "AUTHENTICATE +")
      expect(yield* client.read).toBe(":irc.fake.test 904 belay_ :SASL authentication failed")
      yield* client.send("CAP END")
      const registration = yield* Fiber.join(registering)
      expect(registration.nicksTried).toEqual(["belay", "belay_"])
      expect(registration.saslSucceeded).toBe(false)
      expect(registration.sasl?.password).toBe("p".repeat(288))
      expect((yield* client.readUntil("422")).map(commandOf)).toEqual(["001", "002", "003", "004", "422"])
    }))

  it.scoped("register: caps null answers CAP with 421 and does not wait for CAP END", () =>
    Effect.gen(function*() {
      const server = yield* FakeIrcServer.make({ caps: null })
      const client = yield* connect(server.port)
      const conn = yield* server.nextConnection()
      yield* client.send("CAP LS 302", "NICK belay", "USER belay 0 * :Belay")
      const registration = yield* conn.register()
      expect(registration.capNegotiated).toBe(false)
      expect(yield* client.read).toBe(":irc.fake.test 421 * CAP :Unknown command")
      expect(commandOf(yield* client.read)).toBe("001")
    }))

  it.scoped("register times out with what it has so far", () =>
    Effect.gen(function*() {
      const server = yield* FakeIrcServer.make({ caps: ["sasl"] })
      const client = yield* connect(server.port)
      const conn = yield* server.nextConnection()
      yield* client.send("CAP LS 302", "NICK belay", "USER belay 0 * :Belay")
      const error = yield* Effect.flip(conn.register(undefined, undefined, { timeout: "100 millis" }))
      expect(error.reason).toBe("Timeout")
      expect(error.message).toContain("have NICK=belay USER=yes CAP=negotiating")
    }))

  it.scoped("answers client PINGs unless autoPong is off", () =>
    Effect.gen(function*() {
      const server = yield* FakeIrcServer.make()
      const client = yield* connect(server.port)
      const conn = yield* server.nextConnection()
      yield* client.send("PING :cookie1", "JOIN #a")
      expect(yield* client.read).toBe(":irc.fake.test PONG irc.fake.test :cookie1")
      // The answered PING is logged but not delivered: the next line is the JOIN.
      yield* conn.expectNext("JOIN #a")
      expect(yield* conn.lines).toEqual(["PING :cookie1", "JOIN #a"])

      yield* conn.setAutoPong(false)
      yield* client.send("PING :cookie2")
      expect((yield* conn.expectNext("PING")).params).toEqual(["cookie2"])
      yield* client.send("PING :cookie3")
      yield* conn.expectNext("PING :cookie3")
      // Silence: the client got nothing for cookie2/3; what it reads next is what we send now.
      yield* conn.send("NOTICE * :marker")
      expect(yield* client.read).toBe("NOTICE * :marker")
    }))

  it.scoped("close sends ERROR and FIN; destroy resets; the client closing is observed", () =>
    Effect.gen(function*() {
      const server = yield* FakeIrcServer.make()

      const a = yield* connect(server.port)
      const connA = yield* server.nextConnection()
      yield* connA.close("Closing Link: test")
      expect(yield* a.read).toBe("ERROR :Closing Link: test")
      expect(yield* Deferred.await(a.closed)).toBe("end")

      const b = yield* connect(server.port)
      const connB = yield* server.nextConnection()
      yield* connB.destroy
      expect(yield* Deferred.await(b.closed)).toBe("ECONNRESET")
      expect(yield* connB.isOpen).toBe(false)

      const c = yield* connect(server.port)
      const connC = yield* server.nextConnection()
      expect(yield* server.connections).toBe(1)
      yield* Effect.sync(() => c.socket.end())
      yield* connC.waitClosed()
      expect(yield* server.stats).toMatchObject({ accepted: 3, refused: 0, open: 0, listening: true })
    }))

  it.scoped("stop refuses at the TCP level, restart listens again on the same port", () =>
    Effect.gen(function*() {
      const server = yield* FakeIrcServer.make()
      const client = yield* connect(server.port)
      const conn1 = yield* server.nextConnection()
      yield* server.stop
      expect(yield* Deferred.await(client.closed)).not.toBe("")
      expect(yield* conn1.isOpen).toBe(false)
      expect(yield* tryConnect(server.port)).toBe("ECONNREFUSED")
      expect((yield* server.stats).listening).toBe(false)
      const noConnection = yield* Effect.flip(server.nextConnection("20 millis"))
      expect(noConnection.message).toContain("stopped")

      yield* server.restart
      const again = yield* connect(server.port)
      const conn2 = yield* server.nextConnection()
      expect(conn2.id).toBe(2)
      yield* again.send("NICK belay")
      yield* conn2.expectNext("NICK belay")
      // restart while running drops the live connections too.
      yield* server.restart
      yield* Deferred.await(again.closed)
      expect(yield* tryConnect(server.port)).toBe("connected")
    }))

  it.scoped("refusing accepts and closes at once, counted apart from accepted", () =>
    Effect.gen(function*() {
      const server = yield* FakeIrcServer.make({ refuse: true })
      for (let i = 0; i < 3; i++) {
        const client = yield* connect(server.port)
        expect(yield* Deferred.await(client.closed)).toBe("end")
      }
      expect(yield* server.stats).toMatchObject({ accepted: 0, refused: 3, open: 0 })
      yield* server.setRefusing(false)
      yield* connect(server.port)
      const conn = yield* server.nextConnection()
      expect(conn.id).toBe(1)
      expect((yield* server.stats).accepted).toBe(1)
    }))

  it.scoped("flood writes 200,000 lines in order, waiting for drain under backpressure", () =>
    Effect.gen(function*() {
      const server = yield* FakeIrcServer.make()
      const client = yield* connect(server.port)
      const conn = yield* server.nextConnection()
      const total = 200_000
      const pad = "x".repeat(60)
      // Paused client: the kernel buffers (a few MB) fill well before the ~20 MB flood ends, so write must say false.
      yield* Effect.sync(() => client.socket.pause())
      const backpressured = yield* Deferred.make<void>()
      let received = 0
      let inOrder = true
      const allReceived = yield* Deferred.make<void>()
      yield* Effect.sync(() => {
        client.socket.removeAllListeners("data")
        let buffer = ""
        client.socket.on("data", (chunk: string) => {
          buffer += chunk
          let start = 0
          for (;;) {
            const nl = buffer.indexOf("\r\n", start)
            if (nl === -1) break
            const line = buffer.slice(start, nl)
            start = nl + 2
            if (!line.startsWith(`:bench!b@h PRIVMSG #flood :${received} `)) inOrder = false
            received++
          }
          buffer = buffer.slice(start)
          if (received === total) Deferred.unsafeDone(allReceived, Effect.void)
        })
      })
      const flooding = yield* Effect.fork(
        FakeIrcServer.flood(conn, total, (i) => `:bench!b@h PRIVMSG #flood :${i} ${pad}`, {
          onBackpressure: () => Deferred.unsafeDone(backpressured, Effect.void)
        })
      )
      yield* live(Deferred.await(backpressured).pipe(Effect.timeout("5 seconds")))
      yield* Effect.sync(() => client.socket.resume())
      const stats = yield* Fiber.join(flooding)
      yield* live(Deferred.await(allReceived).pipe(Effect.timeout("10 seconds")))
      expect(received).toBe(total)
      expect(inOrder).toBe(true)
      expect(stats.lines).toBe(total)
      expect(stats.backpressureWaits).toBeGreaterThan(0)
      // Respecting backpressure keeps Node's own buffer within one batch past its highWaterMark (which Node 22 raised
      // from 16 to 64 KiB) instead of the whole ~20 MB: a write is only made while below it.
      expect(stats.maxBuffered).toBeLessThan(stats.highWaterMark + FakeIrcServer.FLOOD_BATCH_BYTES + 1024)
      expect(stats.bytes).toBeGreaterThan(total * 60)
    }), 30_000)

  it.scoped("TLS: the fixed certificate verifies and the fake behaves the same", () =>
    Effect.gen(function*() {
      const server = yield* FakeIrcServer.make({ tls: true })
      expect(server.tls).toBe(true)
      const client = yield* connect(server.port, { tls: true })
      expect((client.socket as tls.TLSSocket).getPeerCertificate().fingerprint256).toBe(FAKE_IRC_TLS_FINGERPRINT256)
      const conn = yield* server.nextConnection()
      yield* client.send("NICK belay", "USER belay 0 * :Belay")
      yield* conn.register()
      expect(commandOf(yield* client.read)).toBe("001")
      yield* conn.destroy
      expect(yield* Deferred.await(client.closed)).toBe("ECONNRESET")
    }))

  it.scoped("500 simultaneous connections, registered by onConnection", () =>
    Effect.gen(function*() {
      const server = yield* FakeIrcServer.make({ onConnection: (c) => c.register(), motd: null })
      const clients = yield* Effect.forEach(
        Array.from({ length: 500 }, (_, i) => i),
        (i) =>
          Effect.tap(connect(server.port), (client) => client.send(`NICK n${i}`, `USER u${i} 0 * :User ${i}`)),
        { concurrency: "unbounded" }
      )
      const welcomes = yield* Effect.forEach(clients, (client) => client.read, { concurrency: "unbounded" })
      expect(welcomes.every((line) => commandOf(line) === "001")).toBe(true)
      expect(new Set(welcomes.map((line) => FakeIrcServer.parseLine(line).params[0])).size).toBe(500)
      expect(yield* server.connections).toBe(500)
      expect((yield* server.stats).handlerFailures).toEqual([])
    }), 30_000)

  it.scoped("irc-framework registers against it with CAP and SASL", () =>
    Effect.gen(function*() {
      const server = yield* FakeIrcServer.make({ caps: ["multi-prefix", "away-notify", "sasl"] })
      const registered = yield* Deferred.make<string>()
      yield* Effect.acquireRelease(
        Effect.sync(() => {
          const client = new IrcFramework.Client()
          client.on("registered", (event: { readonly nick: string }) =>
            Deferred.unsafeDone(registered, Effect.succeed(event.nick)))
          client.connect({
            host: "127.0.0.1",
            port: server.port,
            nick: "belay",
            username: "belay",
            gecos: "Belay",
            password: "serverpass",
            account: { account: "acct", password: "hunter2" },
            auto_reconnect: false
          })
          return client
        }),
        (client) => Effect.sync(() => client.quit("bye"))
      )
      const conn = yield* server.nextConnection()
      const registration = yield* conn.register()
      expect(registration.pass).toBe("serverpass")
      expect(registration.capsEnabled).toEqual(expect.arrayContaining(["multi-prefix", "away-notify", "sasl"]))
      expect(registration.sasl).toMatchObject({ authcid: "acct", password: "hunter2" })
      expect(registration.saslSucceeded).toBe(true)
      expect(yield* live(Deferred.await(registered).pipe(Effect.timeout("5 seconds")))).toBe("belay")
    }))

  it("startFakeIrcServer works from plain promises", async () => {
    const { close, server } = await FakeIrcServer.startFakeIrcServer()
    const scope = Effect.runSync(Scope.make())
    const client = await Effect.runPromise(Scope.extend(connect(server.port), scope))
    const conn = await Effect.runPromise(server.nextConnection())
    await Effect.runPromise(client.send("NICK belay", "USER belay 0 * :Belay"))
    await Effect.runPromise(conn.register())
    expect(commandOf(await Effect.runPromise(client.read))).toBe("001")
    await close()
    expect(await Effect.runPromise(Deferred.await(client.closed))).not.toBe("")
    await Effect.runPromise(Scope.close(scope, Exit.void))
  })
})

// irc-framework ships no type declarations; this is the slice the test uses.
interface IrcFrameworkClient {
  on(event: "registered", listener: (event: { readonly nick: string }) => void): void
  connect(options: Record<string, unknown>): void
  quit(message: string): void
}
const IrcFramework: { readonly Client: new () => IrcFrameworkClient } = createRequire(import.meta.url)("irc-framework")
