/**
 * Inbox: everything a network actor's dispatcher reacts to, one tagged input at a time — the commands callers send
 * (each answered through its Deferred, docs/architecture.md) and the internal inputs: transport events, timer
 * expiries, stored channels read, end-to-end key changes.
 *
 * Concurrency rule: inputs are immutable values. Anyone may put them in the actor's unbounded inbox (callers through
 * the supervisor, irc-framework callbacks and timers with `unsafeOffer`, never blocking); only the dispatcher takes
 * them out and acts on them.
 */
import type { Deferred, Option } from "effect"
import type { ModeChange, ModeList, ModeListLetter } from "../../schema/ChannelMode.js"
import type { ChannelTopic } from "../../schema/ChannelTopic.js"
import type { Member } from "../../schema/Member.js"
import type {
  E2eChannelUseSendMessage,
  InvalidArguments,
  LockedDown,
  NotConnected,
  NotInChannel,
  QuotaExceeded,
  Refused,
  SendQueueFull,
  Timeout
} from "../../schema/ToolErrors.js"
import type { E2eKeyChange } from "../../services/networks/E2eKeys.js"
import type { NetworkEvent } from "../../schema/NetworkEvent.js"
import type { NetworkConfig, StoredChannel } from "../../services/networks/Networks.js"
import type { TransportEvent } from "../IrcTransport.js"
import type { SayKind } from "../NetworkApi.js"
import type { RequestId } from "./ModeListRequests.js"

/** A command's answer: its result, or the tool failure (src/schema/ToolErrors.ts) that says why it was not done. */
export type Reply<A, E = never> = Deferred.Deferred<A, E>

/**
 * What a command that writes to IRC may fail with in the actor: the socket is not up (the interface's one write
 * gate), an argument cannot go on an IRC line, or the connection's outgoing queue cannot take its lines (Outbound.ts).
 */
export type Gated = NotConnected | InvalidArguments | SendQueueFull

/** What a command that only reads the connection's state may fail with: it is not up, or the name is not one. */
export type ReadGated = NotConnected | InvalidArguments

/** Tagged commands, each answered through its Deferred. */
export type Command =
  | { readonly _tag: "Say"; readonly kind: SayKind; readonly target: string; readonly text: string; readonly reply: Reply<void, Gated> }
  /**
   * `channelLimit` (Raw and Join): the account's channel limit when the command was sent (null: none), checked against
   * the channels the actor holds (docs/decisions/account-limits.md "Channels: joined and configured, counted by the actor").
   */
  | {
    readonly _tag: "Raw"
    /** One line (send_raw), or several sent together (NetworkApi.rawLines). */
    readonly lines: ReadonlyArray<string>
    readonly channelLimit: number | null
    readonly reply: Reply<void, Gated | E2eChannelUseSendMessage | QuotaExceeded>
  }
  | {
    readonly _tag: "Join"
    readonly channel: string
    readonly key: Option.Option<string>
    readonly channelLimit: number | null
    readonly reply: Reply<void, Gated | QuotaExceeded>
  }
  | {
    readonly _tag: "Part"
    readonly channel: string
    readonly reason: Option.Option<string>
    readonly reply: Reply<void, Gated | NotInChannel>
  }
  | { readonly _tag: "Nick"; readonly nick: string; readonly reply: Reply<void, Gated> }
  | { readonly _tag: "Away"; readonly message: Option.Option<string>; readonly reply: Reply<void, Gated> }
  | { readonly _tag: "Whois"; readonly nick: string; readonly reply: Reply<void, Gated> }
  | { readonly _tag: "Connect"; readonly reconnect: boolean; readonly reply: Reply<void, LockedDown> }
  | { readonly _tag: "Disconnect"; readonly reply: Reply<void> }
  | { readonly _tag: "Members"; readonly channel: string; readonly reply: Reply<ReadonlyArray<Member>, ReadGated | NotInChannel> }
  | { readonly _tag: "Topic"; readonly channel: string; readonly reply: Reply<ChannelTopic, ReadGated | NotInChannel> }
  | { readonly _tag: "SetTopic"; readonly channel: string; readonly topic: string; readonly reply: Reply<void, Gated> }
  /** Answered when the list (or a refusal) arrives, at MODE_LIST_TIMEOUT, or NotConnected when the connection ends. */
  | {
    readonly _tag: "ModeList"
    readonly channel: string
    readonly letter: ModeListLetter
    readonly reply: Reply<ModeList, Gated | Refused | Timeout>
  }
  | {
    readonly _tag: "SetModes"
    readonly channel: string
    readonly changes: ReadonlyArray<ModeChange>
    readonly reply: Reply<ReadonlyArray<string>, Gated>
  }
  /** QUIT and wait (bounded by QUIT_GRACE) for the socket to close; the actor then stays offline. */
  | { readonly _tag: "Shutdown"; readonly reply: Reply<void> }

