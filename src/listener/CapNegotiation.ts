/**
 * CapNegotiation: the capabilities Belay offers its IRC clients and the CAP state machine of one connection (IRCv3
 * capability-negotiation, CAP 302; docs/contract.md "The IRC client listener"). Pure: `onCap` takes the state and a
 * CAP command and answers the next state with the replies to send.
 *
 * Offered always: what Belay implements itself, among them soju's smaller ones (docs/decisions/irc-listener.md "soju's
 * smaller capabilities"): no-implicit-names, pre-away, extended-isupport, event-playback, soju.im/search and the
 * informational soju.im/account-required, which a REQ may never name; and draft/metadata-2 for the buffer keys
 * soju defines (Metadata.ts). Offered only when the upstream connection has
 * them (PASSTHROUGH): what only the upstream server can produce (away-notify, account-tag…); before a network is
 * bound they are offered, and once the bound upstream turns out to lack them no longer offered, with CAP DEL for
 * those the client enabled.
 */
import type { IrcLineInput } from "../irc/IrcLine.js"

/**
 * Informational (soju's doc/ext/account-required.md): this server completes no registration without a sign-in.
 * Offered, never enabled: a REQ naming it, on or off, is refused whole.
 */
export const ACCOUNT_REQUIRED = "soju.im/account-required"

/** IRCv3 draft/metadata-2 (Metadata.ts): the keys one client may subscribe to, told in the capability's value. */
export const METADATA_CAP = "draft/metadata-2"
export const METADATA_MAX_SUBS = 50

/**
 * IRCv3 draft/multiline (Multiline.ts): the largest batch a client may send. Belay takes it whatever the upstream has
 * (sent on as a batch, or as separate lines), so a whole batch, or its lines re-split at the upstream's line limit,
 * fits the actor's send queue (SEND_QUEUE_LINES, 64) at once.
 */
export const MULTILINE_CAP = "draft/multiline"
export const MULTILINE_MAX_BYTES = 4096
export const MULTILINE_MAX_LINES = 32

/** Belay's own capabilities, with their CAP 302 values. */
export const OWN_CAPS: ReadonlyMap<string, string | null> = new Map<string, string | null>([
  ["sasl", "PLAIN"],
  ["cap-notify", null],
  ["server-time", null],
  ["batch", null],
  ["message-tags", null],
  ["echo-message", null],
  ["labeled-response", null],
  ["draft/chathistory", null],
  ["draft/read-marker", null],
  ["soju.im/bouncer-networks", null],
  ["soju.im/bouncer-networks-notify", null],
  ["znc.in/self-message", null],
  ["draft/event-playback", null],
  ["draft/no-implicit-names", null],
  ["no-implicit-names", null],
  ["draft/pre-away", null],
  ["draft/extended-isupport", null],
  ["soju.im/search", null],
  // soju's Web Push (WebPush.ts): the VAPID key in ISUPPORT, WEBPUSH REGISTER and UNREGISTER.
  ["soju.im/webpush", null],
  // The extension's limits: SUB before registration, max-subs, no keys on the member's own nick, values of one byte.
  [METADATA_CAP, `before-connect,max-subs=${METADATA_MAX_SUBS},max-keys=0,max-value-bytes=1`],
  [MULTILINE_CAP, `max-bytes=${MULTILINE_MAX_BYTES},max-lines=${MULTILINE_MAX_LINES}`],
  [ACCOUNT_REQUIRED, null]
])

/**
 * Whether the client wants the NAMES reply that follows a JOIN: not with IRCv3 no-implicit-names (or its draft name,
 * which soju offers), which asks for NAMES only when the client sends it.
 */
export const wantsImplicitNames = (enabled: ReadonlySet<string>): boolean =>
  !enabled.has("no-implicit-names") && !enabled.has("draft/no-implicit-names")

/** Relayed from the upstream server, so offered only when it has them. */
export const PASSTHROUGH_CAPS: ReadonlyArray<string> = [
  "account-notify",
  "account-tag",
  "away-notify",
  "chghost",
  // Upstream REDACT reaches the client live (MessageLines.ts); the client's own goes upstream.
  "draft/message-redaction",
  "extended-join",
  "invite-notify",
  "multi-prefix",
  "setname"
]

export interface CapState {
  /** CAP LS or REQ arrived before registration and CAP END has not: registration waits. */
  readonly negotiating: boolean
  /** The highest CAP LS version the client asked for (302 enables values and implies cap-notify). */
  readonly version: number
  readonly enabled: ReadonlySet<string>
}

export const initialCapState: CapState = { negotiating: false, version: 0, enabled: new Set() }

/** What the connection offers: Belay's own, plus the passthrough ones `upstream` has (all, when not yet known). */
export const offeredCaps = (upstream: ReadonlySet<string> | undefined): ReadonlyMap<string, string | null> => {
  const offered = new Map(OWN_CAPS)
  for (const cap of PASSTHROUGH_CAPS) if (upstream === undefined || upstream.has(cap)) offered.set(cap, null)
  return offered
}

/** CAP LS replies are split below this many bytes of capabilities per line (CAP 302 multiline LS). */
const LS_LINE_BUDGET = 380

/**
 * A client before CAP 302 cannot be told that more LS lines follow, so it gets one line, as long as a line may be
 * (RFC 2812 §2.3: 512 bytes with CR LF, less the prefix, command and nick).
 */
const legacyBudget = (nick: string) => 510 - `:belay CAP ${nick} LS :`.length

/**
 * The capabilities a client before CAP 302 is listed, on its one line: when they do not all fit, the `draft/` ones
 * are left out, the last first, until they do (a client that predates CAP 302 predates those drafts too).
 */
