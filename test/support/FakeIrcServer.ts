/**
 * FakeIrcServer: a scripted IRC server on 127.0.0.1 for deterministic network-actor tests, shaped after soju's
 * server_test.go (createTestUpstream → `make`, mustAccept → `nextConnection`, expectMessage → `expectNext`/`waitFor`,
 * registerUpstreamConn → `register`). It is a real TCP listener on port 0 (optionally TLS with the fixed certificate in
 * ./certs.ts), so the code under test connects to it exactly as to a real network with irc-framework.
 *
 * Owns: the listener, every accepted socket, and per connection the log of lines the client sent plus the inbox that
 * `expectNext`/`waitFor`/`register` consume. Self-contained on purpose: it does not import src/irc/*, so a bug
 * there cannot hide behind the same bug in the fake.
 *
 * Concurrency rule: sockets are driven only by Node event callbacks on the one event loop. Those callbacks split input
 * into lines, log them, answer PINGs when autoPong is on, and push the rest into the connection's unbounded inbox
 * without ever blocking. The inbox has one consumer at a time: never run expectNext/waitFor/register on the same
 * connection from two fibers at once (each would steal the other's lines). send/flood/close/destroy and the
 * server-wide methods may be called from any fiber.
 *
 * Clock rule: socket I/O is real, so every wait here (nextConnection, expectNext, waitFor, register, waitClosed) is
 * bounded by `Effect.timeoutFail` run under `Effect.withClock(liveClock)`, never the ambient Clock. Inside
 * `it.effect`/`it.scoped` the ambient Clock is TestClock, which moves only on `TestClock.adjust`; a timeout on it would
 * never fire. So a test may drive the actor's backoff and keepalive with TestClock while these waits still expire in
 * real milliseconds. Nothing here sleeps: a wait ends on a line, a close, or its deadline. (`it.live`/`it.scopedLive`
 * work as well; they simply make the rule moot.)
 *
 * Outside Effect (benchmarks): every method is an Effect with no requirements, so `Effect.runPromise` runs it;
 * `startFakeIrcServer` wraps `make` in its own Scope and returns a Promise plus a close function.
 */
import * as net from "node:net"
import * as tls from "node:tls"
import { Cause, Clock, Data, Deferred, Duration, Effect, Exit, FiberId, FiberSet, Queue, Scope } from "effect"
import { FAKE_IRC_TLS_CERT, FAKE_IRC_TLS_KEY } from "./certs.js"

// ---------------------------------------------------------------------------------------------------------------
// Constants, in one block (soju server.go habit).

const HOST = "127.0.0.1"
/** Default bound for every wait; generous because CI machines stall, small next to vitest's 30 s testTimeout. */
const DEFAULT_TIMEOUT: Duration.DurationInput = "5 seconds"
const DEFAULT_SERVER_NAME = "irc.fake.test"
const SERVER_VERSION = "fakeircd-1"
/** How many of the client's lines an error message shows (the tail of the log). */
const LOG_TAIL = 30
/** RFC 2812 §2.3: at most 15 parameters; 005 spends two on the nick and the trailing text, so 13 tokens a line. */
const ISUPPORT_TOKENS_PER_LINE = 13
/** IRCv3 capability-negotiation (CAP LS 302): split long LS replies into "LS *" continuation lines. */
const CAP_LS_LINE_BUDGET = 400
/** IRCv3 sasl-3.1 "AUTHENTICATE": payloads come in 400-byte chunks; a shorter chunk (or "+") ends the payload. */
const SASL_CHUNK_LENGTH = 400
/**
 * Flood writes are batched to about this many bytes per socket.write: half the socket's highWaterMark on Node 20
 * (16 KiB), an eighth from Node 22 on (64 KiB, the streams' new default).
 */
export const FLOOD_BATCH_BYTES = 8 * 1024
/** listen(2) backlog: the reconnect-storm bench opens 500 connections at once. */
const LISTEN_BACKLOG = 1024

export const DEFAULT_ISUPPORT: ReadonlyArray<string> = [
  "CASEMAPPING=rfc1459",
  "CHANTYPES=#&",
  "PREFIX=(ov)@+",
  "CHANMODES=beI,k,l,imnpst",
  "MODES=4",
  "NICKLEN=30",
  "NETWORK=FakeNet"
]

export const DEFAULT_MOTD: ReadonlyArray<string> = ["Welcome to the fake IRC server."]

const liveClock = Clock.make()

// ---------------------------------------------------------------------------------------------------------------
// Lines and matchers.

/** One line the client sent, split just enough for matchers (IRCv3 message-tags, RFC 1459 §2.3.1). */
export interface FakeLine {
  readonly raw: string
  readonly tags: Readonly<Record<string, string>>
  /** The prefix without its leading ':' (clients rarely send one). */
  readonly source: string | undefined
  /** Upper-cased. */
  readonly command: string
  readonly params: ReadonlyArray<string>
  /** `raw` without tags and source, command upper-cased: what a string matcher is compared with. */
  readonly body: string
}

