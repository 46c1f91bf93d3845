/**
 * Downstream: the state of one IRC client connection (its capabilities, sign-in, bound network, the lines it sent
 * that still wait for their stored echo) and the one way lines reach its socket. A connection whose socket holds more
 * than OUTBOUND_BYTES unread is a slow client: it is closed, alone (docs/contract.md "The IRC client listener").
 *
 * Labeled responses (IRCv3 labeled-response): while a labeled command is handled, `reply` collects its answers; the
 * session then sends them labeled — one line carries the label, several go in a `labeled-response` batch, none is
 * an `ACK` — unless the command went upstream under a label of Belay's, whose answer then carries the client's label
 * (UpstreamLabels.ts).
 *
 * Concurrency rule: one record per connection, read and changed only by that connection's session fiber
 * (DownstreamSession.ts); `write` and `flush` are synchronous.
 */
import type * as Net from "node:net"
import { Effect } from "effect"
import { type CaseMapping, DEFAULT_CASE_MAPPING } from "../irc/CaseMapping.js"
import type { IrcLineInput } from "../irc/IrcLine.js"
import { ALL_PASSTHROUGH, type CapState, initialCapState } from "./CapNegotiation.js"
import { type ClientView, ownLine, type WhoxRequest } from "./MessageLines.js"
import type { OpenMultiline, PendingMultilineEcho } from "./MultilineState.js"
import type { SessionHandle } from "./SessionHub.js"
import type { SignInName } from "./SignInName.js"

/** Bytes a client may leave unread in its socket before it is closed as too slow. */
export const OUTBOUND_BYTES = 1024 * 1024
/** Queued output past this is written without waiting for the end of the step (a long backlog, a big page). */
const FLUSH_BYTES = 64 * 1024

/** The source of the lines Belay itself makes (numerics, CAP, BATCH, FAIL). */
export const SERVER_NAME = "belay"

/**
 * What a client signed in with, so that it ends when that ends (SignIn.ts): a token by its row (revoked →
 * CredentialRevocations), the password by the account's last recovery as it was at sign-in.
 */
export type SignInCredential =
  | { readonly kind: "api-token" | "oauth"; readonly tokenId: number; readonly grantedScope: "read" | "read-write" }
  | { readonly kind: "password"; readonly recoveredAt: number | null }

export interface SignedIn {
  readonly accountId: number
  readonly accountName: string
  readonly credential: SignInCredential
  /** A read token or a paused account: writes get FAIL … READ_ONLY. */
  readonly readOnly: boolean
}

/** A line this client sent that the history will bring back (MessageWriter.stored), matched by target and text. */
export interface OwnSend {
  readonly targetFolded: string
  remaining: string
  label: string | undefined
}

