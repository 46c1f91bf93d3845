// ToolErrors: every way a tool call can fail, as tagged errors that travel as data, and the
// one place that decides how each is put on the wire. The network actors' port
// (src/actors/NetworkApi.ts) fails with these same classes, so a command's failure reaches
// the wire unchanged, with no second vocabulary to translate. Pure; no state.
//
// docs/contract.md "MCP tool shapes": a failure is a normal tools/call result with
// `isError: true` whose payload (structuredContent, and the same JSON as text) is `{ok: false,
// error, message?}`, `refused` adding `numeric` and `text`. Every failure is isError —
// including not-connected, which the interface calls a "normal result": it is still a result,
// not a JSON-RPC error. An unknown tool name is not a tool failure but JSON-RPC -32602
// (JsonRpc.ts). `message` is always filled in: it is what an agent reads to correct itself,
// and it states any bound involved from the fields, never from a copy of the constant.
import { Schema } from "effect"
import { showValue } from "./Ids.js"

/** The wire strings of docs/contract.md "MCP tool shapes", in its order. */
export const TOOL_ERROR_CODES = [
  "insufficient-scope",
  "account-paused",
  "unknown-network",
  "invalid-arguments",
  "not-connected",
  "not-in-channel",
  "e2e-channel-use-send-message",
  "locked-down",
  "refused",
  "timeout",
  "quota-exceeded"
] as const

/**
 * insufficient-scope: the token may only call read tools. account-paused: the account is
 * paused, only read tools work. unknown-network. invalid-arguments: message names the field.
 * not-connected: the connection is not up (backoff included). not-in-channel.
 * e2e-channel-use-send-message: send_raw cannot PRIVMSG an end-to-end encrypted channel.
 * locked-down: the instance does not allow the network's host. refused: the IRC server
 * refused (numeric, text). timeout: the IRC server did not answer in time, or the network's
 * outgoing queue is full (nothing sent). quota-exceeded: a per-account limit (channels per network) would be passed;
 * nothing was sent.
 *
 * The published description stays short: this schema is repeated in all 23 outputSchemas,
 * and `message` explains each failure where it happens.
 */
export const ToolErrorCode = Schema.Literal(...TOOL_ERROR_CODES).annotations({
  description: "Failure code; message explains it."
})
export type ToolErrorCode = typeof ToolErrorCode.Type

/** The structuredContent of every isError result; also a member of every tool's outputSchema. */
export const ToolFailurePayload = Schema.Struct({
  ok: Schema.Literal(false).annotations({ description: "false: the call failed." }),
  error: ToolErrorCode,
  message: Schema.optional(Schema.String.annotations({ description: "What went wrong." })),
  numeric: Schema.optional(Schema.String.annotations({ description: "For refused: the IRC numeric, e.g. \"482\"." })),
  text: Schema.optional(Schema.String.annotations({ description: "For refused: the server's text." }))
}).annotations({ description: "A failed call." })
export type ToolFailurePayload = typeof ToolFailurePayload.Type

// One class per failure, wire string on the class (docs/architecture.md). Fields are what the
// producer knows; `message` is derived from them so every producer words it the same way.

export class InsufficientScope extends Schema.TaggedError<InsufficientScope>()("InsufficientScope", {
  tool: Schema.String
}) {
  static readonly wire = "insufficient-scope" as const
  override get message(): string {
    return `${this.tool} needs a read-write token; this token has the read scope`
  }
}

export class AccountPaused extends Schema.TaggedError<AccountPaused>()("AccountPaused", {
  tool: Schema.String
}) {
  static readonly wire = "account-paused" as const
  override get message(): string {
    return `the account is paused: only read tools can be called, not ${this.tool}`
  }
}

export class UnknownNetwork extends Schema.TaggedError<UnknownNetwork>()("UnknownNetwork", {
  networkId: Schema.Number
}) {
  static readonly wire = "unknown-network" as const
  override get message(): string {
    return `no network with id ${this.networkId} on this account; list_networks shows the ids`
  }
}

/** `message` names the offending argument(s); built by ToolCatalog.decodeToolArguments or by a handler. */
export class InvalidArguments extends Schema.TaggedError<InvalidArguments>()("InvalidArguments", {
  message: Schema.String
}) {
  static readonly wire = "invalid-arguments" as const
}

/**
 * The interface: one gate for every write tool — the socket is actually up; backoff counts as
 * not connected. Without `networkId`: a call for every network (set_away) found none connected.
 */
export class NotConnected extends Schema.TaggedError<NotConnected>()("NotConnected", {
  networkId: Schema.optional(Schema.Number)
}) {
  static readonly wire = "not-connected" as const
  override get message(): string {
    return this.networkId === undefined
      ? "no network of the account is connected; connect_network starts a connection"
      : `network ${this.networkId} is not connected; connect_network starts a connection`
  }
}

export class NotInChannel extends Schema.TaggedError<NotInChannel>()("NotInChannel", {
  networkId: Schema.Number,
  channel: Schema.String
}) {
  static readonly wire = "not-in-channel" as const
  override get message(): string {
    return `not in ${this.channel} on network ${this.networkId}; join_channel first`
  }
}

export class E2eChannelUseSendMessage extends Schema.TaggedError<E2eChannelUseSendMessage>()(
  "E2eChannelUseSendMessage",
  { networkId: Schema.Number, target: Schema.String }
) {
  static readonly wire = "e2e-channel-use-send-message" as const
  override get message(): string {
    return `${this.target} is end-to-end encrypted: send_raw would send plaintext, use send_message`
  }
}