/**
 * A string matches when it equals the line's `body` or is a prefix of it ending at a space ("NICK" matches
 * "NICK belay", "CAP LS" matches "CAP LS 302", "PRIVMSG #a :hi" does not match "PRIVMSG #a :hib"). A RegExp is tested
 * against `raw`. A function gets the parsed line.
 */
export type LineMatcher = string | RegExp | ((line: FakeLine) => boolean)

const unescapeTagValue = (value: string): string => {
  let out = ""
  for (let i = 0; i < value.length; i++) {
    const c = value[i]
    if (c !== "\\") {
      out += c
      continue
    }
    const next = value[++i]
    // IRCv3 message-tags "Escaping values": a trailing lone backslash is dropped, unknown escapes lose the backslash.
    if (next === undefined) break
    out += next === ":" ? ";" : next === "s" ? " " : next === "r" ? "\r" : next === "n" ? "\n" : next
  }
  return out
}

export const parseLine = (raw: string): FakeLine => {
  let i = 0
  const skipSpaces = () => {
    while (raw[i] === " ") i++
  }
  const word = () => {
    const start = i
    while (i < raw.length && raw[i] !== " ") i++
    return raw.slice(start, i)
  }
  const tags: Record<string, string> = {}
  if (raw[i] === "@") {
    i++
    for (const item of word().split(";")) {
      if (item === "") continue
      const eq = item.indexOf("=")
      if (eq === -1) tags[item] = ""
      else tags[item.slice(0, eq)] = unescapeTagValue(item.slice(eq + 1))
    }
    skipSpaces()
  }
  let source: string | undefined
  if (raw[i] === ":") {
    i++
    source = word()
    skipSpaces()
  }
  const command = word().toUpperCase()
  const body = command + raw.slice(i)
  const params: Array<string> = []
  for (;;) {
    skipSpaces()
    if (i >= raw.length) break
    if (raw[i] === ":") {
      params.push(raw.slice(i + 1))
      break
    }
    params.push(word())
  }
  return { raw, tags, source, command, params, body }
}

const matches = (matcher: LineMatcher, line: FakeLine): boolean =>
  typeof matcher === "string"
    ? line.body === matcher || line.body.startsWith(matcher + " ")
    : matcher instanceof RegExp
    ? new RegExp(matcher.source, matcher.flags.replace("g", "").replace("y", "")).test(line.raw)
    : matcher(line)

const describeMatcher = (matcher: LineMatcher): string =>
  typeof matcher === "string"
    ? JSON.stringify(matcher)
    : matcher instanceof RegExp
    ? String(matcher)
    : `predicate ${matcher.name === "" ? "(anonymous)" : matcher.name}`

// ---------------------------------------------------------------------------------------------------------------
// Public types.

/** Every failure of the fake; `message` always lists the tail of what the client sent. */
export class FakeIrcError extends Data.TaggedError("FakeIrcError")<{
  /** Timeout: the deadline passed. Mismatch: expectNext saw another line. Closed: the socket is gone. */
  readonly reason: "Timeout" | "Mismatch" | "Closed"
  readonly message: string
}> {}

/** What a SASL PLAIN client sent (RFC 4616 §2: authzid NUL authcid NUL passwd). */
export interface SaslCredentials {
  readonly mechanism: "PLAIN"
  readonly authzid: string
  readonly authcid: string
  readonly password: string
}

/** "success" answers 900 + 903, "fail" answers 904, a function decides per credentials. */
export type SaslBehaviour = "success" | "fail" | ((credentials: SaslCredentials) => boolean)

/** Per-call overrides of the server-wide registration behaviour. */
export interface RegisterOptions {
  /** Capabilities offered in CAP LS (`name` or `name=value`); null: no CAP support, answer CAP with 421. */
  readonly caps?: ReadonlyArray<string> | null
  readonly sasl?: SaslBehaviour
  /** MOTD text lines (375/372/376); null or empty: 422 ERR_NOMOTD. */
  readonly motd?: ReadonlyArray<string> | null
  /** NICKs answered with 433 ERR_NICKNAMEINUSE; registration waits for another NICK. */
  readonly rejectNicks?: ReadonlyArray<string>
  readonly timeout?: Duration.DurationInput
}

/** What `register` observed and granted. */
export interface Registration {
  /** The nick the burst welcomed (the `nick` argument, else the client's accepted NICK). */
  readonly nick: string
  /** The last NICK the client sent that was not rejected. */
  readonly clientNick: string
  /** Every NICK the client sent during registration, in order (rejected ones included). */
  readonly nicksTried: ReadonlyArray<string>
  readonly username: string
  readonly realname: string
  /** The PASS parameter, if the client sent one. */
  readonly pass: string | undefined
  /** True when the client started CAP negotiation (and so registration waited for CAP END). */
  readonly capNegotiated: boolean
  /** Capabilities the client asked for in CAP REQ, in order, across all REQs. */
  readonly capsRequested: ReadonlyArray<string>
  /** Capabilities ACKed and still enabled at the end. */
  readonly capsEnabled: ReadonlyArray<string>
  /** The last SASL PLAIN credentials received, if any. */
  readonly sasl: SaslCredentials | undefined
  /** Outcome of the last SASL exchange; undefined when none completed. */
  readonly saslSucceeded: boolean | undefined
}

