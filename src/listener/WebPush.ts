/**
 * WebPush (listener): soju's `soju.im/webpush` (soju's doc/ext/webpush.md; docs/contract.md "The IRC client
 * listener"; docs/decisions/irc-listener.md "Web Push for IRC clients"), so that an IRC client that lives on a phone
 * (Goguma) is notified while its connection is gone, as it was with soju.
 *
 * - `VAPID=<key>` in ISUPPORT for a client with the capability: the web's VAPID public key (services/push/
 *   VapidKeyStore.ts), base64url, the same on every node and for the connection's whole life, as the extension asks.
 * - `WEBPUSH REGISTER <endpoint> <keys>`: `<keys>` in message-tag form with `p256dh` and `auth` (RFC 8291); the
 *   endpoint an https URL (PushEndpoint.ts) whose address the destination guard accepts now (and again at every
 *   send); at most the account's `push-subscriptions` limit, browsers and IRC clients together. Registering an
 *   endpoint again replaces its subscription, as the extension requires. The subscription belongs to the credential
 *   this client signed in with (PushSubscriptions.ts) and to this connection's network (a control connection's is
 *   kept and sent nothing, as soju does). Answered `WEBPUSH REGISTER <endpoint>`.
 * - `WEBPUSH UNREGISTER <endpoint>`: removes it; an endpoint the account does not have is silently accepted, as the
 *   extension requires. Answered `WEBPUSH UNREGISTER <endpoint>`.
 * - Errors as the extension names them: `FAIL WEBPUSH INVALID_PARAMS <subcommand> <endpoint> :<why>` for a missing or
 *   excess parameter, an unknown subcommand, an endpoint refused (not https, malformed, or an address the guard
 *   refuses) and keys that are not a P-256 point and a 16-byte secret; `FAIL WEBPUSH INTERNAL_ERROR …` when the
 *   account holds as many subscriptions as its limit allows (soju answers that code for "Too many subscriptions").
 *   Without the capability `WEBPUSH` is an unknown command (421), as soju answers.
 * A read-only sign-in may register: being notified is reading.
 *
 * Concurrency rule: runs on the connection's session fiber only.
 */
import { Effect, Either } from "effect"
import { unescapeTagValue } from "../irc/IrcLine.js"
import type { PushOwner } from "../services/push/PushSubscriptions.js"
import { destinationOf, endpointProblem, MAX_ENDPOINT, subscriptionKeys } from "../services/push/PushEndpoint.js"
import { type Downstream, fail, numeric, replyLine } from "./Downstream.js"
import type { ListenerDeps } from "./ListenerDeps.js"

export const WEBPUSH_CAP = "soju.im/webpush"

/** The VAPID public key this client is told in ISUPPORT (IsupportReply.ts): once it has the capability. */
export const vapidFor = (deps: ListenerDeps, d: Downstream): string | undefined =>
  d.caps.enabled.has(WEBPUSH_CAP) ? deps.push.publicKey : undefined

/** What the client sent as `<keys>`: message-tag syntax (`p256dh=…;auth=…`), values unescaped. */
export const parseKeys = (raw: string): ReadonlyMap<string, string> => {
  const keys = new Map<string, string>()
  for (const item of raw.split(";")) {
    const eq = item.indexOf("=")
    if (eq <= 0) continue
    keys.set(item.slice(0, eq), unescapeTagValue(item.slice(eq + 1)))
  }
  return keys
}

/** The endpoint as a FAIL's context parameter: `*` when it could not be one (empty, spaced, overlong). */
const contextOf = (endpoint: string | undefined): string =>
  endpoint === undefined || endpoint === "" || endpoint.length > MAX_ENDPOINT || /[\s\0]/.test(endpoint) ||
    endpoint.startsWith(":")
    ? "*"
    : endpoint

