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
import type { E2eKeyChange } from "../../services/E2eKeys.js"
import type { StoredChannel } from "../../services/Networks.js"
import type { TransportEvent } from "../IrcTransport.js"
import type {
  CommandFailure,
  CommandResult,
  MemberInfo,
  ModeChange,
  ModeListEntry,
  SayKind,
  TopicInfo
} from "../NetworkApi.js"
import type { RequestId } from "./ModeListRequests.js"

export type Reply<A> = Deferred.Deferred<A>
export type Result<A extends object = {}> = CommandResult<A>

/** get_mode_list's success payload. */
export interface ModeListAnswer {
  readonly channel: string
  readonly letter: string
  readonly entries: ReadonlyArray<ModeListEntry>
}

/** Tagged commands, each answered through its Deferred. */
export type Command =
  | { readonly _tag: "Say"; readonly kind: SayKind; readonly target: string; readonly text: string; readonly reply: Reply<Result> }
  | { readonly _tag: "Raw"; readonly line: string; readonly reply: Reply<Result> }
  | { readonly _tag: "Join"; readonly channel: string; readonly key: Option.Option<string>; readonly reply: Reply<Result> }
  | { readonly _tag: "Part"; readonly channel: string; readonly reason: Option.Option<string>; readonly reply: Reply<Result> }
  | { readonly _tag: "Nick"; readonly nick: string; readonly reply: Reply<Result> }
  | { readonly _tag: "Away"; readonly message: Option.Option<string>; readonly reply: Reply<Result> }
  | { readonly _tag: "Whois"; readonly nick: string; readonly reply: Reply<Result> }
  | { readonly _tag: "Connect"; readonly reconnect: boolean; readonly reply: Reply<Result> }
  | { readonly _tag: "Disconnect"; readonly reply: Reply<Result> }
  | {
    readonly _tag: "Members"
    readonly channel: string
    readonly reply: Reply<Result<{ readonly members: ReadonlyArray<MemberInfo> }>>
  }
  | { readonly _tag: "Topic"; readonly channel: string; readonly reply: Reply<Result<{ readonly topic: TopicInfo }>> }
  | { readonly _tag: "SetTopic"; readonly channel: string; readonly topic: string; readonly reply: Reply<Result> }
  /** Answered when the list (or a refusal) arrives, at MODE_LIST_TIMEOUT, or `not-connected` on disconnect. */
  | {
    readonly _tag: "ModeList"
    readonly channel: string
    readonly letter: string
    readonly reply: Reply<Result<ModeListAnswer>>
  }
  | {
    readonly _tag: "SetModes"
    readonly channel: string
    readonly changes: ReadonlyArray<ModeChange>
    readonly reply: Reply<Result<{ readonly lines: ReadonlyArray<string> }>>
  }
  /** QUIT and wait (bounded by QUIT_GRACE) for the socket to close; the actor then stays offline. */
  | { readonly _tag: "Shutdown"; readonly reply: Reply<void> }

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

export type Input = Command | Internal

export const fail = (error: CommandFailure["error"], message?: string): CommandFailure =>
  message === undefined ? { ok: false, error } : { ok: false, error, message }

export const NOT_CONNECTED = fail("not-connected", "the network is not connected (it may be reconnecting); try again later")
export const OK = { ok: true } as const
