/**
 * The admin protocol between `belay <command>` and the running server, over the Unix
 * admin socket: one JSON request line, one JSON response line. Both sides decode with
 * these Schemas, so the server re-validates whatever a CLI (or anything else able to
 * open the socket) sends.
 */
import { Schema } from "effect"
import {
  AutojoinChannel,
  NetworkConnection,
  NetworkHost,
  NetworkName,
  NetworkNick,
  NetworkPort,
  NetworkRealname,
  NetworkUsername,
  ServerPassword
} from "./Network.js"
import { LIMIT_NAMES, type LimitName } from "./ToolErrors.js"

const Name = Schema.String.pipe(Schema.minLength(1), Schema.maxLength(256))
const Secret = Schema.String.pipe(Schema.maxLength(4096))
const Id = Schema.Number.pipe(Schema.int(), Schema.positive())

/**
 * An override as `belay account limits` gives it: a count, `unlimited` or `default` (back to the deployment's).
 * AccountLimits.set checks each against its own bounds (which limits may be unlimited, the ceiling of the others).
 */
export const LimitValue = Schema.Union(
  Schema.Number.pipe(Schema.int(), Schema.between(0, 1_000_000)),
  Schema.Literal("unlimited", "default")
)
export const LimitChanges = Schema.Struct(
  Object.fromEntries(LIMIT_NAMES.map((name) => [name, Schema.optional(LimitValue)])) as {
    readonly [K in LimitName]: Schema.optional<typeof LimitValue>
  }
  // A limit that does not exist is refused, never ignored: the operator meant something by it.
).annotations({ parseOptions: { onExcessProperty: "error" } })

/** One limit in `belay account show`: the count allowed (null: none), where it comes from, and what is held now. */
export const AdminLimit = Schema.Struct({
  max: Schema.NullOr(Schema.Number),
  source: Schema.Literal("override", "setting", "fixed", "none"),
  /** For `channels`, the most any one network holds (each network has its own count). */
  used: Schema.Number
})

export const AdminAccountShow = Schema.Struct({
  name: Schema.String,
  status: Schema.String,
  limits: Schema.Struct(
    Object.fromEntries(LIMIT_NAMES.map((name) => [name, AdminLimit])) as { readonly [K in LimitName]: typeof AdminLimit }
  ),
  /** Channels joined on connect, per network. */
  channels: Schema.Array(Schema.Struct({ networkId: Schema.Number, name: Schema.String, channels: Schema.Number })),
  /** BELAY_HISTORY_RETENTION_DAYS, the same for every account; null keeps everything. */
  historyRetentionDays: Schema.NullOr(Schema.Number)
})
export type AdminAccountShow = typeof AdminAccountShow.Type

export const AdminRequest = Schema.Union(
  Schema.TaggedStruct("AccountAdd", { name: Name, password: Secret }),
  Schema.TaggedStruct("AccountList", {}),
  Schema.TaggedStruct("AccountPause", { name: Name }),
  Schema.TaggedStruct("AccountResume", { name: Name }),
  Schema.TaggedStruct("AccountRecover", { name: Name, password: Secret }),
  /** `belay account limits NAME --networks N …` (docs/contract.md "Account limits"); only the limits given change. */
  Schema.TaggedStruct("AccountLimits", { name: Name, limits: LimitChanges }),
  Schema.TaggedStruct("AccountShow", { name: Name }),
  /** Irreversible: the CLI asks for confirmation unless `--yes` (docs/contract.md "Admin commands"). */
  Schema.TaggedStruct("AccountDelete", { name: Name }),
  /** Answered by a head line (an AdminResponse), then the archive's JSON Lines until the socket closes. */
  Schema.TaggedStruct("AccountExport", { name: Name }),
  Schema.TaggedStruct("NetworkAdd", {
    account: Name,
    name: NetworkName,
    host: NetworkHost,
    port: NetworkPort,
    tls: Schema.Boolean,
    tlsInsecure: Schema.Boolean,
    nick: Schema.optional(NetworkNick),
    username: Schema.optional(NetworkUsername),
    realname: Schema.optional(NetworkRealname),
    serverPassword: Schema.optional(ServerPassword),
    saslPlain: Schema.optional(Schema.Struct({ username: Name, password: Secret })),
    join: Schema.Array(AutojoinChannel)
  }),
  Schema.TaggedStruct("NetworkList", { account: Name }),
  Schema.TaggedStruct("NetworkRemove", { account: Name, id: Id }),
  Schema.TaggedStruct("TokenAdd", { account: Name, name: Name, scope: Schema.Literal("read", "read-write") }),
  Schema.TaggedStruct("TokenList", { account: Name }),
  Schema.TaggedStruct("TokenRevoke", { account: Name, name: Name }),
  Schema.TaggedStruct("ChannelEncrypt", { account: Name, networkId: Id, target: Name, key: Secret }),
  Schema.TaggedStruct("ChannelDecrypt", { account: Name, networkId: Id, target: Name })
)
export type AdminRequest = typeof AdminRequest.Type

export const AdminResponse = Schema.Union(
  Schema.Struct({ ok: Schema.Literal(true), result: Schema.Unknown }),
  Schema.Struct({ ok: Schema.Literal(false), error: Schema.String })
)
export type AdminResponse = typeof AdminResponse.Type

/**
 * One row of `belay network list`: the stored network (never its secrets, only whether it has them) and its live
 * connection as the network's actor publishes it, so an operator sees why it is down without reading the logs. The
 * live fields mean what list_networks' do; the current nick is `currentNick`, since `nick` is the configured one.
 */
export const AdminNetwork = Schema.Struct({
  id: Schema.Number,
  name: Schema.String,
  host: Schema.String,
  port: Schema.Number,
  tls: Schema.Boolean,
  tlsInsecure: Schema.Boolean,
  /** The nick configured with `network add --nick`. */
  nick: Schema.String,
  /** False after disconnect_network: the network stays offline across restarts until connect_network. */
  enabled: Schema.Boolean,
  hasServerPassword: Schema.Boolean,
  hasSasl: Schema.Boolean,
  state: NetworkConnection.fields.state,
  currentNick: NetworkConnection.fields.nick,
  lastError: NetworkConnection.fields.lastError,
  nextRetryAt: NetworkConnection.fields.nextRetryAt
})
export type AdminNetwork = typeof AdminNetwork.Type
