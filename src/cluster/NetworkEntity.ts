/**
 * NetworkEntity: the cluster's entity of one IRC network (entity id `String(networkId)`), and its protocol — one RPC
 * per method of the `NetworkControl` port (src/actors/NetworkApi.ts) plus the node-internal ones: `Start` (the
 * reconciler's wake-up), `Reload` (the stored network changed), `Stop` (it was removed), `KeysChanged` (an
 * end-to-end key was written on some node) and `DirectAddress` (where the owner takes commands directly). docs/decisions/several-nodes.md "Several nodes" says why one entity per network.
 *
 * Nothing is `Persisted`: a command is answered by the network's owner now or fails (the caller's bound maps that to
 * `not-connected` / `timeout`), and no row outlives a node (docs/decisions/several-nodes.md: keepAlive rows are consumed; the
 * reconciler restarts networks instead). Success and error schemas are the tool payloads' and tool failures' own
 * (src/schema), so what crosses the wire is what the port already speaks; a key never does (`KeysChanged` names the
 * target, and the owner reads the key from the store).
 *
 * Concurrency rule: the cluster runs handlers with unbounded concurrency (a 15 s get_mode_list must not hold up a
 * send_message); each handler only enqueues to the network's actor, whose one dispatcher serializes them.
 */
import { ClusterSchema, Entity } from "@effect/cluster"
import { Rpc } from "@effect/rpc"
import { Schema } from "effect"
import { ChannelTopic } from "../schema/ChannelTopic.js"
import { ModeChange, ModeList, ModeListLetter } from "../schema/ChannelMode.js"
import { Member } from "../schema/Member.js"
import { NetworkStatus } from "../schema/Network.js"
import { KnownNetworkEvents } from "../schema/NetworkEvent.js"
import {
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
import { DirectAddress } from "./DirectWire.js"

/** The entity type's name, part of every entity address (and of the cluster's storage rows). */
export const NETWORK_ENTITY_TYPE = "Network"

/** The port's DeliveryError and WriteError as schemas (NetworkApi.ts). */
const DeliveryErrors = Schema.Union(UnknownNetwork, NotConnected, Timeout)
const WriteErrors = Schema.Union(UnknownNetwork, NotConnected, Timeout, InvalidArguments, SendQueueFull)

/** The port's UpstreamView (NetworkApi.ts): what an IRC client on another node is welcomed with. */
const UpstreamView = Schema.Struct({
  nick: Schema.String,
  user: Schema.NullOr(Schema.String),
  host: Schema.NullOr(Schema.String),
  isupport: Schema.Array(Schema.String),
  caps: Schema.Array(Schema.String),
  capValues: Schema.optionalWith(Schema.Record({ key: Schema.String, value: Schema.String }), { exact: true }),
  away: Schema.Boolean
})

const target = Schema.String
const channel = Schema.String

export const NetworkEntity = Entity.make(NETWORK_ENTITY_TYPE, [
  // Node-internal
  Rpc.make("Start"),
  Rpc.make("Reload", { payload: { reconnect: Schema.Boolean } }),
  Rpc.make("Stop"),
  Rpc.make("KeysChanged", { payload: { target } }),
  // The owner's direct command listener, while the network's actor runs there (DirectListener.ts); null otherwise.
  Rpc.make("DirectAddress", { success: Schema.NullOr(DirectAddress) }),
  // The port
  Rpc.make("Status", { success: NetworkStatus }),
  Rpc.make("Upstream", { success: Schema.OptionFromNullOr(UpstreamView) }),
  // The member's-tab events the network draws itself with, each checked where it arrives (src/schema/NetworkEvent.ts).
  Rpc.make("View", { success: KnownNetworkEvents }),
  Rpc.make("Say", {
    payload: { kind: Schema.Literal("privmsg", "action", "notice"), target, text: Schema.String },
    error: WriteErrors
  }),
  Rpc.make("Raw", {
    payload: { line: Schema.String },
    error: Schema.Union(WriteErrors, E2eChannelUseSendMessage, QuotaExceeded)
  }),
  Rpc.make("RawLines", {
    payload: { lines: Schema.Array(Schema.String) },
    error: Schema.Union(WriteErrors, E2eChannelUseSendMessage, QuotaExceeded)
  }),
  Rpc.make("Join", { payload: { channel, key: Schema.NullOr(Schema.String) }, error: Schema.Union(WriteErrors, QuotaExceeded) }),
  Rpc.make("Part", {
    payload: { channel, reason: Schema.NullOr(Schema.String) },
    error: Schema.Union(WriteErrors, NotInChannel)
  }),
  Rpc.make("Nick", { payload: { nick: Schema.String }, error: WriteErrors }),
  Rpc.make("Away", { payload: { message: Schema.NullOr(Schema.String) }, error: WriteErrors }),
  Rpc.make("Whois", { payload: { nick: Schema.String }, error: WriteErrors }),
  Rpc.make("Connect", { payload: { reconnect: Schema.Boolean }, error: Schema.Union(DeliveryErrors, LockedDown) }),
  Rpc.make("Disconnect", { error: DeliveryErrors }),
  Rpc.make("Members", {
    payload: { channel },
    success: Schema.Array(Member),
    error: Schema.Union(DeliveryErrors, InvalidArguments, NotInChannel)
  }),
  Rpc.make("Topic", {
    payload: { channel },
    success: ChannelTopic,
    error: Schema.Union(DeliveryErrors, InvalidArguments, NotInChannel)
  }),
  Rpc.make("SetTopic", { payload: { channel, topic: Schema.String }, error: WriteErrors }),
  Rpc.make("ModeList", {
    payload: { channel, letter: ModeListLetter },
    success: ModeList,
    error: Schema.Union(WriteErrors, Refused)
  }),
  Rpc.make("SetModes", {
    payload: { channel, changes: Schema.Array(ModeChange) },
    success: Schema.Array(Schema.String),
    error: WriteErrors
  }),
  Rpc.make("IsEncrypted", { payload: { target }, success: Schema.Boolean }),
  Rpc.make("EncryptedTargetOfRaw", { payload: { line: Schema.String }, success: Schema.NullOr(Schema.String) })
  // Belay exports no traces: a span per call would be work for nothing on every cross-node call.
]).annotate(ClusterSchema.ClientTracingEnabled, false)

export type NetworkEntity = typeof NetworkEntity

/** The entity id of a network. */
export const entityIdOf = (networkId: number): string => String(networkId)
