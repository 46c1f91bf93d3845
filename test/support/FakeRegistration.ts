/**
 * FakeRegistration: the server side of IRC registration that `FakeIrcConnection.register` plays: CAP negotiation
 * (IRCv3 capability-negotiation), SASL PLAIN (IRCv3 sasl-3.1), PASS, NICK (with 433 for rejected nicks), USER, then the
 * welcome burst (001–005 and the MOTD). It owns the per-run registration state and the reply script; the socket, the
 * inbox and the log stay with the connection, reached through a `RegistrationSession`.
 *
 * Concurrency rule: each run of `playRegistration` keeps its state in its own closure and is the inbox's one consumer
 * while it runs (see FakeIrcConnection): never run it next to expectNext/waitFor on the same connection. The wait is
 * bounded on the live clock (FakeIrcError's `withDeadline`).
 */
import { Duration, Effect } from "effect"
import { type FakeIrcError, withDeadline } from "./FakeIrcError.js"
import { type FakeLine, parseLine } from "./FakeLine.js"

// Constants, in one block (soju server.go habit).
const SERVER_VERSION = "fakeircd-1"
/** RFC 2812 §2.3: at most 15 parameters; 005 spends two on the nick and the trailing text, so 13 tokens a line. */
const ISUPPORT_TOKENS_PER_LINE = 13
/** IRCv3 capability-negotiation (CAP LS 302): split long LS replies into "LS *" continuation lines. */
const CAP_LS_LINE_BUDGET = 400
/** IRCv3 sasl-3.1 "AUTHENTICATE": payloads come in 400-byte chunks; a shorter chunk (or "+") ends the payload. */
const SASL_CHUNK_LENGTH = 400

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

/** The server-wide registration behaviour, which `RegisterOptions` override per call. */
export interface RegistrationDefaults {
  readonly serverName: string
  /** The address the client is seen from, in 001 and 900. */
  readonly host: string
  readonly caps: ReadonlyArray<string> | null
  readonly sasl: SaslBehaviour
  readonly motd: ReadonlyArray<string> | null
  readonly isupport: ReadonlyArray<string>
  readonly timeout: Duration.Duration
}

/** What registration needs of the connection it runs on. */
export interface RegistrationSession {
  readonly defaults: RegistrationDefaults
  /** The next unconsumed line; fails with Closed once the socket is gone. */
  readonly takeNext: (waitingFor: string) => Effect.Effect<string, FakeIrcError>
  readonly send: (...lines: ReadonlyArray<string>) => Effect.Effect<void, FakeIrcError>
  /** Records a line passed over (the connection's `skipped`). */
  readonly skip: (raw: string) => void
  readonly fail: (reason: FakeIrcError["reason"], what: string) => FakeIrcError
}

const capName = (cap: string): string => {
  const eq = cap.indexOf("=")
  return eq === -1 ? cap : cap.slice(0, eq)
}

/** `FakeIrcConnection.register`: see its documentation there. */
export const playRegistration = (
  session: RegistrationSession,
  nickArg?: string,
  isupportArg?: ReadonlyArray<string>,
  options: RegisterOptions = {}
): Effect.Effect<Registration, FakeIrcError> =>
  // Suspended so each run of the returned Effect starts from fresh registration state.
  Effect.suspend(() => {
    const { defaults: config, fail, send, takeNext } = session
    const src = `:${config.serverName}`
    const caps = options.caps !== undefined ? options.caps : config.caps
    const sasl = options.sasl ?? config.sasl
    const motd = options.motd !== undefined ? options.motd : config.motd
    const isupport = isupportArg ?? config.isupport
    const rejectNicks = new Set(options.rejectNicks ?? [])
    const d = options.timeout === undefined ? config.timeout : Duration.decode(options.timeout)
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
          `900 ${target()} ${target()}!${username ?? "*"}@${config.host} ${account} :You are now logged in as ${account}`,
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
        `001 ${nick} :Welcome to the ${network} Internet Relay Chat Network ${nick}!${user}@${config.host}`,
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
          return Effect.sync(() => session.skip(raw))
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