export interface FloodOptions {
  /** Called synchronously each time socket.write returns false, with the number of lines queued so far. */
  readonly onBackpressure?: (linesQueued: number) => void
}

export interface FloodStats {
  readonly lines: number
  readonly bytes: number
  /** How many times the flood stopped for 'drain' because socket.write returned false. */
  readonly backpressureWaits: number
  /** The largest socket.writableLength seen right after a write: bounded when backpressure is respected. */
  readonly maxBuffered: number
  /** The socket's writableHighWaterMark: write returns false once this much is buffered (16 KiB on Node 20, 64 KiB after). */
  readonly highWaterMark: number
}

export interface FakeIrcConnection {
  /** 1-based accept order on this server (refused sockets do not count). */
  readonly id: number
  readonly remotePort: number
  /** The very next unconsumed line must match; otherwise fails with Mismatch naming the line that came. */
  readonly expectNext: (matcher: LineMatcher, timeout?: Duration.DurationInput) => Effect.Effect<FakeLine, FakeIrcError>
  /** Consumes lines until one matches; the ones passed over go to `skipped`. The timeout bounds the whole wait. */
  readonly waitFor: (matcher: LineMatcher, timeout?: Duration.DurationInput) => Effect.Effect<FakeLine, FakeIrcError>
  /** Writes raw lines (without line endings; CRLF is added) in one write; completes once handed to the kernel. */
  readonly send: (...lines: ReadonlyArray<string>) => Effect.Effect<void, FakeIrcError>
  /**
   * Plays the server side of registration: answers CAP LS/LIST/REQ/END (IRCv3 capability-negotiation),
   * AUTHENTICATE PLAIN (IRCv3 sasl-3.1: 900+903 or 904, 908 for another mechanism, 906 on abort), records PASS, answers
   * rejected NICKs with 433, and once NICK and USER arrived and CAP negotiation (if started) ended, sends 001–004,
   * 005 with `isupport` (default: server option, else DEFAULT_ISUPPORT; empty: no 005) and 375/372/376 or 422.
   * Other lines are passed over into `skipped`. The timeout bounds the whole exchange.
   */
  readonly register: (
    nick?: string,
    isupport?: ReadonlyArray<string>,
    options?: RegisterOptions
  ) => Effect.Effect<Registration, FakeIrcError>
  /** Writes `count` lines `makeLine(0..count-1)` as fast as the socket takes them, waiting for 'drain' when told to. */
  readonly flood: (
    count: number,
    makeLine: (i: number) => string,
    options?: FloodOptions
  ) => Effect.Effect<FloodStats, FakeIrcError>
  /** Every line the client sent so far, oldest first, including auto-answered PINGs. */
  readonly lines: Effect.Effect<ReadonlyArray<string>>
  /** Lines that waitFor/register consumed without matching, oldest first. */
  readonly skipped: Effect.Effect<ReadonlyArray<string>>
  /** autoPong on: client PINGs are answered with PONG and not put in the inbox. Off: PINGs reach the inbox, silence. */
  readonly setAutoPong: (enabled: boolean) => Effect.Effect<void>
  readonly isOpen: Effect.Effect<boolean>
  /** Completes when the socket has closed (client QUIT/close, or our close/destroy). */
  readonly waitClosed: (timeout?: Duration.DurationInput) => Effect.Effect<void, FakeIrcError>
  /** Graceful close: optional `ERROR :reason`, then FIN; destroys if the peer has not closed within the timeout. */
  readonly close: (reason?: string) => Effect.Effect<void>
  /** Abrupt drop: TCP RST (socket.resetAndDestroy), as when a server or NAT loses the connection. */
  readonly destroy: Effect.Effect<void>
}

export interface FakeIrcServerOptions {
  /** Serve TLS with FAKE_IRC_TLS_CERT (clients trust it with `ca: FAKE_IRC_TLS_CERT` or skip verification). */
  readonly tls?: boolean
  readonly serverName?: string
  /** Default capability list for `register` (default: none offered, but CAP is understood); null: CAP → 421. */
  readonly caps?: ReadonlyArray<string> | null
  /** Default SASL behaviour for `register` (default "success"). */
  readonly sasl?: SaslBehaviour
  /** Default MOTD for `register` (default DEFAULT_MOTD); null: 422. */
  readonly motd?: ReadonlyArray<string> | null
  /** Default ISUPPORT tokens for `register` (default DEFAULT_ISUPPORT). */
  readonly isupport?: ReadonlyArray<string>
  /** Initial autoPong of each connection (default true). */
  readonly autoPong?: boolean
  /** Start refusing: accept then close every socket at once (default false). */
  readonly refuse?: boolean
  /** Default bound for every wait (default 5 seconds). */
  readonly timeout?: Duration.DurationInput
  /**
   * Forked in the server's scope for each accepted connection (e.g. `(c) => c.register()` for benchmarks). Its
   * failures are recorded in `stats.handlerFailures`. The connection is still offered to `nextConnection`.
   */
  readonly onConnection?: (connection: FakeIrcConnection) => Effect.Effect<unknown, FakeIrcError>
}

