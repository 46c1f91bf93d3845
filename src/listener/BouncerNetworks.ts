/**
 * BouncerNetworks: the soju.im/bouncer-networks extension — `BOUNCER LISTNETWORKS` (a `soju.im/bouncer-networks`
 * batch of `BOUNCER NETWORK <netid> <attributes>`), ADDNETWORK, CHANGENETWORK and DELNETWORK through the same
 * checks as the browser's `/api/networks` (the field Schemas of src/schema/Network.ts, then Networks.add, update,
 * remove), and the `-notify` lines when a network is added, changed, removed or changes state. Attributes use
 * message-tag syntax; `state` is connected, connecting or disconnected (backoff and offline), with `error` from the
 * last failure. BIND is handled before registration (Registration.ts).
 *
 * Concurrency rule: runs on the connection's session fiber only.
 */
import { Effect, Either, Option, Schema } from "effect"
import { escapeTagValue, unescapeTagValue } from "../irc/IrcLine.js"
import {
  NetworkHost,
  NetworkName,
  NetworkNick,
  NetworkPort,
  NetworkRealname,
  NetworkUsername,
  ServerPassword
} from "../schema/Network.js"
import type { NetworkStatus } from "../schema/Network.js"
import type { NetworkSummary } from "../services/networks/Networks.js"
import { type Downstream, fail, nextBatchId, replyLine } from "./Downstream.js"
import type { ListenerDeps } from "./ListenerDeps.js"

const stateOf = (status: NetworkStatus): string =>
  status.state === "connected" ? "connected" : status.state === "connecting" ? "connecting" : "disconnected"

/** The attributes of a network, in message-tag syntax. */
export const networkAttributes = (network: NetworkSummary, status: NetworkStatus): string => {
  const attrs: Array<[string, string]> = [
    ["name", network.name],
    ["state", stateOf(status)],
    ["host", network.host],
    ["port", String(network.port)],
    ["tls", network.tls ? "1" : "0"],
    ["nickname", network.nick]
  ]
  if (network.username !== null) attrs.push(["username", network.username])
  if (network.realname !== null) attrs.push(["realname", network.realname])
  if (status.state !== "connected" && status.lastError !== null) attrs.push(["error", status.lastError])
  return attrs.map(([k, v]) => `${k}=${escapeTagValue(v)}`).join(";")
}

/** The attributes a client sends, unescaped; undefined when they are not in tag syntax. */
const parseAttributes = (raw: string): Map<string, string> | undefined => {
  const attrs = new Map<string, string>()
  for (const item of raw.split(";")) {
    if (item === "") continue
    const eq = item.indexOf("=")
    const key = eq === -1 ? item : item.slice(0, eq)
    if (!/^[a-z-]+$/.test(key)) return undefined
    attrs.set(key, eq === -1 ? "" : unescapeTagValue(item.slice(eq + 1)))
  }
  return attrs
}

const WRITABLE = new Set(["name", "host", "port", "tls", "nickname", "username", "realname", "pass"])

/** The same field checks as the browser's network form. */
const Fields = Schema.Struct({
  name: Schema.optional(NetworkName),
  host: Schema.optional(NetworkHost),
  port: Schema.optional(NetworkPort),
  tls: Schema.optional(Schema.Boolean),
  nick: Schema.optional(NetworkNick),
  username: Schema.optional(NetworkUsername),
  realname: Schema.optional(NetworkRealname),
  password: Schema.optional(ServerPassword)
})
const decodeFields = Schema.decodeUnknownEither(Fields)

type Checked = Either.Either<typeof Fields.Type, { readonly code: string; readonly attribute: string; readonly message: string }>

