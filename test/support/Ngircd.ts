/**
 * A real IRC server (ngircd: Debian's /usr/sbin/ngircd, or BELAY_TEST_NGIRCD) on a free loopback port for system
 * tests, started and stopped by the test only (by its own child process), a bare-socket IRC client to play the other
 * person in a channel, and the network settings that point Belay at the server. System tests wait with
 * test/support/Eventually.ts. Without ngircd the tests skip, except under CI=true, where they fail (SystemBinary).
 *
 * Concurrency rule: a Peer's socket callbacks only push lines into its queue and its log; one fiber at a time reads
 * with `waitFor`. ngircd throttles bursts (its PENALTY), so waits are long.
 */
import * as Child from "node:child_process"
import * as Fs from "node:fs"
import * as Net from "node:net"
import * as Os from "node:os"
import * as Path from "node:path"
import { Duration, Effect, Option, Queue, type Scope } from "effect"
import type { NetworkSettings } from "../../src/services/networks/Networks.js"
import { freePort } from "./BelayProcess.js"
import { systemBinary } from "./SystemBinary.js"

/** Tests that need ngircd: `it.live.skipIf(NGIRCD.skip)`. */
export const NGIRCD = systemBinary({
  name: "ngircd",
  path: "/usr/sbin/ngircd",
  variable: "BELAY_TEST_NGIRCD",
  install: "apt-get install ngircd"
})
export const NGIRCD_WAIT = Duration.seconds(30)

export interface Ngircd {
  readonly port: number
  readonly stop: Effect.Effect<void>
  readonly start: Effect.Effect<void>
}

export interface NgircdOptions {
  /** PENALTY on (ngircd's default): a client sending faster than about one line a second is slowed down. */
  readonly penalties?: boolean
  /**
   * Ask port 113 of each client's address who it is (`Ident = yes`); ngircd 26.1 asks only when it also looks
   * names up (`DNS = yes`). Default: neither.
   */
  readonly ident?: boolean
}

const writeConfig = (dir: string, port: number, options: NgircdOptions) => {
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
      ...(options.penalties === false ? ["\tMaxPenaltyTime = 0"] : []),
      "[Options]",
      "\tPAM = no",
      ...(options.ident === true ? ["\tIdent = yes", "\tDNS = yes"] : ["\tIdent = no", "\tDNS = no"]),
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

/** ngircd listening on a free port, stopped (and its directory removed) with the scope. */
export const ngircdWith = (options: NgircdOptions): Effect.Effect<Ngircd, never, Scope.Scope> => Effect.gen(function*() {
  const binary = yield* NGIRCD.require
  const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "belay-ngircd-"))
  // ngircd drops root for "nobody"; it must still read its config (and may write its pid file).
  Fs.chmodSync(dir, 0o777)
  const port = yield* freePort
  writeConfig(dir, port, options)
  let child: Child.ChildProcess | undefined
  const start = Effect.gen(function*() {
    const proc = Child.spawn(binary, ["-n", "-f", Path.join(dir, "ngircd.conf")], { stdio: ["ignore", "pipe", "pipe"] })
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

export const ngircd: Effect.Effect<Ngircd, never, Scope.Scope> = ngircdWith({})

/** Belay's network on this server: plain TCP on loopback as belaybot, joining `join` (the stored-channel rejoin path). */
export const ngircdNetwork = (port: number, join: ReadonlyArray<string> = []): NetworkSettings => ({
  name: "ngircd",
  host: "127.0.0.1",
  port,
  tls: false,
  tlsInsecure: false,
  nick: "belaybot",
  username: Option.some("belay"),
  realname: Option.some("Belay system test"),
  serverPassword: Option.none(),
  sasl: Option.none(),
  join
})

export interface Peer {
  readonly send: (line: string) => Effect.Effect<void>
  /** Reads lines until one satisfies `match`, answering PINGs on the way. */
  readonly waitFor: (match: (line: string) => boolean) => Effect.Effect<string, Error>
  /** Every line received so far, in order. */
  readonly received: Effect.Effect<ReadonlyArray<string>>
}

/** A TCP connection to `port` on loopback, destroyed with the scope. */
export const loopbackSocket = (port: number): Effect.Effect<Net.Socket, Error, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.async<Net.Socket, Error>((resume) => {
      const s = Net.connect({ host: "127.0.0.1", port }, () => resume(Effect.succeed(s)))
      s.once("error", (e) => resume(Effect.fail(e)))
    }),
    (s) => Effect.sync(() => s.destroy())
  )

/** Calls `each` with every CRLF-ended line `socket` receives, in order (a line split across reads is joined first). */
export const onLines = (socket: Net.Socket, each: (line: string) => void): void => {
  let buffer = ""
  socket.setEncoding("utf8")
  socket.on("data", (chunk: string) => {
    buffer += chunk
    const parts = buffer.split("\r\n")
    buffer = parts.pop() ?? ""
    for (const line of parts) each(line)
  })
}

/** A registered client with nick `nick`, disconnected with the scope. */
export const peer = (port: number, nick: string): Effect.Effect<Peer, Error, Scope.Scope> =>
  Effect.gen(function*() {
    const lines = yield* Queue.unbounded<string>()
    const log: Array<string> = []
    const socket = yield* loopbackSocket(port)
    onLines(socket, (line) => {
      log.push(line)
      lines.unsafeOffer(line)
    })
    const send = (line: string) => Effect.sync(() => void socket.write(line + "\r\n"))
    const waitFor = (match: (line: string) => boolean) =>
      Effect.gen(function*() {
        for (;;) {
          const line = yield* Queue.take(lines)
          if (line.startsWith("PING ")) yield* send(`PONG ${line.slice(5)}`)
          if (match(line)) return line
        }
      }).pipe(Effect.timeoutFail({ duration: NGIRCD_WAIT, onTimeout: () => new Error(`peer ${nick}: timed out`) }))
    yield* send(`NICK ${nick}`)
    yield* send(`USER ${nick} 0 * :Peer`)
    yield* waitFor((l) => / 001 /.test(l))
    return { send, waitFor, received: Effect.sync(() => [...log]) }
  })