export interface FakeIrcServerStats {
  /** Sockets accepted and kept (refused ones excluded), since make. */
  readonly accepted: number
  /** Sockets closed at once because the server was refusing. */
  readonly refused: number
  /** Accepted sockets still open. */
  readonly open: number
  readonly listening: boolean
  readonly handlerFailures: ReadonlyArray<string>
}

export interface FakeIrcServer {
  readonly host: string
  /** Chosen by the OS at make; restart listens on the same port again. */
  readonly port: number
  readonly tls: boolean
  /** The source of every line the fake writes, e.g. ":irc.fake.test 001 ...". */
  readonly serverName: string
  /** The next accepted connection, in accept order (connections that already closed are still delivered). */
  readonly nextConnection: (timeout?: Duration.DurationInput) => Effect.Effect<FakeIrcConnection, FakeIrcError>
  /** Accepted sockets open right now. */
  readonly connections: Effect.Effect<number>
  readonly stats: Effect.Effect<FakeIrcServerStats>
  /** While true, every new socket is accepted and closed at once (the client sees EOF), to exercise backoff. */
  readonly setRefusing: (refuse: boolean) => Effect.Effect<void>
  /** Closes the listener (new connects get ECONNREFUSED) and destroys every socket; completes when all are closed. */
  readonly stop: Effect.Effect<void>
  /** stop, then listen again on the same port. */
  readonly restart: Effect.Effect<void>
}

// ---------------------------------------------------------------------------------------------------------------
// Connection.

const CLOSED: unique symbol = Symbol("FakeIrcConnection.closed")
type InboxItem = string | typeof CLOSED

interface Config {
  readonly serverName: string
  readonly caps: ReadonlyArray<string> | null
  readonly sasl: SaslBehaviour
  readonly motd: ReadonlyArray<string> | null
  readonly isupport: ReadonlyArray<string>
  readonly autoPong: boolean
  readonly timeout: Duration.Duration
}

interface ConnectionHandle {
  readonly connection: FakeIrcConnection
  readonly closed: Deferred.Deferred<void>
  readonly socket: net.Socket
}

/** Bounds `self` by `timeout` on the live clock (see the clock rule above). */
const withDeadline = <A>(
  self: Effect.Effect<A, FakeIrcError>,
  timeout: Duration.Duration,
  onTimeout: () => FakeIrcError
): Effect.Effect<A, FakeIrcError> =>
  self.pipe(Effect.timeoutFail({ duration: timeout, onTimeout }), Effect.withClock(liveClock))

const capName = (cap: string): string => {
  const eq = cap.indexOf("=")
  return eq === -1 ? cap : cap.slice(0, eq)
}

