/**
 * NetworkApi: the port of the network actors, and the only module of src/actors that services and http import
 * (docs/architecture.md). NetworkSupervisor.ts implements `NetworkControl`; the MCP tool handlers depend on this Tag
 * alone, so their tests swap in a fake.
 *
 * One vocabulary: what the port answers is the Schemas of src/schema (a status carries list_networks' live fields;
 * members, topics and mode lists are the tool payloads' own types), and a command that cannot be done fails in the
 * error channel with the tool failure of src/schema/ToolErrors.ts that says why, which the MCP layer encodes as it
 * is. Every method has R = never.
 *
 * Concurrency rule: any fiber may call any method. A command goes to its network's actor, whose one dispatcher fiber
 * alone changes that network's state and answers it; reads of the status never wait for that fiber.
 */
import { Context, type Effect, type Option } from "effect"
import type { ModeChange, ModeList, ModeListLetter } from "../schema/ChannelMode.js"
import type { ChannelTopic } from "../schema/ChannelTopic.js"
import type { Member } from "../schema/Member.js"
import type { MessageKind } from "../schema/Message.js"
import type { NetworkStatus } from "../schema/Network.js"
import type { NetworkEvent } from "../schema/NetworkEvent.js"
import type {
  E2eChannelUseSendMessage,
  InvalidArguments,
  LockedDown,
  NotConnected,
  NotInChannel,
  QuotaExceeded,
  Refused,
  SendQueueFull,
  Timeout,
  UnknownNetwork
} from "../schema/ToolErrors.js"

/** What send_message, send_action and send_notice send. */
export type SayKind = Extract<MessageKind, "privmsg" | "action" | "notice">

/**
 * How any command can fail on its way: no such network (`UnknownNetwork`), its actor between two lives or its socket
 * not up (`NotConnected`: the interface's one write gate, backoff included), or no answer within COMMAND_TIMEOUT.
 */
export type DeliveryError = UnknownNetwork | NotConnected | Timeout

/**
 * How a command that writes to IRC can fail besides: an argument that cannot go on an IRC line, or the network's
 * outgoing queue, which paces lines under the server's flood limit, cannot take its lines (nothing was sent).
 */
export type WriteError = DeliveryError | InvalidArguments | SendQueueFull

/**
 * The upstream connection as the server sees it, for welcoming the member's IRC clients (src/listener): the current
 * nick and user@host, the server's RPL_ISUPPORT tokens and the capabilities it enabled.
 */
export interface UpstreamView {
  readonly nick: string
  readonly user: string | null
  readonly host: string | null
  /** RPL_ISUPPORT tokens in wire form (`KEY=value` with `\xHH` escapes, or `KEY`). */
  readonly isupport: ReadonlyArray<string>
  /** Capabilities the server acknowledged. */
  readonly caps: ReadonlyArray<string>
  /** The values the server gave its capabilities in CAP LS or NEW (`draft/multiline` → its limits); absent: none. */
  readonly capValues?: Readonly<Record<string, string>>
  /** Whether the member is marked away on this network (set_away, AWAY from a client, auto-away). */
  readonly away: boolean
}

