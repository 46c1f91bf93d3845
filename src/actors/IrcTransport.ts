/**
 * IrcTransport: the port between a network actor and an IRC socket. The Live layer drives irc-framework 4.14 for
 * the socket, TLS, CAP negotiation, SASL PLAIN and PING answers, and hands every line the server sends to the actor
 * unparsed; everything else (registration outcome, nick fallback, keepalive, reconnect, state) is the actor's.
 *
 * Concurrency rule: irc-framework runs on Node's event loop. Its callbacks never touch actor state; they only call
 * the `emit` function given to `open`, which must be non-blocking (the actor passes `Queue.unsafeOffer` on its
 * unbounded inbox). The returned connection's methods are synchronous and may be called from the actor's
 * dispatcher; they never throw.
 *
 * irc-framework pitfalls handled here (src/irc/irc-framework.d.ts):
 * - `auto_reconnect: false`: the actor owns the reconnect policy.
 * - `ping_interval: 0`, `ping_timeout: 0`: its keepalive runs on real timers; the actor's runs on Effect's Clock.
 *   (Both at 0 also leave the socket without an idle timeout.)
 * - `account: {}` when no SASL is configured, or the server password would also be tried as SASL PLAIN.
 * - `version: null`: no automatic CTCP VERSION reply naming the library.
 * - `enable_echomessage: true`: echo-message is requested when offered, so our own sends come back with the
 *   server's view (time, STATUSMSG) and are stored from the echo. labeled-response is requested too (`requestCap`).
 * - `sasl_disconnect_on_fail: true`: a failed login must not go on to register unauthenticated.
 * - Writes go straight to `connection.write`, never `raw()`/`say()` (which reformat or split text); the caller has
 *   refused CR, LF and NUL already.
 * - The socket error arrives as the argument of `socket close`, never as `socket error`.
 * - One `Client` per connection attempt: `network.options` and CAP state are not reset by a reconnect.
 * - Its socket class keeps what follows the last line break as a slice of the buffer the last read was joined into,
 *   even when that is nothing, and small buffers are slices of Node's shared 8 KiB pool: an idle connection would
 *   keep a whole pool slab alive. `LeanNetTransport` (passed as its `transport` option) keeps an empty shared buffer
 *   instead, or a copy of the partial line in memory of its own.
 * - The keepalive's answer never reaches irc-framework or the actor as a line (`LeanNetTransport`, below).
 * - Every Client builds its own table of command handlers (`command_handler.handlers`, an Array used as a map of
 *   some 200 names, so a dictionary of ~6 KiB), though every entry is a module-level function of the library, or a
 *   closure over module-level data, taking the client's handler as an argument: the same for every client. Each
 *   client is given the first one's table (`shareCommandTable`); nothing adds handlers after construction.
 */
import { Context, Duration, Layer } from "effect"
import IRC from "irc-framework"
import NetTransport from "irc-framework/src/transports/net.js"
import { QUIT_GRACE } from "./ReconnectPolicy.js"

export interface TransportOptions {
  readonly host: string
  readonly port: number
  readonly tls: boolean
  /** Skip certificate verification (`--tls-insecure`). */
  readonly tlsInsecure: boolean
  readonly nick: string
  readonly username: string
  readonly realname: string
  readonly serverPassword: string | null
  readonly sasl: { readonly username: string; readonly password: string } | null
}

/** What the transport reports, in socket order. */
export type TransportEvent =
  /** The socket (and TLS) is up; registration lines are on their way. */
  | { readonly _tag: "Opened" }
  /** One line from the server, as received (terminator possibly included). */
  | { readonly _tag: "Line"; readonly line: string }
  /** irc-framework gave up on SASL (also for reasons without a numeric, e.g. a mechanism the server lacks). */
  | { readonly _tag: "SaslFailed"; readonly reason: string; readonly message: string | null }
  /** The socket is gone; `error` is the socket error when there was one (ECONNREFUSED, certificate…). */
  | { readonly _tag: "Closed"; readonly error: string | null }

export interface IrcConnection {
  /** Writes one line (CR-LF added). False when the socket cannot take it (not open, or closing). */
  readonly write: (line: string) => boolean
  /** Sends QUIT, half-closes, and destroys the socket if the server has not closed it within QUIT_GRACE. */
  readonly quit: (message: string) => void
  /** Closes the socket at once (dead link, timeout, shutdown deadline). */
  readonly destroy: () => void
  /**
   * Writes the keepalive PING (`PING belay-keepalive`); false as `write`. The server's PONG to it is not delivered
   * as a line: it only sets `keepaliveAnswered` until the next keepalive PING.
   */
  readonly sendKeepalive: () => boolean
  /** Whether the server answered the last keepalive PING (its PONG echoed the token). */
  readonly keepaliveAnswered: () => boolean
}

export interface IrcTransportService {
  /** Starts connecting; events arrive through `emit` until (and including) one `Closed`. */
  readonly open: (options: TransportOptions, emit: (event: TransportEvent) => void) => IrcConnection
}

export class IrcTransport extends Context.Tag("belay/IrcTransport")<IrcTransport, IrcTransportService>() {}

const describeError = (error: unknown): string | null => {
  if (error === false || error === undefined || error === null) return null
  if (error instanceof Error) {
    const code = "code" in error && typeof error.code === "string" ? error.code : undefined
    return code !== undefined && !error.message.includes(code) ? `${code}: ${error.message}` : error.message
  }
  return String(error)
}

/** The token of the keepalive PING; servers echo it as the PONG's last parameter (RFC 2812 §3.7.3). */
const KEEPALIVE_TOKEN = "belay-keepalive"
const KEEPALIVE_PING = `PING ${KEEPALIVE_TOKEN}`