const makeConnection = (
  id: number,
  socket: net.Socket,
  raw: net.Socket,
  config: Config
): ConnectionHandle => {
  const inbox = Effect.runSync(Queue.unbounded<InboxItem>())
  const closed = Deferred.unsafeMake<void>(FiberId.none)
  const log: Array<string> = []
  const skippedLog: Array<string> = []
  let autoPong = config.autoPong
  let isClosed = false
  const remotePort = raw.remotePort ?? 0
  const src = `:${config.serverName}`

  const writable = () => !isClosed && !socket.destroyed && socket.writable

  const onLine = (line: string) => {
    log.push(line)
    if (autoPong) {
      const parsed = parseLine(line)
      if (parsed.command === "PING") {
        // RFC 2812 §3.7.2/§3.7.3: answer with the same token so the client's keepalive sees its own cookie.
        if (writable()) socket.write(`${src} PONG ${config.serverName} :${parsed.params[0] ?? ""}\r\n`)
        return
      }
    }
    inbox.unsafeOffer(line)
  }

  let pending = ""
  socket.setEncoding("utf8")
  socket.on("data", (chunk: string) => {
    pending += chunk
    let start = 0
    for (;;) {
      const nl = pending.indexOf("\n", start)
      if (nl === -1) break
      // RFC 1459 §2.3.1 says CR-LF, but lenient servers accept a bare LF; empty lines are ignored.
      const end = nl > start && pending.charCodeAt(nl - 1) === 13 ? nl - 1 : nl
      const line = pending.slice(start, end)
      start = nl + 1
      if (line !== "") onLine(line)
    }
    pending = pending.slice(start)
  })
  socket.on("error", () => {
    // A reset or a failed TLS handshake; 'close' follows and is what we act on.
  })
  socket.once("close", () => {
    isClosed = true
    inbox.unsafeOffer(CLOSED)
    Deferred.unsafeDone(closed, Exit.void)
  })

  const describeLog = (): string => {
    const tail = log.slice(-LOG_TAIL)
    const header = log.length === 0
      ? "no lines received"
      : `lines received (${tail.length < log.length ? `last ${tail.length} of ${log.length}` : `${log.length}`}):`
    const state = isClosed ? " [connection closed]" : ""
    return [`${header}${state}`, ...tail.map((line) => `  ${line}`)].join("\n")
  }
  const fail = (reason: FakeIrcError["reason"], what: string) =>
    new FakeIrcError({ reason, message: `FakeIrcConnection #${id}: ${what}\n${describeLog()}` })

  const timeoutOf = (timeout: Duration.DurationInput | undefined) =>
    timeout === undefined ? config.timeout : Duration.decode(timeout)

  /** The next inbox line; on close, leaves the marker in place so every later take fails too. */
  const takeNext = (waitingFor: string): Effect.Effect<string, FakeIrcError> =>
    Effect.flatMap(Queue.take(inbox), (item) =>
      item === CLOSED
        ? Effect.zipRight(
          Queue.offer(inbox, CLOSED),
          Effect.fail(fail("Closed", `connection closed while waiting for ${waitingFor}`))
        )
        : Effect.succeed(item))

  const expectNext = (matcher: LineMatcher, timeout?: Duration.DurationInput) => {
    const what = describeMatcher(matcher)
    const d = timeoutOf(timeout)
    return withDeadline(
      Effect.flatMap(takeNext(what), (raw) => {
        const line = parseLine(raw)
        return matches(matcher, line)
          ? Effect.succeed(line)
          : Effect.fail(fail("Mismatch", `expected the next line to match ${what}, got ${JSON.stringify(raw)}`))
      }),
      d,
      () => fail("Timeout", `timed out after ${Duration.format(d)} waiting for the next line to match ${what}`)
    )
  }

  const waitFor = (matcher: LineMatcher, timeout?: Duration.DurationInput) => Effect.suspend(() => {
    const what = describeMatcher(matcher)
    const d = timeoutOf(timeout)
    let passedOver = 0
    const loop: Effect.Effect<FakeLine, FakeIrcError> = Effect.flatMap(takeNext(what), (raw) => {
      const line = parseLine(raw)
      if (matches(matcher, line)) return Effect.succeed(line)
      skippedLog.push(raw)
      passedOver++
      return loop
    })
    return withDeadline(
      loop,
      d,
      () =>
        fail(
          "Timeout",
          `timed out after ${Duration.format(d)} waiting for a line matching ${what} (passed over ${passedOver})`
        )
    )
  })

  const send = (...lines: ReadonlyArray<string>): Effect.Effect<void, FakeIrcError> =>
    Effect.async<void, FakeIrcError>((resume) => {
      if (!writable()) {
        resume(Effect.fail(fail("Closed", `cannot send ${JSON.stringify(lines[0] ?? "")}: connection closed`)))
        return
      }
      if (lines.length === 0) {
        resume(Effect.void)
        return
      }
      socket.write(lines.map((line) => line + "\r\n").join(""), (error) => {
        resume(
          error == null
            ? Effect.void
            : Effect.fail(fail("Closed", `send failed (${error.message}): ${JSON.stringify(lines[0] ?? "")}`))
        )
      })
    })

  const register = (
    nickArg?: string,
    isupportArg?: ReadonlyArray<string>,
    options: RegisterOptions = {}
  ): Effect.Effect<Registration, FakeIrcError> =>
    // Suspended so each run of the returned Effect starts from fresh registration state.
    Effect.suspend(() => {
      const caps = options.caps !== undefined ? options.caps : config.caps
      const sasl = options.sasl ?? config.sasl
      const motd = options.motd !== undefined ? options.motd : config.motd
      const isupport = isupportArg ?? config.isupport
      const rejectNicks = new Set(options.rejectNicks ?? [])
      const d = timeoutOf(options.timeout)
      const offered = new Set((caps ?? []).map(capName))

      let clientNick: string | undefined
      const nicksTried: Array<string> = []
      let username: string | undefined
      let realname = ""
      let pass: string | undefined
      let capStarted = false
      let capEnded = false
      const capsRequested: Array<string> = []
      const enabled = new Set<string>()
      let saslMechanism: "PLAIN" | undefined
      let saslBuffer = ""
      let saslCredentials: SaslCredentials | undefined
      let saslSucceeded: boolean | undefined
      let phase = "NICK/USER"

      const target = () => clientNick ?? "*"
      const reply = (...parts: ReadonlyArray<string>) => send(...parts.map((p) => `${src} ${p}`))

      const onCap = (line: FakeLine): Effect.Effect<void, FakeIrcError> => {
        if (caps === null) return reply(`421 ${target()} CAP :Unknown command`)
        const sub = (line.params[0] ?? "").toUpperCase()
        switch (sub) {
          case "LS": {
            capStarted = true
            phase = "CAP END"
            // CAP LS 302 gets values (sasl=PLAIN); older clients get bare names (IRCv3 capability-negotiation).
            const v302 = Number(line.params[1] ?? "0") >= 302
            const shown = caps.map((cap) => (v302 ? cap : capName(cap)))
            const chunks: Array<string> = []
            let current = ""
            for (const cap of shown) {
              if (current !== "" && current.length + 1 + cap.length > CAP_LS_LINE_BUDGET) {
                chunks.push(current)
                current = cap
              } else current = current === "" ? cap : `${current} ${cap}`
            }
            chunks.push(current)
            return reply(
              ...chunks.map((chunk, i) => (i < chunks.length - 1 && v302 ? `CAP * LS * :${chunk}` : `CAP * LS :${chunk}`))
            )
          }
          case "LIST":
            return reply(`CAP * LIST :${[...enabled].join(" ")}`)
          case "REQ": {
            capStarted = true
            phase = "CAP END"
            const requested = (line.params[1] ?? "").split(" ").filter((c) => c !== "")
            capsRequested.push(...requested)
            // A REQ is all-or-nothing: one unknown capability NAKs the whole list.
            const ok = requested.length > 0 && requested.every((c) => offered.has(c.replace(/^-/, "")))
            if (!ok) return reply(`CAP * NAK :${requested.join(" ")}`)
            for (const c of requested) {
              if (c.startsWith("-")) enabled.delete(c.slice(1))
              else enabled.add(c)
            }
            return reply(`CAP * ACK :${requested.join(" ")}`)
          }
          case "END":
            capEnded = true
            return Effect.void
          default:
            return reply(`410 ${target()} ${sub} :Invalid CAP command`)
        }
      }

      const finishSasl = (): Effect.Effect<void, FakeIrcError> => {
        saslMechanism = undefined
        const decoded = Buffer.from(saslBuffer, "base64").toString("utf8")
        saslBuffer = ""
        const [authzid = "", authcid = "", password = ""] = decoded.split("\0")
        const credentials: SaslCredentials = { mechanism: "PLAIN", authzid, authcid, password }
        saslCredentials = credentials
        const ok = sasl === "success" ? true : sasl === "fail" ? false : sasl(credentials)
        saslSucceeded = ok
        const account = authcid === "" ? authzid : authcid
        return ok
          ? reply(
            `900 ${target()} ${target()}!${username ?? "*"}@${HOST} ${account} :You are now logged in as ${account}`,
            `903 ${target()} :SASL authentication successful`
          )
          : reply(`904 ${target()} :SASL authentication failed`)
      }

      const onAuthenticate = (line: FakeLine): Effect.Effect<void, FakeIrcError> => {
        const arg = line.params[0] ?? ""
        if (!enabled.has("sasl")) return reply(`904 ${target()} :SASL authentication failed`)
        if (arg === "*") {
          saslMechanism = undefined
          saslBuffer = ""
          return reply(`906 ${target()} :SASL authentication aborted`)
        }
        if (saslMechanism === undefined) {
          if (arg.toUpperCase() !== "PLAIN") {
            return reply(`908 ${target()} PLAIN :are available SASL mechanisms`, `904 ${target()} :SASL authentication failed`)
          }
          saslMechanism = "PLAIN"
          saslBuffer = ""
          return send("AUTHENTICATE +")
        }
        if (arg === "+") return finishSasl()
        saslBuffer += arg
        return arg.length < SASL_CHUNK_LENGTH ? finishSasl() : Effect.void
      }

      const onNick = (line: FakeLine): Effect.Effect<void, FakeIrcError> => {
        const nick = line.params[0] ?? ""
        nicksTried.push(nick)
        if (rejectNicks.has(nick)) return reply(`433 ${target()} ${nick} :Nickname is already in use`)
        clientNick = nick
        return Effect.void
      }

      const burst = (nick: string, user: string): Effect.Effect<void, FakeIrcError> => {
        const network = isupport.find((t) => t.startsWith("NETWORK="))?.slice("NETWORK=".length) ?? "FakeNet"
        const lines = [
          `001 ${nick} :Welcome to the ${network} Internet Relay Chat Network ${nick}!${user}@${HOST}`,
          `002 ${nick} :Your host is ${config.serverName}, running version ${SERVER_VERSION}`,
          `003 ${nick} :This server was created for a test`,
          `004 ${nick} ${config.serverName} ${SERVER_VERSION} iowx biklmnopstv`
        ]
        for (let i = 0; i < isupport.length; i += ISUPPORT_TOKENS_PER_LINE) {
          lines.push(`005 ${nick} ${isupport.slice(i, i + ISUPPORT_TOKENS_PER_LINE).join(" ")} :are supported by this server`)
        }
        if (motd === null || motd.length === 0) lines.push(`422 ${nick} :MOTD File is missing`)
        else {
          lines.push(`375 ${nick} :- ${config.serverName} Message of the Day -`)
          for (const text of motd) lines.push(`372 ${nick} :- ${text}`)
          lines.push(`376 ${nick} :End of /MOTD command.`)
        }
        return reply(...lines)
      }

      const step = (raw: string): Effect.Effect<void, FakeIrcError> => {
        const line = parseLine(raw)
        switch (line.command) {
          case "CAP":
            return onCap(line)
          case "AUTHENTICATE":
            return onAuthenticate(line)
          case "PASS":
            return Effect.sync(() => {
              pass = line.params[0]
            })
          case "NICK":
            return onNick(line)
          case "USER":
            return Effect.sync(() => {
              username = line.params[0] ?? ""
              realname = line.params[3] ?? ""
            })
          default:
            return Effect.sync(() => {
              skippedLog.push(raw)
            })
        }
      }

      const loop: Effect.Effect<Registration, FakeIrcError> = Effect.suspend(() => {
        if (clientNick !== undefined && username !== undefined && (!capStarted || capEnded)) {
          const nick = nickArg ?? clientNick
          const registration: Registration = {
            nick,
            clientNick,
            nicksTried,
            username,
            realname,
            pass,
            capNegotiated: capStarted,
            capsRequested,
            capsEnabled: [...enabled],
            sasl: saslCredentials,
            saslSucceeded
          }
          return Effect.as(burst(nick, username), registration)
        }
        return takeNext(`registration (${phase})`).pipe(Effect.flatMap(step), Effect.zipRight(loop))
      })

      return withDeadline(loop, d, () =>
        fail(
          "Timeout",
          `timed out after ${Duration.format(d)} in registration: have NICK=${clientNick ?? "-"} USER=${
            username === undefined ? "-" : "yes"
          } CAP=${capStarted ? (capEnded ? "ended" : "negotiating") : "not started"}${
            saslMechanism === undefined ? "" : " SASL=in progress"
          }`
        ))
    })

  const flood = (count: number, makeLine: (i: number) => string, options: FloodOptions = {}) =>
    Effect.async<FloodStats, FakeIrcError>((resume) => {
      let i = 0
      let bytes = 0
      let backpressureWaits = 0
      let maxBuffered = 0
      let finished = false
      const finish = (effect: Effect.Effect<FloodStats, FakeIrcError>) => {
        if (finished) return
        finished = true
        socket.off("drain", pump)
        socket.off("close", onClose)
        resume(effect)
      }
      const stats = (): FloodStats => ({ lines: i, bytes, backpressureWaits, maxBuffered, highWaterMark: socket.writableHighWaterMark })
      const onClose = () => finish(Effect.fail(fail("Closed", `connection closed during flood after ${i} of ${count} lines`)))
      function pump(): void {
        while (!finished) {
          if (!writable()) return onClose()
          let chunk = ""
          while (i < count && chunk.length < FLOOD_BATCH_BYTES) chunk += makeLine(i++) + "\r\n"
          if (chunk === "") return finish(Effect.succeed(stats()))
          bytes += Buffer.byteLength(chunk)
          const last = i >= count
          // The last write resolves only once everything is handed to the kernel, so "done" means flushed.
          const ok = socket.write(chunk, last ? (error) => {
            if (error == null) finish(Effect.succeed(stats()))
            else onClose()
          } : undefined)
          maxBuffered = Math.max(maxBuffered, socket.writableLength)
          if (last) return
          if (!ok) {
            backpressureWaits++
            options.onBackpressure?.(i)
            socket.once("drain", pump)
            return
          }
        }
      }
      socket.once("close", onClose)
      pump()
      return Effect.sync(() => {
        finished = true
        socket.off("drain", pump)
        socket.off("close", onClose)
      })
    })

  const waitClosed = (timeout?: Duration.DurationInput) => {
    const d = timeoutOf(timeout)
    return withDeadline(
      Deferred.await(closed),
      d,
      () => fail("Timeout", `timed out after ${Duration.format(d)} waiting for the connection to close`)
    )
  }

  const reset = () => {
    try {
      // RST rather than FIN: the peer sees ECONNRESET, like a dropped route. Only a plain TCP handle can do this.
      raw.resetAndDestroy()
    } catch {
      raw.destroy()
    }
    socket.destroy()
  }

  const destroy = Effect.suspend(() => {
    if (!isClosed) reset()
    return Deferred.await(closed)
  })

  const close = (reason?: string) =>
    Effect.suspend(() => {
      if (isClosed) return Effect.void
      if (reason !== undefined && writable()) socket.write(`ERROR :${reason}\r\n`)
      socket.end()
      return waitClosed().pipe(
        Effect.catchAll(() => Effect.zipRight(Effect.sync(() => socket.destroy()), Deferred.await(closed)))
      )
    })

  const connection: FakeIrcConnection = {
    id,
    remotePort,
    expectNext,
    waitFor,
    send,
    register,
    flood,
    lines: Effect.sync(() => log.slice()),
    skipped: Effect.sync(() => skippedLog.slice()),
    setAutoPong: (enabled) =>
      Effect.sync(() => {
        autoPong = enabled
      }),
    isOpen: Effect.sync(() => !isClosed),
    waitClosed,
    close,
    destroy
  }
  return { connection, closed, socket }
}

