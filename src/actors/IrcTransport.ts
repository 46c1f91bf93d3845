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
 * - Where the destination guard checked the address (BELAY_PRIVATE_DESTINATIONS=deny), the socket goes to that
 *   address and no other: irc-framework would look the host up again, so `LeanNetTransport.connect` opens the
 *   socket itself (its option `pinned`), with the name as the TLS server name (docs/decisions/hosting.md "One
 *   destination guard"). The check runs before the socket; a refusal is `Refused`, never a packet.
 * - The member's face upstream (docs/decisions/hosting.md "Each member their own face upstream"): the socket binds the
 *   member's source address (`outgoing_addr`, which `LeanNetTransport.connect` passes as `localAddress`), and goes to
 *   an address of the source's family that the guard resolved for it (under `allow` too: irc-framework's own lookup
 *   would take the name's first answer, of either family), and once it is connected ("raw socket connected", before
 *   TLS: a server asks ident as soon as it accepts) its four addresses and ports go to this node's ident server with
 *   the member's ident, until it closes.
 * - Every Client builds its own table of command handlers (`command_handler.handlers`, an Array used as a map of
 *   some 200 names, so a dictionary of ~6 KiB), though every entry is a module-level function of the library, or a
 *   closure over module-level data, taking the client's handler as an argument: the same for every client. Each
 *   client is given the first one's table (`shareCommandTable`); nothing adds handlers after construction.
 */
import * as Net from "node:net"
import * as Tls from "node:tls"
import { Context, Duration, Effect, Exit, Layer, Option, Runtime } from "effect"
import IRC from "irc-framework"
import NetTransport from "irc-framework/src/transports/net.js"
import { DestinationGuard, type PinnedDestination } from "../services/egress/DestinationGuard.js"
import { IdentServer } from "../services/egress/IdentServer.js"
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
  /** The member's ident, answered by this node's ident server for the connection; absent or null: none. */
  readonly ident?: string | null | undefined
  /** The member's source address (BELAY_UPSTREAM_SOURCE); absent or null: the node's own. */
  readonly localAddress?: string | null | undefined
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
  /**
   * The destination guard refused the address before any socket was opened; `reason` begins with `locked-down:`
   * (the interface's word). Permanent: the network stays offline until its host changes or it is connected again.
   */
  | { readonly _tag: "Refused"; readonly reason: string }

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
/** irc-framework's state for a socket being opened (src/transports/net.js). */
const SOCK_CONNECTING = 1

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

  /**
   * irc-framework's own connect, but to the guard's address when there is one (no second lookup), the name kept
   * for TLS (SNI and the certificate check: Node verifies `servername` when given). SOCKS is never configured.
   */
  override connect(): void {
    const pinned = this.options.pinned
    if (pinned === undefined) return super.connect()
    this.disposeSocket()
    this.requested_disconnect = false
    this.incoming_buffer = NOTHING
    if (this.options.encoding === undefined || !this.setEncoding(this.options.encoding)) this.setEncoding("utf8")
    this.state = SOCK_CONNECTING
    const localAddress = this.options.outgoing_addr
    const target = {
      host: pinned.address,
      port: this.options.port ?? 6667,
      family: pinned.family,
      ...(localAddress !== undefined ? { localAddress } : {})
    }
    const socket = this.options.tls === true
      ? Tls.connect({
        ...target,
        servername: Net.isIP(pinned.name) === 0 ? pinned.name : undefined,
        rejectUnauthorized: this.options.rejectUnauthorized
      })
      : Net.connect(target)
    this.socket = socket
    this._onSocketCreate(this.options, socket)
  }

  /**
   * irc-framework's, but a TLS socket is told by the option that made it rather than by `socket instanceof
   * tls.TLSSocket`: reading `TLSSocket` would load node:tls (some 3 MB, scripts/build-server.mjs "lazy-node-tls") for
   * every plain connection. Both sockets it is given come from `connect`: `Tls.connect` exactly when `options.tls`.
   */
  override _onSocketCreate(options: IRC.ClientOptions, socket: Net.Socket): void {
    this.debugOut("Socket created!")
    const pingInterval = options.ping_interval ?? 0
    const pingTimeout = options.ping_timeout ?? 0
    if (pingInterval > 0 && pingTimeout > 0) socket.setTimeout((pingInterval + pingTimeout) * 1000)
    const secure = options.tls === true
    if (socket.readyState !== "opening") {
      this.onSocketRawConnected()
      if (!secure) this.onSocketFullyConnected()
    } else {
      this._bindEvent(socket, "connect", this.onSocketRawConnected.bind(this))
    }
    this._bindEvent(socket, secure ? "secureConnect" : "connect", this.onSocketFullyConnected.bind(this))
    this._bindEvent(socket, "close", this.onSocketClose.bind(this))
    this._bindEvent(socket, "error", this.onSocketError.bind(this))
    this._bindEvent(socket, "data", this.onSocketData.bind(this))
    this._bindEvent(socket, "timeout", this.onSocketTimeout.bind(this))
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
  const handler = client.command_handler
  if (handler === undefined || handler.handlers === undefined) return
  if (commandTable === undefined) commandTable = handler.handlers
  else handler.handlers = commandTable
}

