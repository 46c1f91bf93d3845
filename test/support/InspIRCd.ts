/**
 * A real IRCv3 server (InspIRCd 3: Debian's /usr/sbin/inspircd, or BELAY_TEST_INSPIRCD) on a free loopback port for
 * system tests, started and stopped by the test only (its own child process, never Debian's service), with the
 * modules that give message tags (`ircv3`, `ircv3_ctctags`, `ircv3_msgid`, `ircv3_servertime`, `ircv3_echomessage`,
 * `ircv3_batch`, `ircv3_labeledresponse`, `cap`) and multi-prefix (`namesx`); and a bare-socket client that negotiates capabilities to play the
 * other person. Without InspIRCd the tests skip, except under CI=true, where they fail (SystemBinary). Modelled on
 * Ngircd.ts; InspIRCd throttles nothing here (`fakelag="off"`), so waits are short.
 *
 * Concurrency rule: a TagPeer's socket callbacks only push parsed lines into its queue; one fiber at a time reads
 * with `next`.
 */
import * as Child from "node:child_process"
import * as Fs from "node:fs"
import * as Net from "node:net"
import * as Os from "node:os"
import * as Path from "node:path"
import { Duration, Effect, Queue, type Scope } from "effect"
import { freePort } from "./BelayProcess.js"
import { type ClientLine, parseClientLine } from "./IrcTestClient.js"
import { loopbackSocket, onLines } from "./Ngircd.js"
import { systemBinary } from "./SystemBinary.js"

/** Tests that need InspIRCd: `it.live.skipIf(INSPIRCD.skip)`. */
export const INSPIRCD = systemBinary({
  name: "inspircd",
  path: "/usr/sbin/inspircd",
  variable: "BELAY_TEST_INSPIRCD",
  install: "apt-get install inspircd"
})
export const INSPIRCD_WAIT = Duration.seconds(10)
export const INSPIRCD_NAME = "irc.inspircd.test"

const MODULES = [
  "cap",
  "ircv3",
  "ircv3_capnotify",
  "ircv3_ctctags",
  "ircv3_msgid",
  "ircv3_servertime",
  "ircv3_echomessage",
  "ircv3_batch",
  "ircv3_labeledresponse",
  // multi-prefix (every prefix of a member in NAMES and in WHO's flags, 352 and 354).
  "namesx"
]

const writeConfig = (dir: string, port: number) => {
  Fs.writeFileSync(Path.join(dir, "motd.txt"), "Belay system test\n")
  Fs.writeFileSync(
    Path.join(dir, "inspircd.conf"),
    [
      `<server name="${INSPIRCD_NAME}" description="Belay system test" network="BelayTest">`,
      `<admin name="Belay" nick="belay" email="test@belay.test">`,
      `<bind address="127.0.0.1" port="${port}" type="clients">`,
      // Loopback clients of one test: no per-address limit, no fake lag, no ident or DNS lookups to wait for.
      `<connect allow="*" timeout="20" localmax="100" globalmax="100" maxconnwarn="off" limit="1000" fakelag="off"`,
      `  threshold="1000" commandrate="100000000" recvq="16384" sendq="1048576" resolvehostnames="no" useident="no">`,
      `<dns timeout="1">`,
      `<files motd="${Path.join(dir, "motd.txt")}">`,
      `<security hideserver="">`,
      `<log method="file" type="* -USERINPUT -USEROUTPUT" level="default" target="${Path.join(dir, "inspircd.log")}">`,
      ...MODULES.map((m) => `<module name="${m}">`),
      ""
    ].join("\n")
  )
}

const waitListening = (port: number, child: Child.ChildProcess, output: () => string) =>
  Effect.promise(async () => {
    const deadline = Date.now() + 15_000
    while (Date.now() < deadline) {
      if (child.exitCode !== null) throw new Error(`inspircd exited with ${child.exitCode}:\n${output()}`)
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
    throw new Error(`inspircd did not listen on ${port}:\n${output()}`)
  })

export interface InspIRCd {
  readonly port: number
}

/** InspIRCd listening on a free port, stopped (and its directory removed) with the scope. */
export const inspircd: Effect.Effect<InspIRCd, never, Scope.Scope> = Effect.gen(function*() {
  const binary = yield* INSPIRCD.require
  const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "belay-inspircd-"))
  const port = yield* freePort
  writeConfig(dir, port)
  // InspIRCd refuses to start as root unless told; under a non-root user the flag is not needed.
  const args = ["--nofork", "--nopid", "--config", Path.join(dir, "inspircd.conf"),
    ...(process.getuid?.() === 0 ? ["--runasroot"] : [])]
  yield* Effect.acquireRelease(
    Effect.gen(function*() {
      const child = Child.spawn(binary, args, { stdio: ["ignore", "pipe", "pipe"] })
      let output = ""
      child.stdout.on("data", (c) => (output += c))
      child.stderr.on("data", (c) => (output += c))
      yield* waitListening(port, child, () => output)
      return child
    }),
    (child) =>
      Effect.promise(() =>
        new Promise<void>((resolve) => {
          if (child.exitCode !== null) return resolve()
          child.once("exit", () => resolve())
          child.kill("SIGTERM")
        })
      ).pipe(Effect.zipRight(Effect.sync(() => Fs.rmSync(dir, { recursive: true, force: true }))))
  )
  return { port }
})

export interface TagPeer {
  readonly send: (line: string) => Effect.Effect<void>
  /** Reads lines until one satisfies `match` (answering PINGs on the way); fails after INSPIRCD_WAIT. */
  readonly next: (match: (line: ClientLine) => boolean) => Effect.Effect<ClientLine, Error>
}

/** A client registered as `nick` with the capabilities `caps` acknowledged, disconnected with the scope. */
export const tagPeer = (port: number, nick: string, caps: ReadonlyArray<string>): Effect.Effect<TagPeer, Error, Scope.Scope> =>
  Effect.gen(function*() {
    const lines = yield* Queue.unbounded<ClientLine>()
    const seen: Array<string> = []
    const socket = yield* loopbackSocket(port)
    onLines(socket, (raw) => lines.unsafeOffer(parseClientLine(raw)))
    const send = (line: string) => Effect.sync(() => void socket.write(line + "\r\n"))
    const next = (match: (line: ClientLine) => boolean) =>
      Effect.gen(function*() {
        for (;;) {
          const line = yield* Queue.take(lines)
          seen.push(line.raw)
          if (line.command === "PING") yield* send(`PONG :${line.params[0] ?? ""}`)
          if (match(line)) return line
        }
      }).pipe(Effect.timeoutFail({
        duration: INSPIRCD_WAIT,
        onTimeout: () => new Error(`peer ${nick}: timed out; last lines:\n${seen.slice(-15).join("\n")}`)
      }))
    yield* send("CAP LS 302")
    yield* send(`CAP REQ :${caps.join(" ")}`)
    const ack = yield* next((l) => l.command === "CAP" && (l.params[1] === "ACK" || l.params[1] === "NAK"))
    if (ack.params[1] !== "ACK") return yield* Effect.fail(new Error(`inspircd refused ${caps.join(" ")}: ${ack.raw}`))
    yield* send(`NICK ${nick}`)
    yield* send(`USER ${nick} 0 * :Peer`)
    yield* send("CAP END")
    yield* next((l) => l.command === "001")
    return { send, next }
  })