/** The credential this client signed in with, as the subscription's owner (it goes when that ends). */
const ownerOf = (d: Downstream): PushOwner | undefined => {
  const credential = d.signedIn?.credential
  if (credential === undefined) return undefined
  if (credential.kind === "password") return { _tag: "Password", recoveredAt: credential.recoveredAt }
  return credential.kind === "api-token"
    ? { _tag: "ApiToken", tokenId: credential.tokenId }
    : { _tag: "Token", tokenId: credential.tokenId }
}

const register = (deps: ListenerDeps, d: Downstream, args: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const [endpoint, rawKeys] = args
    const invalid = (why: string) => fail(d, "WEBPUSH", "INVALID_PARAMS", ["REGISTER", contextOf(endpoint)], why)
    if (endpoint === undefined || rawKeys === undefined) return invalid("Expected WEBPUSH REGISTER <endpoint> <keys>")
    if (args.length > 2) return invalid("Too many parameters")
    const problem = endpointProblem(endpoint, deps.push.insecureEndpoints)
    if (problem !== undefined) return invalid(`Invalid endpoint: ${problem}`)
    const sent = parseKeys(rawKeys)
    const p256dh = sent.get("p256dh")
    const auth = sent.get("auth")
    if (p256dh === undefined || auth === undefined) return invalid("Missing auth or p256dh key")
    const keys = subscriptionKeys(p256dh, auth)
    if ("problem" in keys) return invalid(`Invalid keys: ${keys.problem}`)
    // A push service is a destination the member chooses: judged now, and again at every send
    // (docs/decisions/hosting.md "One destination guard").
    const { host, port } = destinationOf(endpoint)
    const refused = yield* Effect.either(deps.push.guard.vet(host, port))
    if (Either.isLeft(refused)) return invalid(`Invalid endpoint: ${refused.left.message}`)
    const signedIn = d.signedIn
    const owner = ownerOf(d)
    if (signedIn === undefined || owner === undefined) return invalid("Not signed in")
    const added = yield* Effect.either(deps.push.subscriptions.add(signedIn.accountId, owner, { endpoint, ...keys }, {
      networkId: d.network?.id ?? null,
      caps: [...d.caps.enabled]
    }))
    if (Either.isLeft(added)) {
      // docs/contract.md "Account limits": nothing registered.
      return fail(d, "WEBPUSH", "INTERNAL_ERROR", ["REGISTER", contextOf(endpoint)],
        `Too many subscriptions (at most ${added.left.max})`)
    }
    replyLine(d, { command: "WEBPUSH", params: ["REGISTER", endpoint] })
  })

const unregister = (deps: ListenerDeps, d: Downstream, args: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const [endpoint] = args
    const invalid = (why: string) => fail(d, "WEBPUSH", "INVALID_PARAMS", ["UNREGISTER", contextOf(endpoint)], why)
    if (endpoint === undefined || endpoint === "") return invalid("Expected WEBPUSH UNREGISTER <endpoint>")
    if (args.length > 1) return invalid("Too many parameters")
    const signedIn = d.signedIn
    if (signedIn === undefined) return invalid("Not signed in")
    // An endpoint this account does not have is accepted silently (the extension: "MUST silently ignore").
    if (endpoint.length <= MAX_ENDPOINT) yield* deps.push.subscriptions.removeEndpoint(signedIn.accountId, endpoint)
    replyLine(d, { command: "WEBPUSH", params: ["UNREGISTER", endpoint] })
  })

/** `WEBPUSH <subcommand> <params…>` of a registered client. */
export const onWebPush = (deps: ListenerDeps, d: Downstream, params: ReadonlyArray<string>): Effect.Effect<void> =>
  Effect.gen(function*() {
    if (!d.caps.enabled.has(WEBPUSH_CAP)) return numeric(d, "421", "WEBPUSH", "Unknown command")
    const sub = (params[0] ?? "").toUpperCase()
    const args = params.slice(1)
    switch (sub) {
      case "REGISTER":
        return yield* register(deps, d, args)
      case "UNREGISTER":
        return yield* unregister(deps, d, args)
      default:
        return fail(d, "WEBPUSH", "INVALID_PARAMS", [contextOf(params[0]), contextOf(params[1])], "Unknown subcommand")
    }
  })
