/**
 * The public face of the network actors: the status other services read and the
 * results commands answer with. The supervisor (NetworkSupervisor.ts) implements
 * `NetworkControl`; the MCP tools depend only on this Tag, so tests can swap in a
 * fake. Every method has R = never and never fails: outcomes are data.
 */
import { Context, type Effect, type Option } from "effect"
import type { CaseMapping } from "../irc/CaseMapping.js"

export type ConnectionState = "connected" | "connecting" | "backoff" | "offline"

export interface NetworkStatus {
  readonly networkId: number
  readonly state: ConnectionState
  /** Current nick on the server; null unless registered. */
  readonly nick: string | null
  /** When in backoff: the next attempt. */
  readonly nextRetryAt: Date | null
  /** Last connection error or permanent refusal reason (kept while offline). */
  readonly lastError: string | null
  readonly caseMapping: CaseMapping
  /** CHANTYPES of the network (default "#&"). */
  readonly channelTypes: string
}

/** Failure strings of CONTRACT.md "MCP tool shapes" that actor commands can produce. */
export type CommandError =
  | "not-connected"
  | "not-in-channel"
  | "locked-down"
  | "invalid-arguments"
  | "refused"
  | "timeout"
  | "e2e-channel-use-send-message"
  | "unknown-network"

export interface CommandFailure {
  readonly ok: false
  readonly error: CommandError
  readonly message?: string
  /** For `refused`: the server's numeric and text. */
  readonly numeric?: string
  readonly text?: string
}

export type CommandResult<A extends object = {}> = ({ readonly ok: true } & A) | CommandFailure

export interface MemberInfo {
  readonly nick: string
  /** Prefix symbols, highest first ("@+"); "" for none. */
  readonly prefix: string
  /** Mode letters matching prefix, highest first (["o","v"]). */
  readonly modes: ReadonlyArray<string>
  readonly away: boolean
}

export interface TopicInfo {
  readonly channel: string
  readonly topic: string
  readonly setBy: string | null
  readonly setAt: Date | null
}

export interface ModeListEntry {
  readonly mask: string
  readonly setBy: string | null
  readonly setAt: Date | null
}

export interface ModeChange {
  readonly sign: "+" | "-"
  readonly letter: string
  readonly param?: string | undefined
}

export type SayKind = "privmsg" | "action" | "notice"

export interface NetworkControlService {
  readonly status: (networkId: number) => Effect.Effect<NetworkStatus>
  readonly statuses: Effect.Effect<ReadonlyArray<NetworkStatus>>
  /** PRIVMSG / CTCP ACTION / NOTICE; long text is split at the byte limit; stored with self: true. */
  readonly say: (networkId: number, kind: SayKind, target: string, text: string) => Effect.Effect<CommandResult>
  /** One raw line, verbatim (CR/LF/NUL refused). */
  readonly raw: (networkId: number, line: string) => Effect.Effect<CommandResult>
  /** Given key, else the stored key. The channel is remembered for rejoin. */
  readonly join: (networkId: number, channel: string, key: Option.Option<string>) => Effect.Effect<CommandResult>
  readonly part: (networkId: number, channel: string, reason: Option.Option<string>) => Effect.Effect<CommandResult>
  readonly nick: (networkId: number, nick: string) => Effect.Effect<CommandResult>
  /** Some(message) → away; None → back. */
  readonly away: (networkId: number, message: Option.Option<string>) => Effect.Effect<CommandResult>
  readonly whois: (networkId: number, nick: string) => Effect.Effect<CommandResult>
  readonly connect: (networkId: number, reconnect: boolean) => Effect.Effect<CommandResult>
  readonly disconnect: (networkId: number) => Effect.Effect<CommandResult>
  /** Members sorted by nick (casemapped); not-in-channel when the account is not in it. */
  readonly members: (networkId: number, channel: string) => Effect.Effect<CommandResult<{ readonly members: ReadonlyArray<MemberInfo> }>>
  readonly topic: (networkId: number, channel: string) => Effect.Effect<CommandResult<{ readonly topic: TopicInfo }>>
  readonly setTopic: (networkId: number, channel: string, topic: string) => Effect.Effect<CommandResult>
  /** Fetches the list fresh and answers only the caller. */
  readonly modeList: (
    networkId: number,
    channel: string,
    letter: string
  ) => Effect.Effect<CommandResult<{ readonly channel: string; readonly letter: string; readonly entries: ReadonlyArray<ModeListEntry> }>>
  /** Validated against CHANMODES/PREFIX and packed into the fewest MODE lines. */
  readonly setModes: (
    networkId: number,
    channel: string,
    changes: ReadonlyArray<ModeChange>
  ) => Effect.Effect<CommandResult<{ readonly lines: ReadonlyArray<string> }>>
  /** Whether a channel or nick of this network has an end-to-end encryption key (compared with its CASEMAPPING). */
  readonly isEncrypted: (networkId: number, target: string) => Effect.Effect<boolean>
  /**
   * The send_raw guard (interface.md): the end-to-end encrypted target of a PRIVMSG or NOTICE in `line`, which
   * send_raw must refuse with `e2e-channel-use-send-message`; None when the line may be sent. Reads targets as the
   * server would (any casing, tags, prefix, STATUSMSG, lists); fails closed when the keys cannot be read.
   */
  readonly encryptedTargetOfRaw: (networkId: number, line: string) => Effect.Effect<Option.Option<string>>
}

export class NetworkControl extends Context.Tag("belay/NetworkControl")<NetworkControl, NetworkControlService>() {}

export const serverBuffer = (networkId: number) => `:server:${networkId}`