const legacyWords = (words: Array<string>, budget: number): Array<string> => {
  for (let i = words.length - 1; i >= 0 && words.join(" ").length > budget; i--) {
    if (words[i]!.startsWith("draft/")) words.splice(i, 1)
  }
  return words
}

const lsLines = (nick: string, offered: ReadonlyMap<string, string | null>, version: number): Array<IrcLineInput> => {
  const budget = version >= 302 ? LS_LINE_BUDGET : legacyBudget(nick)
  const all = [...offered].map(([cap, value]) => (version >= 302 && value !== null ? `${cap}=${value}` : cap))
  const words = version >= 302 ? all : legacyWords(all, budget)
  const chunks: Array<string> = []
  let current = ""
  for (const word of words) {
    if (current !== "" && current.length + word.length + 1 > budget) {
      chunks.push(current)
      current = word
    } else current = current === "" ? word : `${current} ${word}`
  }
  chunks.push(current)
  return chunks.map((chunk, i) => ({
    command: "CAP",
    params: i < chunks.length - 1 && version >= 302 ? [nick, "LS", "*", chunk] : [nick, "LS", chunk]
  }))
}

export interface CapOutcome {
  readonly state: CapState
  readonly replies: ReadonlyArray<IrcLineInput>
}

/**
 * One CAP command. `nick` is `*` before registration. A REQ is acknowledged or refused as a whole (CAP spec: "the
 * server MUST NOT make any change to any capabilities if it replies with a NAK").
 */
export const onCap = (
  state: CapState,
  params: ReadonlyArray<string>,
  context: { readonly nick: string; readonly registered: boolean; readonly offered: ReadonlyMap<string, string | null> }
): CapOutcome => {
  const sub = (params[0] ?? "").toUpperCase()
  const { nick } = context
  switch (sub) {
    case "LS": {
      const version = Math.max(state.version, Number.parseInt(params[1] ?? "0", 10) || 0)
      const enabled = version >= 302 ? new Set([...state.enabled, "cap-notify"]) : state.enabled
      return {
        state: { negotiating: !context.registered || state.negotiating, version, enabled },
        replies: lsLines(nick, context.offered, version)
      }
    }
    case "LIST":
      return { state, replies: [{ command: "CAP", params: [nick, "LIST", [...state.enabled].join(" ")] }] }
    case "REQ": {
      const asked = (params[1] ?? "").split(" ").filter((c) => c !== "")
      const negotiating = !context.registered || state.negotiating
      const ok = asked.length > 0 && asked.every((c) => {
        const name = c.startsWith("-") ? c.slice(1) : c
        if (name === ACCOUNT_REQUIRED) return false
        // Disabling is always allowed except for cap-notify under 302, which stays on.
        return c.startsWith("-") ? !(name === "cap-notify" && state.version >= 302) : context.offered.has(name)
      })
      if (!ok) return { state: { ...state, negotiating }, replies: [{ command: "CAP", params: [nick, "NAK", params[1] ?? ""] }] }
      const enabled = new Set(state.enabled)
      for (const c of asked) if (c.startsWith("-")) enabled.delete(c.slice(1))
      else enabled.add(c)
      return { state: { ...state, negotiating, enabled }, replies: [{ command: "CAP", params: [nick, "ACK", asked.join(" ")] }] }
    }
    case "END":
      return { state: { ...state, negotiating: false }, replies: [] }
    default:
      // 410 ERR_INVALIDCAPCMD (IRCv3 capability-negotiation, "Errors").
      return { state, replies: [{ command: "410", params: [nick, params[0] ?? "", "Invalid CAP command"] }] }
  }
}

/** The passthrough capabilities offered before a network is bound (the upstream is not known yet): all of them. */
export const ALL_PASSTHROUGH: ReadonlySet<string> = new Set(PASSTHROUGH_CAPS)

/**
 * The bound upstream's capabilities are known or changed (welcome, a reconnect, the upstream's CAP ACK or DEL): the
 * passthrough ones it has are offered, the others withdrawn. A client with cap-notify hears `CAP NEW` for what is
 * newly offered and `CAP DEL` for what it had enabled (IRCv3 cap-notify); one it did not enable is simply no longer
 * offered (CAP LS, and a later REQ is NAKed), so a client that asked for none of them is welcomed as any server
 * would welcome it. `offered` is what the client was offered so far.
 */
export const passthroughChange = (
  state: CapState,
  offered: ReadonlySet<string>,
  upstream: ReadonlySet<string>,
  nick: string
): CapOutcome & { readonly offered: ReadonlySet<string> } => {
  const now = new Set(PASSTHROUGH_CAPS.filter((c) => upstream.has(c)))
  const added = PASSTHROUGH_CAPS.filter((c) => now.has(c) && !offered.has(c))
  const removed = PASSTHROUGH_CAPS.filter((c) => !now.has(c) && offered.has(c))
  // Without cap-notify the client cannot hear of a change; what it enabled stays, and the upstream's lines simply
  // never carry what a withdrawn capability would have added.
  if (!state.enabled.has("cap-notify")) return { state, replies: [], offered: now }
  const replies: Array<IrcLineInput> = []
  if (added.length > 0) replies.push({ command: "CAP", params: [nick, "NEW", added.join(" ")] })
  if (removed.every((c) => !state.enabled.has(c))) return { state, replies, offered: now }
  const enabled = new Set(state.enabled)
  const withdrawn = removed.filter((c) => state.enabled.has(c))
  for (const c of withdrawn) enabled.delete(c)
  replies.push({ command: "CAP", params: [nick, "DEL", withdrawn.join(" ")] })
  return { state: { ...state, enabled }, replies, offered: now }
}