/**
 * The PONG answering our keepalive PING, as a line from the server: tags and source optional, any middle
 * parameters (the server's name), the token last, trailing or not (RFC 1459 §2.3.1 grammar; the command's case as
 * parseLine takes it). A regular expression test, not a parse: it runs on every line holding the token and builds
 * no strings.
 */
const KEEPALIVE_ANSWER = new RegExp(
  String.raw`^(?:@[^ ]+ +)?(?::[^ ]+ +)?[Pp][Oo][Nn][Gg](?: +[^: ][^ ]*)* +:?` + KEEPALIVE_TOKEN + String.raw`\r?\n?$`
)

const isKeepaliveAnswer = (line: string): boolean => line.includes(KEEPALIVE_TOKEN) && KEEPALIVE_ANSWER.test(line)

const NOTHING = Buffer.alloc(0)

/**
 * irc-framework's socket class, keeping no slice of a read buffer between reads (see the pitfalls above), and
 * keeping the keepalive's answer to itself: an idle connection's only traffic is that PING and its PONG, every
 * 90 s, and a PONG passed on as a line costs irc-framework's parse and handlers, then a wake of the actor's
 * dispatcher with its reducer run, for a line that is not history (its one effect is to prove the link alive). At
 * ten thousand idle networks that was most of what the process allocated while idle, enough to keep V8's young
 * generation at its largest (docs/architecture.md "Memory"). The actor asks `keepaliveAnswered` at its deadline.
 */
export class LeanNetTransport extends NetTransport {
  keepaliveAnswered = false

  override emit(event: string | symbol, ...args: Array<unknown>): boolean {
    if (event === "line" && typeof args[0] === "string" && isKeepaliveAnswer(args[0])) {
      this.keepaliveAnswered = true
      return true
    }
    return super.emit(event, ...args)
  }

  override onSocketData(data: Buffer): void {
    super.onSocketData(data)
    const rest = this.incoming_buffer
    if (rest.length === 0) {
      this.incoming_buffer = NOTHING
    } else if (rest.buffer.byteLength !== rest.length) {
      // A partial line: copied out of the (possibly pooled) buffer it is a slice of.
      const own = Buffer.allocUnsafeSlow(rest.length)
      rest.copy(own)
      this.incoming_buffer = own
    }
  }
}

/** The command handler table every Client gets (see the pitfalls above); the first client's. */
let commandTable: unknown
const shareCommandTable = (client: IRC.Client) => {
  const handler = (client as unknown as { command_handler?: { handlers?: unknown } }).command_handler
  if (handler === undefined || handler.handlers === undefined) return
  if (commandTable === undefined) commandTable = handler.handlers
  else handler.handlers = commandTable
}

const open = (options: TransportOptions, emit: (event: TransportEvent) => void): IrcConnection => {
  const client = new IRC.Client()
  shareCommandTable(client)
  // Not in irc-framework's default list; the IRC client listener labels the commands its clients pass upstream so
  // that the answers go back to the asker (src/listener/UpstreamLabels.ts). Only labelled commands get labelled replies.
  client.requestCap("labeled-response")
  let closed = false
  client.on("raw", (event) => {
    if (event.from_server) emit({ _tag: "Line", line: event.line })
  })
  client.on("socket connected", () => emit({ _tag: "Opened" }))
  client.on("sasl failed", (event) => emit({ _tag: "SaslFailed", reason: event.reason, message: event.message ?? null }))
  client.on("socket close", (error) => {
    if (closed) return
    closed = true
    emit({ _tag: "Closed", error: describeError(error) })
  })

  // irc-framework's connect can throw synchronously on bad options (e.g. an invalid port); report it as a close.
  try {
    client.connect({
      host: options.host,
      port: options.port,
      tls: options.tls,
      rejectUnauthorized: !options.tlsInsecure,
      nick: options.nick,
      username: options.username,
      gecos: options.realname,
      ...(options.serverPassword !== null ? { password: options.serverPassword } : {}),
      account: options.sasl !== null ? { account: options.sasl.username, password: options.sasl.password } : {},
      sasl_disconnect_on_fail: true,
      auto_reconnect: false,
      ping_interval: 0,
      ping_timeout: 0,
      enable_echomessage: true,
      version: null,
      transport: LeanNetTransport
    })
  } catch (error) {
    closed = true
    queueMicrotask(() => emit({ _tag: "Closed", error: describeError(error) ?? "could not connect" }))
  }

  const destroy = () => {
    try {
      // `had_error` makes irc-framework destroy the socket instead of a graceful end.
      client.connection.end(undefined, true)
    } catch {
      // already gone
    }
  }

  const write = (line: string) => {
    try {
      return client.connection.write(line)
    } catch {
      return false
    }
  }
  /** The socket class in use (irc-framework makes it in `connect`); absent when `connect` threw. */
  const transport = (): LeanNetTransport | undefined => {
    const current = client.connection?.transport
    return current instanceof LeanNetTransport ? current : undefined
  }

  return {
    write,
    quit: (message) => {
      try {
        client.quit(message)
      } catch {
        destroy()
        return
      }
      // A safety net only (the actor has its own deadlines on Effect's Clock): never leave a half-closed socket.
      setTimeout(destroy, Duration.toMillis(QUIT_GRACE)).unref()
    },
    destroy,
    sendKeepalive: () => {
      const t = transport()
      if (t !== undefined) t.keepaliveAnswered = false
      return write(KEEPALIVE_PING)
    },
    keepaliveAnswered: () => transport()?.keepaliveAnswered === true
  }
}

export const IrcTransportLive: Layer.Layer<IrcTransport> = Layer.succeed(IrcTransport, { open })