export interface Downstream {
  readonly id: number
  readonly socket: Net.Socket
  /** The client's address, and its rate-limit key (the address; an IPv6 /56 shares one). */
  readonly address: string
  readonly ipKey: string
  caps: CapState
  /** The client's nick before registration; the upstream nick afterwards. */
  nick: string
  user: SignInName | undefined
  userSeen: boolean
  pass: string | undefined
  /** SASL PLAIN in progress: the base64 chunks so far; undefined when no exchange is running. */
  sasl: string | undefined
  /** The payload in progress passed SASL_PAYLOAD_BYTES: its remaining chunks are read and dropped, then 904 once. */
  saslTooLong: boolean
  signedIn: SignedIn | undefined
  /** Signed in by SASL (a later AUTHENTICATE is 907), not by PASS. */
  saslSignedIn: boolean
  /** The name the client signed in with (USER, SASL or PASS), with its network and client parts. */
  signInName: SignInName | undefined
  /** BOUNCER BIND before registration. */
  bindNetworkId: number | undefined
  network: { readonly id: number; readonly name: string } | undefined
  registered: boolean
  closing: boolean
  /** What rendering needs (capabilities, nick, CHANTYPES, PREFIX). */
  view: ClientView
  /** The member's own nick!user@host upstream, when known. */
  selfSource: string | undefined
  /** CASEMAPPING of the bound network, for matching echoes to own sends. */
  caseMapping: CaseMapping
  /** The passthrough capabilities this client is offered now (CapNegotiation.passthroughChange). */
  passthrough: ReadonlySet<string>
  /** The capabilities the bound upstream enabled, as last heard (welcome, its CAP ACK/DEL, a reconnect). */
  upstreamCaps: ReadonlySet<string> | undefined
  /** Each network's state last seen by this client (bouncer-networks-notify says when it moves). */
  readonly lastStates: Map<number, string>
  /** Channels (folded) the member joined whose RPL_ENDOFNAMES is still to come: their MARKREAD goes before it. */
  readonly joinsAwaitingMarker: Set<string>
  /**
   * Channels (folded) the member joined whose implicit NAMES reply this client, with no-implicit-names, is not sent;
   * at most NAMES_SKIPPED, oldest dropped.
   */
  readonly namesSkipped: Set<string>
  /** Counted for auto-away (SessionHub): false after `AWAY *` under draft/pre-away, before or after registration. */
  present: boolean
  /** An AWAY message sent before registration under draft/pre-away, applied once the client is registered. */
  preAway: string | undefined
  /** The session as the hub knows it, once registered (its presence changes through SessionHub.setPresent). */
  handle: SessionHandle | undefined
  /** Own sends awaiting their echo, oldest first (at most OWN_SENDS). */
  readonly ownSends: Array<OwnSend>
  /** The newest stored message id sent to this client (backlog delivery). */
  delivered: number
  /** Lines queued by `write` for the socket, and their size; written by `flush` after each step of the session. */
  readonly out: Array<string>
  outBytes: number
  /** Replies collected for the labeled command being handled; undefined when none is. */
  collecting: Array<string> | undefined
  /**
   * Belay's labels on commands this client passed upstream (UpstreamLabels.ts) → the client's own label, or null when
   * it sent none, and for a WHOX request its fields (MessageLines.whoxRequest: where a 354's flags are); at
   * most UPSTREAM_LABELS, oldest dropped. Removed when the answer is complete.
   */
  readonly upstreamLabels: Map<string, { readonly client: string | null; readonly whox?: WhoxRequest }>
  /** The labelled command being handled went upstream with a label: the upstream answers it, not an empty ACK. */
  labelPassed: boolean
  batchSeq: number
  /** The draft/multiline batch this client has open (Multiline.ts); undefined when none is. */
  multiline: OpenMultiline | undefined
  /** Its sent multiline messages whose echo is being gathered (MultilineEcho.ts), oldest first; at most MULTILINE_ECHOES. */
  readonly multilineEchoes: Array<PendingMultilineEcho>
}

export const OWN_SENDS = 64
/** Channels joined at once whose implicit NAMES a no-implicit-names client is spared (a JOIN of many channels). */
export const NAMES_SKIPPED = 256
/** Labelled commands of one client awaiting the upstream's answer. */
export const UPSTREAM_LABELS = 64
/** Multiline messages of one client whose echo is awaited. */
export const MULTILINE_ECHOES = 8

export const makeDownstream = (id: number, socket: Net.Socket, address: string, ipKey: string): Downstream => ({
  id,
  socket,
  address,
  ipKey,
  caps: initialCapState,
  nick: "*",
  user: undefined,
  userSeen: false,
  pass: undefined,
  sasl: undefined,
  saslTooLong: false,
  signedIn: undefined,
  saslSignedIn: false,
  signInName: undefined,
  bindNetworkId: undefined,
  network: undefined,
  registered: false,
  closing: false,
  view: { caps: new Set(), selfNick: "*", channelTypes: "#&", prefixSymbols: "@+" },
  selfSource: undefined,
  caseMapping: DEFAULT_CASE_MAPPING,
  passthrough: ALL_PASSTHROUGH,
  upstreamCaps: undefined,
  lastStates: new Map(),
  joinsAwaitingMarker: new Set(),
  namesSkipped: new Set(),
  present: true,
  preAway: undefined,
  handle: undefined,
  ownSends: [],
  delivered: 0,
  out: [],
  outBytes: 0,
  collecting: undefined,
  upstreamLabels: new Map(),
  multiline: undefined,
  multilineEchoes: [],
  labelPassed: false,
  batchSeq: 0
})

/** Keeps the rendering view in step with the capabilities and nick. */
export const refreshView = (d: Downstream, patch: Partial<ClientView> = {}): void => {
  d.view = { ...d.view, caps: d.caps.enabled, selfNick: d.nick, ...patch }
}