/** `flood(conn, lines, makeLine)`: the benchmark's spelling of `conn.flood`. */
export const flood = (
  connection: FakeIrcConnection,
  lines: number,
  makeLine: (i: number) => string,
  options?: FloodOptions
): Effect.Effect<FloodStats, FakeIrcError> => connection.flood(lines, makeLine, options)

// ---------------------------------------------------------------------------------------------------------------
// Server.

export const make = (options: FakeIrcServerOptions = {}): Effect.Effect<FakeIrcServer, never, Scope.Scope> =>
  Effect.gen(function*() {
    const config: Config = {
      serverName: options.serverName ?? DEFAULT_SERVER_NAME,
      caps: options.caps !== undefined ? options.caps : [],
      sasl: options.sasl ?? "success",
      motd: options.motd !== undefined ? options.motd : DEFAULT_MOTD,
      isupport: options.isupport ?? DEFAULT_ISUPPORT,
      autoPong: options.autoPong ?? true,
      timeout: Duration.decode(options.timeout ?? DEFAULT_TIMEOUT)
    }
    const secureContext = options.tls === true
      ? tls.createSecureContext({ key: FAKE_IRC_TLS_KEY, cert: FAKE_IRC_TLS_CERT })
      : undefined
    // Created before the listener so its finalizer (interrupting onConnection fibers) runs after stop.
    const runFork = yield* FiberSet.makeRuntime<never>()
    const incoming = yield* Queue.unbounded<FakeIrcConnection>()

    let listener: net.Server | undefined
    let refusing = options.refuse ?? false
    let accepted = 0
    let refused = 0
    const handlerFailures: Array<string> = []
    const open = new Set<ConnectionHandle>()
    const rawSockets = new Set<net.Socket>()

    const onSocket = (raw: net.Socket) => {
      rawSockets.add(raw)
      raw.once("close", () => rawSockets.delete(raw))
      raw.on("error", () => {})
      if (refusing) {
        refused++
        raw.destroy()
        return
      }
      accepted++
      const socket = secureContext === undefined ? raw : new tls.TLSSocket(raw, { isServer: true, secureContext })
      const handle = makeConnection(accepted, socket, raw, config)
      open.add(handle)
      socket.once("close", () => open.delete(handle))
      incoming.unsafeOffer(handle.connection)
      if (options.onConnection !== undefined) {
        runFork(
          options.onConnection(handle.connection).pipe(
            Effect.catchAllCause((cause) =>
              Cause.isInterruptedOnly(cause)
                ? Effect.void
                : Effect.sync(() => {
                  handlerFailures.push(`connection #${handle.connection.id}: ${Cause.pretty(cause)}`)
                })
            )
          )
        )
      }
    }

    const listen = (port: number) =>
      Effect.async<number, Error>((resume) => {
        const server = net.createServer({ noDelay: true }, onSocket)
        const onError = (error: Error) => resume(Effect.fail(error))
        server.once("error", onError)
        server.listen({ host: HOST, port, backlog: LISTEN_BACKLOG }, () => {
          server.off("error", onError)
          server.on("error", () => {})
          listener = server
          const address = server.address()
          resume(Effect.succeed(typeof address === "object" && address !== null ? address.port : port))
        })
      }).pipe(Effect.orDie)

    const stop: Effect.Effect<void> = Effect.suspend(() => {
      const server = listener
      listener = undefined
      const closing = [...open].map((handle) => handle.closed)
      for (const handle of open) handle.socket.destroy()
      for (const raw of rawSockets) raw.destroy()
      const closeListener = server === undefined
        ? Effect.void
        : Effect.async<void>((resume) => {
          server.close(() => resume(Effect.void))
        })
      return Effect.zipRight(closeListener, Effect.forEach(closing, Deferred.await, { discard: true }))
    })

    const port = yield* Effect.acquireRelease(listen(0), () => stop)

    const nextConnection = (timeout?: Duration.DurationInput) => {
      const d = timeout === undefined ? config.timeout : Duration.decode(timeout)
      return withDeadline(
        Queue.take(incoming),
        d,
        () =>
          new FakeIrcError({
            reason: "Timeout",
            message: `FakeIrcServer :${port}: no connection within ${Duration.format(d)} (accepted ${accepted}, refused ${refused}, ${
              listener === undefined ? "stopped" : refusing ? "refusing" : "listening"
            })`
          })
      )
    }

    const server: FakeIrcServer = {
      host: HOST,
      port,
      tls: secureContext !== undefined,
      serverName: config.serverName,
      nextConnection,
      connections: Effect.sync(() => open.size),
      stats: Effect.sync(() => ({
        accepted,
        refused,
        open: open.size,
        listening: listener !== undefined,
        handlerFailures: handlerFailures.slice()
      })),
      setRefusing: (refuse) =>
        Effect.sync(() => {
          refusing = refuse
        }),
      stop,
      restart: Effect.zipRight(stop, Effect.asVoid(listen(port)))
    }
    return server
  })

/**
 * For plain Node scripts (the benchmark harness): starts a server in its own Scope. Run the returned server's
 * Effects with `Effect.runPromise`; `close` ends the scope (stop + interrupt onConnection fibers).
 */
export const startFakeIrcServer = async (
  options: FakeIrcServerOptions = {}
): Promise<{ readonly server: FakeIrcServer; readonly close: () => Promise<void> }> => {
  const scope = Effect.runSync(Scope.make())
  const server = await Effect.runPromise(Scope.extend(make(options), scope))
  return { server, close: () => Effect.runPromise(Scope.close(scope, Exit.void)) }
}