const checkAttributes = (attrs: Map<string, string>): Checked => {
  for (const key of attrs.keys()) {
    if (key === "state" || key === "error") return Either.left({ code: "READ_ONLY_ATTRIBUTE", attribute: key, message: `${key} is read-only` })
    if (!WRITABLE.has(key)) return Either.left({ code: "UNKNOWN_ATTRIBUTE", attribute: key, message: `unknown attribute ${key}` })
  }
  const port = attrs.get("port")
  const tls = attrs.get("tls")
  const input: Record<string, unknown> = {}
  if (attrs.has("name")) input.name = attrs.get("name")
  if (attrs.has("host")) input.host = attrs.get("host")
  if (port !== undefined) input.port = /^\d{1,5}$/.test(port) ? Number(port) : port
  if (tls !== undefined) input.tls = tls === "1" ? true : tls === "0" ? false : tls
  if (attrs.has("nickname")) input.nick = attrs.get("nickname")
  if (attrs.has("username")) input.username = attrs.get("username")
  if (attrs.has("realname")) input.realname = attrs.get("realname")
  if (attrs.has("pass")) input.password = attrs.get("pass")
  return Either.mapLeft(decodeFields(input), (e) => ({
    code: "INVALID_ATTRIBUTE",
    attribute: "*",
    message: `invalid attributes: ${e.message.replace(/\s+/g, " ").slice(0, 300)}`
  }))
}

const listNetworks = (deps: ListenerDeps, d: Downstream, accountId: number) =>
  Effect.gen(function*() {
    const owned = yield* deps.networks.listForAccount(accountId)
    const batch = d.caps.enabled.has("batch") ? nextBatchId(d) : undefined
    if (batch !== undefined) replyLine(d, { command: "BATCH", params: [`+${batch}`, "soju.im/bouncer-networks"] })
    for (const network of owned) {
      const status = yield* deps.control.status(network.id)
      replyLine(
        d,
        { command: "BOUNCER", params: ["NETWORK", String(network.id), networkAttributes(network, status)] },
        batch !== undefined ? { batch } : {}
      )
    }
    if (batch !== undefined) replyLine(d, { command: "BATCH", params: [`-${batch}`] })
  })

const netIdOf = (raw: string | undefined) => (raw !== undefined && /^\d{1,15}$/.test(raw) ? Number(raw) : undefined)