/** `4` or `6`, the family of an address literal. */
const familyOf = (address: string): 4 | 6 => (Net.isIPv6(address) ? 6 : 4)

const open = (
  guard: DestinationGuard,
  identServer: IdentServer | undefined,
  runtime: Runtime.Runtime<never>,
  options: TransportOptions,
  emit: (event: TransportEvent) => void
): IrcConnection => {
  const client = new IRC.Client()
  shareCommandTable(client)
  // Not in irc-framework's default list; the IRC client listener labels the commands its clients pass upstream so
  // that the answers go back to the asker (src/listener/UpstreamLabels.ts). Only labelled commands get labelled replies.
  client.requestCap("labeled-response")
  // IRCv3 draft/multiline, draft/message-redaction and setname (message-tags is in irc-framework's own list): what the
  // member's clients send through Belay (src/listener/Multiline.ts, REDACT, SETNAME) goes upstream only where the
  // server has them.
  client.requestCap(["draft/multiline", "draft/message-redaction", "setname"])
  let closed = false
  client.on("raw", (event) => {
    if (event.from_server) emit({ _tag: "Line", line: event.line })
  })
  client.on("socket connected", () => emit({ _tag: "Opened" }))
  const ident = options.ident ?? null
  if (identServer?.enabled === true && ident !== null) {
    client.on("raw socket connected", (socket) => {
      if (!(socket instanceof Net.Socket)) return
      const { localAddress, localPort, remoteAddress, remotePort } = socket
      if (localAddress === undefined || localPort === undefined || remoteAddress === undefined || remotePort === undefined) {
        return
      }
      const unregister = identServer.register({ localAddress, localPort, remoteAddress, remotePort, ident })
      socket.once("close", unregister)
    })
  }
  const sourceAddress = options.localAddress ?? null
  client.on("sasl failed", (event) => emit({ _tag: "SaslFailed", reason: event.reason, message: event.message ?? null }))
  client.on("socket close", (error) => {
    if (closed) return
    closed = true
    emit({ _tag: "Closed", error: describeError(error) })
  })

  const connect = (pinned: PinnedDestination | undefined) => {
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
      transport: LeanNetTransport,
      ...(sourceAddress !== null ? { outgoing_addr: sourceAddress } : {}),
      pinned: pinned?.address != null && pinned.family !== null
        ? { name: pinned.name, address: pinned.address, family: pinned.family }
        : undefined
    })
  } catch (error) {
    closed = true
    queueMicrotask(() => emit({ _tag: "Closed", error: describeError(error) ?? "could not connect" }))
  }
  }

  if (guard.mode === "allow" && sourceAddress === null) {
    // Nothing to check: connect by name at once, as irc-framework always did.
    connect(undefined)
  } else {
    // A socket bound to a source address of one family reaches only addresses of that family: the guard resolves the
    // name for it (under `allow` too), and says so when the name has none (docs/decisions/hosting.md "Each member
    // their own face upstream").
    const family = sourceAddress === null ? undefined : familyOf(sourceAddress)
    Runtime.runCallback(runtime)(guard.check(options.host, options.port, { family }), {
      onExit: (exit) => {
        // Ended (quit or destroy) while the name was being checked: no socket at all.
        if (closed) return
        if (Exit.isSuccess(exit)) return connect(exit.value)
        closed = true
        const failure = Exit.isFailure(exit) && exit.cause._tag === "Fail" ? exit.cause.error : undefined
        if (failure?._tag === "DestinationRefused") return emit({ _tag: "Refused", reason: `locked-down: ${failure.message}` })
        // Not found, or none of the family: an ordinary failure, retried (the name's answer may change).
        const needs = family === undefined ? "" : `, which the source address ${sourceAddress} (BELAY_UPSTREAM_SOURCE) needs`
        emit({ _tag: "Closed", error: failure === undefined ? "could not connect" : `${failure.message}${needs}` })
      }
    })
  }

  const destroy = () => {
    if (client.connection?.transport == null && !closed) {
      // Still checking the destination: end here, with the Closed the actor waits for.
      closed = true
      queueMicrotask(() => emit({ _tag: "Closed", error: null }))
      return
    }
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

/**
 * The real transport; every connect asks the destination guard first. Its sockets go to this node's ident server
 * when there is one in context (main.ts's Services).
 */
export const IrcTransportLive: Layer.Layer<IrcTransport, never, DestinationGuard> = Layer.effect(
  IrcTransport,
  Effect.gen(function*() {
    const guard = yield* DestinationGuard
    const identServer = Option.getOrUndefined(yield* Effect.serviceOption(IdentServer))
    const runtime = yield* Effect.runtime<never>()
    return { open: (options, emit) => open(guard, identServer, runtime, options, emit) }
  })
)