/**
 * Each command built around the Deferred its caller awaits, so the caller's result and failure types follow from
 * the command: `ask(networkId, Command.join(channel, key))`.
 */
export const Command = {
  say: (kind: SayKind, target: string, text: string) => (reply: Reply<void, Gated>): Command => ({
    _tag: "Say",
    kind,
    target,
    text,
    reply
  }),
  raw: (lines: string | ReadonlyArray<string>, channelLimit: number | null = null) =>
  (reply: Reply<void, Gated | E2eChannelUseSendMessage | QuotaExceeded>): Command => ({
    _tag: "Raw",
    lines: typeof lines === "string" ? [lines] : lines,
    channelLimit,
    reply
  }),
  join: (channel: string, key: Option.Option<string>, channelLimit: number | null = null) =>
  (reply: Reply<void, Gated | QuotaExceeded>): Command => ({
    _tag: "Join",
    channel,
    key,
    channelLimit,
    reply
  }),
  part: (channel: string, reason: Option.Option<string>) => (reply: Reply<void, Gated | NotInChannel>): Command => ({
    _tag: "Part",
    channel,
    reason,
    reply
  }),
  nick: (nick: string) => (reply: Reply<void, Gated>): Command => ({ _tag: "Nick", nick, reply }),
  away: (message: Option.Option<string>) => (reply: Reply<void, Gated>): Command => ({ _tag: "Away", message, reply }),
  whois: (nick: string) => (reply: Reply<void, Gated>): Command => ({ _tag: "Whois", nick, reply }),
  connect: (reconnect: boolean) => (reply: Reply<void, LockedDown>): Command => ({ _tag: "Connect", reconnect, reply }),
  disconnect: () => (reply: Reply<void>): Command => ({ _tag: "Disconnect", reply }),
  members: (channel: string) => (reply: Reply<ReadonlyArray<Member>, ReadGated | NotInChannel>): Command => ({
    _tag: "Members",
    channel,
    reply
  }),
  topic: (channel: string) => (reply: Reply<ChannelTopic, ReadGated | NotInChannel>): Command => ({
    _tag: "Topic",
    channel,
    reply
  }),
  setTopic: (channel: string, topic: string) => (reply: Reply<void, Gated>): Command => ({
    _tag: "SetTopic",
    channel,
    topic,
    reply
  }),
  modeList: (channel: string, letter: ModeListLetter) => (reply: Reply<ModeList, Gated | Refused | Timeout>): Command => ({
    _tag: "ModeList",
    channel,
    letter,
    reply
  }),
  setModes: (channel: string, changes: ReadonlyArray<ModeChange>) =>
  (reply: Reply<ReadonlyArray<string>, Gated>): Command => ({ _tag: "SetModes", channel, changes, reply }),
  shutdown: () => (reply: Reply<void>): Command => ({ _tag: "Shutdown", reply })
} as const

/** Everything else the dispatcher reacts to: transport events and timer expiries, tagged with their session. */
export type Internal =
  | { readonly _tag: "Start" }
  | { readonly _tag: "Transport"; readonly session: number; readonly event: TransportEvent }
  /** `slot`: the throttle's slot is reserved, connect now; otherwise the backoff is over, reserve a slot first. */
  | { readonly _tag: "RetryDue"; readonly token: number; readonly slot: boolean }
  | { readonly _tag: "RegistrationTimeout"; readonly session: number }
  | { readonly _tag: "KeepaliveDue"; readonly session: number }
  | { readonly _tag: "RegainDue"; readonly session: number }
  | { readonly _tag: "RejoinFallback"; readonly session: number }
  | { readonly _tag: "ChannelsLoaded"; readonly session: number; readonly channels: ReadonlyArray<StoredChannel> }
  | { readonly _tag: "QuitGraceOver"; readonly session: number }
  | { readonly _tag: "E2eKeyChanged"; readonly change: E2eKeyChange }
  | { readonly _tag: "ModeListTimeout"; readonly requestId: RequestId }
  | { readonly _tag: "WhoTimeout"; readonly session: number }
  /** The connection's token bucket holds a token again: write the next lines waiting (Outbound.ts). */
  | { readonly _tag: "SendDue"; readonly session: number }
  /**
   * The stored settings changed in a way that needs no new connection (name, username, realname): the actor
   * takes them as they are now; the next connection uses them.
   */
  | { readonly _tag: "Reconfigure"; readonly config: NetworkConfig }
  /** A new tab wants the whole network drawn through `deliver` (LiveView.view); `done` completes once it is. */
  | {
    readonly _tag: "View"
    readonly deliver: (events: ReadonlyArray<NetworkEvent>) => void
    readonly done: Deferred.Deferred<void>
  }

export type Input = Command | Internal