export const onBouncer = (deps: ListenerDeps, d: Downstream, params: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const signedIn = d.signedIn
    if (signedIn === undefined) return
    const sub = (params[0] ?? "").toUpperCase()
    const writable = () => {
      if (!signedIn.readOnly) return true
      fail(d, "BOUNCER", "READ_ONLY", [sub], "This sign-in may only read")
      return false
    }
    switch (sub) {
      case "LISTNETWORKS":
        return yield* listNetworks(deps, d, signedIn.accountId)
      case "BIND":
        return fail(d, "BOUNCER", "REGISTRATION_IS_COMPLETED", ["BIND"], "BIND is only accepted before registration")
      case "ADDNETWORK": {
        if (!writable()) return
        const attrs = parseAttributes(params[1] ?? "")
        if (attrs === undefined) return fail(d, "BOUNCER", "INVALID_ATTRIBUTE", ["ADDNETWORK", "*"], "Attributes must use tag syntax")
        for (const needed of ["host"]) {
          if (!attrs.has(needed)) return fail(d, "BOUNCER", "NEED_ATTRIBUTE", ["ADDNETWORK", needed], `${needed} is required`)
        }
        const checked = checkAttributes(attrs)
        if (Either.isLeft(checked)) return fail(d, "BOUNCER", checked.left.code, ["ADDNETWORK", checked.left.attribute], checked.left.message)
        const f = checked.right
        const added = yield* deps.networks.add(signedIn.accountName, {
          name: f.name ?? f.host ?? "network",
          host: f.host ?? "",
          port: f.port ?? (f.tls === false ? 6667 : 6697),
          tls: f.tls ?? true,
          tlsInsecure: false,
          nick: f.nick ?? d.nick,
          username: Option.fromNullable(f.username),
          realname: Option.fromNullable(f.realname),
          serverPassword: Option.fromNullable(f.password),
          sasl: Option.none(),
          join: []
        }).pipe(Effect.either)
        if (Either.isLeft(added)) {
          // docs/contract.md "Account limits": the refusal names the limit, as JOIN's does.
          if (added.left._tag === "QuotaExceeded") return fail(d, "BOUNCER", "QUOTA_EXCEEDED", ["ADDNETWORK"], added.left.message)
          const attribute = added.left._tag === "DestinationRefused" ? "host" : "name"
          return fail(d, "BOUNCER", "INVALID_ATTRIBUTE", ["ADDNETWORK", attribute], added.left.message)
        }
        return replyLine(d, { command: "BOUNCER", params: ["ADDNETWORK", String(added.right)] })
      }
      case "CHANGENETWORK": {
        if (!writable()) return
        const netId = netIdOf(params[1])
        const attrs = parseAttributes(params[2] ?? "")
        if (netId === undefined) return fail(d, "BOUNCER", "INVALID_NETID", ["CHANGENETWORK", params[1] ?? "*"], "Invalid network id")
        if (attrs === undefined) return fail(d, "BOUNCER", "INVALID_ATTRIBUTE", ["CHANGENETWORK", "*"], "Attributes must use tag syntax")
        const checked = checkAttributes(attrs)
        if (Either.isLeft(checked)) {
          return fail(d, "BOUNCER", checked.left.code, ["CHANGENETWORK", checked.left.attribute], checked.left.message)
        }
        const f = checked.right
        const updated = yield* deps.networks.update(signedIn.accountId, netId, {
          name: f.name,
          host: f.host,
          port: f.port,
          tls: f.tls,
          nick: f.nick,
          username: f.username,
          realname: f.realname,
          serverPassword: f.password
        }).pipe(Effect.either)
        if (Either.isLeft(updated)) {
          return updated.left._tag === "NetworkExists"
            ? fail(d, "BOUNCER", "INVALID_ATTRIBUTE", ["CHANGENETWORK", "name"], updated.left.message)
            : updated.left._tag === "DestinationRefused"
            ? fail(d, "BOUNCER", "INVALID_ATTRIBUTE", ["CHANGENETWORK", "host"], updated.left.message)
            : fail(d, "BOUNCER", "INVALID_NETID", ["CHANGENETWORK", String(netId)], "No such network")
        }
        return replyLine(d, { command: "BOUNCER", params: ["CHANGENETWORK", String(netId)] })
      }
      case "DELNETWORK": {
        if (!writable()) return
        const netId = netIdOf(params[1])
        if (netId === undefined) return fail(d, "BOUNCER", "INVALID_NETID", ["DELNETWORK", params[1] ?? "*"], "Invalid network id")
        const removed = yield* deps.networks.remove(signedIn.accountName, netId).pipe(Effect.either)
        if (Either.isLeft(removed)) return fail(d, "BOUNCER", "INVALID_NETID", ["DELNETWORK", String(netId)], "No such network")
        return replyLine(d, { command: "BOUNCER", params: ["DELNETWORK", String(netId)] })
      }
      default:
        return fail(d, "BOUNCER", "UNKNOWN_COMMAND", [params[0] ?? "*"], "Unknown BOUNCER subcommand")
    }
  })

/** `BOUNCER NETWORK` for a client with bouncer-networks-notify: the network now, or `*` once it is gone. */
export const notifyNetwork = (deps: ListenerDeps, d: Downstream, networkId: number, accountId: number) =>
  Effect.gen(function*() {
    if (!d.caps.enabled.has("soju.im/bouncer-networks-notify")) return
    const owned = yield* deps.networks.listForAccount(accountId)
    const network = owned.find((n) => n.id === networkId)
    if (network === undefined) return replyLine(d, { command: "BOUNCER", params: ["NETWORK", String(networkId), "*"] })
    const status = yield* deps.control.status(networkId)
    replyLine(d, { command: "BOUNCER", params: ["NETWORK", String(networkId), networkAttributes(network, status)] })
  })