export interface NetworkControlService {
  readonly status: (networkId: number) => Effect.Effect<NetworkStatus>
  /**
   * The status `status` would answer, when it is at hand without waiting (a network run in this process, or none);
   * undefined when it must be asked for (a network another node runs). Lets a read served from memory answer without a
   * fiber (src/http/Immediate.ts). Optional: an implementation without it is always asked.
   */
  readonly statusNow?: (networkId: number) => NetworkStatus | undefined
  /** The registered upstream connection; None while the network is not connected. Never waits for the actor. */
  readonly upstream: (networkId: number) => Effect.Effect<Option.Option<UpstreamView>>
  readonly statuses: Effect.Effect<ReadonlyArray<NetworkStatus>>
  /**
   * Draws the network whole for one new browser tab (its connection, the member's away state, every joined channel
   * with topic and members) through `deliver`, from the actor's own fiber, so that every change the actor publishes
   * afterwards (services/events/MemberEvents.ts) reaches the tab after it (docs/decisions/web.md "The browser WebSocket"). A
   * network without a running actor is drawn offline. Returns once delivered.
   */
  readonly view: (networkId: number, deliver: (events: ReadonlyArray<NetworkEvent>) => void) => Effect.Effect<void>
  /**
   * PRIVMSG / CTCP ACTION / NOTICE; long text is split at the byte limit, and encrypted when the target has an
   * end-to-end key; stored with self: true. CR, LF and NUL in any argument: InvalidArguments, nothing sent.
   */
  readonly say: (
    networkId: number,
    kind: SayKind,
    target: string,
    text: string
  ) => Effect.Effect<void, WriteError>
  /**
   * One raw line, verbatim; plaintext to an end-to-end encrypted target is refused, and so is a JOIN past the
   * account's channel limit (QuotaExceeded, as `join`).
   */
  readonly raw: (
    networkId: number,
    line: string
  ) => Effect.Effect<void, WriteError | E2eChannelUseSendMessage | QuotaExceeded>
  /**
   * Several raw lines that go out together, in order, with no line of Belay's between them (an IRCv3 draft/multiline
   * batch, a message split at the byte limit with its client tags): each is checked as `raw` checks one, and the send
   * queue takes all of them or none (SendQueueFull, nothing sent). At most SEND_QUEUE_LINES lines.
   */
  readonly rawLines: (
    networkId: number,
    lines: ReadonlyArray<string>
  ) => Effect.Effect<void, WriteError | E2eChannelUseSendMessage | QuotaExceeded>
  /**
   * Given key, else the stored key. The channel is remembered for rejoin. A new channel past the account's channel
   * limit on this network: QuotaExceeded, nothing sent (docs/contract.md "Account limits").
   */
  readonly join: (
    networkId: number,
    channel: string,
    key: Option.Option<string>
  ) => Effect.Effect<void, WriteError | QuotaExceeded>
  readonly part: (
    networkId: number,
    channel: string,
    reason: Option.Option<string>
  ) => Effect.Effect<void, WriteError | NotInChannel>
  readonly nick: (networkId: number, nick: string) => Effect.Effect<void, WriteError>
  /**
   * Some(message) → away; None → back. Passes the write gate (NotConnected otherwise, the away state unchanged);
   * once sent it is kept for the network's next registrations.
   */
  readonly away: (networkId: number, message: Option.Option<string>) => Effect.Effect<void, WriteError>
  readonly whois: (networkId: number, nick: string) => Effect.Effect<void, WriteError>
  readonly connect: (networkId: number, reconnect: boolean) => Effect.Effect<void, DeliveryError | LockedDown>
  readonly disconnect: (networkId: number) => Effect.Effect<void, DeliveryError>
  /** Members sorted by nick (casemapped); NotInChannel when the account is not in the channel. */
  readonly members: (
    networkId: number,
    channel: string
  ) => Effect.Effect<ReadonlyArray<Member>, DeliveryError | InvalidArguments | NotInChannel>
  readonly topic: (
    networkId: number,
    channel: string
  ) => Effect.Effect<ChannelTopic, DeliveryError | InvalidArguments | NotInChannel>
  readonly setTopic: (
    networkId: number,
    channel: string,
    topic: string
  ) => Effect.Effect<void, WriteError>
  /**
   * Fetches the list fresh and answers only the caller: Refused when the server refuses, Timeout when it does not
   * answer within MODE_LIST_TIMEOUT (or ends its reply without the list).
   */
  readonly modeList: (
    networkId: number,
    channel: string,
    letter: ModeListLetter
  ) => Effect.Effect<ModeList, WriteError | Refused>
  /** Validated against CHANMODES/PREFIX and packed into the fewest MODE lines; answers the lines sent. */
  readonly setModes: (
    networkId: number,
    channel: string,
    changes: ReadonlyArray<ModeChange>
  ) => Effect.Effect<ReadonlyArray<string>, WriteError>
  /** Whether a channel or nick of this network has an end-to-end encryption key (compared with its CASEMAPPING). */
  readonly isEncrypted: (networkId: number, target: string) => Effect.Effect<boolean>
  /**
   * The send_raw guard (the interface): the end-to-end encrypted target of a PRIVMSG or NOTICE in `line`, which
   * send_raw must refuse with `e2e-channel-use-send-message`; None when the line may be sent. Reads targets as the
   * server would (any casing, tags, prefix, STATUSMSG, lists); fails closed when the keys cannot be read.
   */
  readonly encryptedTargetOfRaw: (networkId: number, line: string) => Effect.Effect<Option.Option<string>>
}

export class NetworkControl extends Context.Tag("belay/NetworkControl")<NetworkControl, NetworkControlService>() {}