export class LockedDown extends Schema.TaggedError<LockedDown>()("LockedDown", {
  networkId: Schema.Number,
  host: Schema.String
}) {
  static readonly wire = "locked-down" as const
  override get message(): string {
    return `this instance does not allow connecting to ${this.host}`
  }
}

/** The IRC server answered with an error numeric (e.g. 482 ERR_CHANOPRIVSNEEDED). */
export class Refused extends Schema.TaggedError<Refused>()("Refused", {
  numeric: Schema.String,
  text: Schema.String
}) {
  static readonly wire = "refused" as const
  override get message(): string {
    return `the IRC server refused (${this.numeric}): ${this.text}`
  }
}

/**
 * A request got no answer: the IRC server's to a query we wait for (get_mode_list), or the
 * network's actor to a command. `seconds` is the bound waited, when one ran out; a server that
 * ended its reply without answering leaves it out.
 */
export class Timeout extends Schema.TaggedError<Timeout>()("Timeout", {
  operation: Schema.String,
  seconds: Schema.optional(Schema.Number)
}) {
  static readonly wire = "timeout" as const
  override get message(): string {
    return this.seconds === undefined
      ? `${this.operation} got no answer; try again`
      : `${this.operation} got no answer within ${this.seconds} s; try again`
  }
}

/**
 * The network's outgoing queue cannot take the command's lines: Belay paces what it sends to stay under the IRC
 * server's flood limit (docs/decisions/irc-connections.md "Outbound flood control"), and the lines already waiting fill the queue.
 * Nothing of the command was sent. On the wire it is `timeout`: the network cannot send it within the bound its
 * queue stands for, and the remedy is the same, try again later; `message` says which of the two it was.
 */
export class SendQueueFull extends Schema.TaggedError<SendQueueFull>()("SendQueueFull", {
  networkId: Schema.Number,
  /** Lines this command needed. */
  lines: Schema.Number,
  /** Lines already waiting, and how many may wait. */
  waiting: Schema.Number,
  capacity: Schema.Number,
  /** About how long until the lines waiting have gone out. */
  seconds: Schema.Number
}) {
  static readonly wire = "timeout" as const
  override get message(): string {
    return `network ${this.networkId} is pacing its lines to stay under the server's flood limit and its queue is ` +
      `full (${this.waiting} of ${this.capacity} lines waiting, about ${this.seconds} s to send); this call needed ` +
      `${this.lines} more line${this.lines === 1 ? "" : "s"} and nothing was sent; try again later`
  }
}

/**
 * The names of the per-account limits (docs/contract.md "Account limits"), as `belay account show` and every refusal
 * name them.
 */
export const LIMIT_NAMES = ["networks", "channels", "apps", "push-subscriptions", "passkeys", "sessions", "uploads"] as const
export const LimitName = Schema.Literal(...LIMIT_NAMES)
export type LimitName = typeof LimitName.Type

/**
 * A per-account limit would be passed: nothing was created (docs/decisions/account-limits.md "A refusal names the
 * limit and creates nothing"). `max` is the limit that applies to this account now.
 */
export class QuotaExceeded extends Schema.TaggedError<QuotaExceeded>()("QuotaExceeded", {
  limit: LimitName,
  max: Schema.Number
}) {
  static readonly wire = "quota-exceeded" as const
  override get message(): string {
    // `uploads` is a total in MiB (docs/decisions/uploads.md "Limits"), the others counts.
    const what = this.limit === "channels"
      ? "channels on this network"
      : this.limit === "uploads"
      ? "MiB of uploads on this account"
      : `${this.limit} on this account`
    return `limit reached: at most ${this.max} ${what} (limit "${this.limit}"); remove one first or ask the operator`
  }
}

/** Every tool failure, as a Schema (e.g. to carry it across an RPC boundary) and as a type. */
export const ToolFailure = Schema.Union(
  InsufficientScope,
  AccountPaused,
  UnknownNetwork,
  InvalidArguments,
  NotConnected,
  NotInChannel,
  E2eChannelUseSendMessage,
  LockedDown,
  Refused,
  Timeout,
  SendQueueFull,
  QuotaExceeded
)
export type ToolFailure = typeof ToolFailure.Type

const wireOf: { readonly [K in ToolFailure["_tag"]]: ToolErrorCode } = {
  InsufficientScope: InsufficientScope.wire,
  AccountPaused: AccountPaused.wire,
  UnknownNetwork: UnknownNetwork.wire,
  InvalidArguments: InvalidArguments.wire,
  NotConnected: NotConnected.wire,
  NotInChannel: NotInChannel.wire,
  E2eChannelUseSendMessage: E2eChannelUseSendMessage.wire,
  LockedDown: LockedDown.wire,
  Refused: Refused.wire,
  Timeout: Timeout.wire,
  SendQueueFull: SendQueueFull.wire,
  QuotaExceeded: QuotaExceeded.wire
}

/** True for the tagged errors above (for a dispatcher that must tell them from defects). */
export const isToolFailure = (u: unknown): u is ToolFailure => Schema.is(ToolFailure)(u)

/** The one encoding of a failure: `{ok: false, error, message}`, plus `numeric` and `text` for refused. */
export const toToolFailurePayload = (failure: ToolFailure): ToolFailurePayload =>
  failure._tag === "Refused"
    ? { ok: false, error: wireOf[failure._tag], message: failure.message, numeric: failure.numeric, text: failure.text }
    : { ok: false, error: wireOf[failure._tag], message: failure.message }

/** invalid-arguments for a value a handler finds wrong after decoding (e.g. a mode letter the network lacks). */
export const invalidArgument = (field: string, problem: string, value?: unknown): InvalidArguments =>
  new InvalidArguments({
    message: value === undefined ? `${field}: ${problem}` : `${field}: ${problem}, got ${showValue(value)}`
  })