/**
 * Queues one line for the socket; the session writes what a step queued at once (`flush`), so a batch of messages is
 * one write, not one system call a line.
 */
export const write = (d: Downstream, line: string): void => {
  if (d.closing || d.socket.destroyed) return
  d.out.push(line)
  d.outBytes += line.length + 2
  if (d.outBytes >= FLUSH_BYTES) flush(d)
}

/** Writes the queued lines; a client too slow to read is closed (see the module comment). */
export const flush = (d: Downstream): void => {
  if (d.out.length === 0) return
  const chunk = `${d.out.join("\r\n")}\r\n`
  d.out.length = 0
  d.outBytes = 0
  if (d.closing || d.socket.destroyed) return
  d.socket.write(chunk)
  if (d.socket.writableLength > OUTBOUND_BYTES) {
    d.closing = true
    d.socket.destroy()
  }
}

/** A reply to what the client sent: collected while a labeled command is handled, else written. */
export const reply = (d: Downstream, line: string): void => {
  if (d.collecting !== undefined) d.collecting.push(line)
  else write(d, line)
}

/** A line from Belay itself (source `belay`), as a reply. */
export const replyLine = (d: Downstream, line: IrcLineInput, tags: { readonly batch?: string } = {}): void =>
  reply(d, ownLine(d.view, { source: { nick: SERVER_NAME }, ...line }, tags))

/** A numeric to the client's nick. */
export const numeric = (d: Downstream, code: string, ...params: ReadonlyArray<string>): void =>
  replyLine(d, { command: code, params: [d.nick, ...params] })

/** An IRCv3 standard reply `FAIL <command> <code> [context…] :<description>`. */
export const fail = (d: Downstream, command: string, code: string, context: ReadonlyArray<string>, description: string) =>
  replyLine(d, { command: "FAIL", params: [command, code, ...context, description] })

export const nextBatchId = (d: Downstream): string => `belay${d.id}x${++d.batchSeq}`

/** Adds `batch=<id>` to a formatted line that belongs to no batch yet. */
const inBatch = (line: string, id: string): string => {
  if (!line.startsWith("@")) return `@batch=${id} ${line}`
  const end = line.indexOf(" ")
  const tags = line.slice(1, end)
  return tags.split(";").some((t) => t.startsWith("batch=")) ? line : `@batch=${id};${line.slice(1)}`
}

/** Adds `label=<label>` to a formatted line. */
const labelled = (line: string, label: string): string =>
  line.startsWith("@") ? `@label=${escapeLabel(label)};${line.slice(1)}` : `@label=${escapeLabel(label)} ${line}`

const escapeLabel = (label: string) => label.replace(/[; \\\r\n]/g, "")

/**
 * Runs the handling of one command: with a label (and labeled-response enabled), its replies go out labeled as the
 * module comment says, when it ends, whatever its outcome; otherwise as they come.
 */
export const withLabel = <A, E, R>(d: Downstream, label: string | undefined, handle: Effect.Effect<A, E, R>) =>
  label === undefined || !d.caps.enabled.has("labeled-response")
    ? handle
    : Effect.suspend(() => {
      d.collecting = []
      d.labelPassed = false
      return Effect.ensuring(handle, Effect.sync(() => sendLabelled(d, label)))
    })

const sendLabelled = (d: Downstream, label: string) => {
  const lines = d.collecting ?? []
  d.collecting = undefined
  const passed = d.labelPassed
  d.labelPassed = false
  const own = (line: IrcLineInput) => ownLine(d.view, { source: { nick: SERVER_NAME }, ...line })
  // A command the upstream answers under our label: its answer comes back with the client's (LiveEvents.ts).
  if (lines.length === 0 && passed) return
  if (lines.length === 0) write(d, labelled(own({ command: "ACK" }), label))
  else if (lines.length === 1) write(d, labelled(lines[0]!, label))
  else if (d.caps.enabled.has("batch")) {
    const id = nextBatchId(d)
    write(d, labelled(own({ command: "BATCH", params: [`+${id}`, "labeled-response"] }), label))
    for (const line of lines) write(d, inBatch(line, id))
    write(d, own({ command: "BATCH", params: [`-${id}`] }))
  } else {
    write(d, labelled(lines[0]!, label))
    for (const line of lines.slice(1)) write(d, line)
  }
}
