/**
 * PushRoutes owns the REST routes of Web Push (docs/contract.md "The member's browser surface", REST and Push), JSON in and
 * out, every answer `no-store`, each for the member behind the session cookie or a Bearer OAuth / password-sign-in
 * token (MemberCredential: an API token or none → 401 invalid_token); a cookie-carried POST or DELETE needs a
 * same-origin request (a foreign origin is refused 403 by Cors.ts already):
 *
 * - `GET /api/push/vapid-public-key` → `{publicKey}`: base64url of the uncompressed 65-byte P-256 point, as
 *   `PushManager.subscribe` takes it (`applicationServerKey`, RFC 8292 §3.2).
 * - `POST /api/push/subscriptions` with a browser PushSubscription `{endpoint, keys: {p256dh, auth}}` (≤ 16 KiB) →
 *   201 `{id}`. The endpoint must be an https URL of at most 2048 characters (http too with
 *   BELAY_PUSH_INSECURE_ENDPOINTS=true), `p256dh` a P-256 point (RFC 8291 §3.1) and `auth` 16 bytes (§3.2), both
 *   base64url; anything else → 400 `{error: "invalid_request"}`. The subscription belongs to this credential. At the
 *   account's `push-subscriptions` limit → 409 `{error: "quota_exceeded", limit, max}` (docs/contract.md "Account limits").
 * - `DELETE /api/push/subscriptions/{id}` → 204; 404 when the member has no such subscription.
 * Stateless; PushSubscriptions is safe under concurrency.
 */
import { Effect, Either, Schema } from "effect"
import { Accounts } from "../../services/identity/Accounts.js"
import { AppConfig } from "../../services/AppConfig.js"
import { Authenticator } from "../../services/identity/Authenticator.js"
import { BrowserSessions } from "../../services/identity/BrowserSessions.js"
import { DestinationGuard } from "../../services/egress/DestinationGuard.js"
import { type PushOwner, PushSubscriptions } from "../../services/push/PushSubscriptions.js"
import { destinationOf, endpointProblem, subscriptionKeys } from "../../services/push/PushEndpoint.js"
import { WebPush } from "../../services/push/WebPush.js"
import { type Member, memberCredential } from "../auth/MemberCredential.js"
import { type HttpRequest, type HttpResponse, json, type Route } from "../HttpServer.js"
import { resolveIssuer } from "../Issuer.js"
import { foreignOrigin, isSameOriginPost, malformed, noStore, readOAuthBody } from "../oauth/OAuthHttp.js"
import { quotaExceeded } from "../QuotaResponse.js"

export const PushPaths = {
  vapidPublicKey: "/api/push/vapid-public-key",
  subscriptions: "/api/push/subscriptions",
  subscription: "/api/push/subscriptions/:id"
} as const

const SubscriptionBody = Schema.Struct({
  endpoint: Schema.String,
  keys: Schema.Struct({ p256dh: Schema.String, auth: Schema.String })
})
const decodeSubscription = Schema.decodeUnknownEither(SubscriptionBody)

const invalid = (description: string) => json(400, { error: "invalid_request", error_description: description }, noStore)

export const pushRoutes = Effect.gen(function*() {
  const config = yield* AppConfig
  const guard = yield* DestinationGuard
  const authenticator = yield* Authenticator
  const sessions = yield* BrowserSessions
  const subscriptions = yield* PushSubscriptions
  const push = yield* WebPush
  const services = { authenticator, sessions, accounts: yield* Accounts }

  /** The member, or the answer that ends the request; `changes` asks a cookie-carried request to be same-origin. */
  const member = (request: HttpRequest, changes: boolean): Effect.Effect<Either.Either<Member, HttpResponse>> =>
    Effect.gen(function*() {
      const issuer = resolveIssuer(request, config)
      if (Either.isLeft(issuer)) return Either.left(malformed())
      const found = yield* memberCredential(services, request, issuer.right)
      if (Either.isLeft(found)) return found
      if (changes && found.right._tag === "Session" && !isSameOriginPost(request, issuer.right)) return Either.left(foreignOrigin())
      return found
    })

  const publicKey: Route = {
    method: "GET",
    path: PushPaths.vapidPublicKey,
    name: "push.vapid-public-key",
    handler: (request) =>
      Effect.map(member(request, false), Either.match({
        onLeft: (refused) => refused,
        onRight: () => json(200, { publicKey: push.publicKey }, noStore)
      }))
  }

  const subscribe: Route = {
    method: "POST",
    path: PushPaths.subscriptions,
    name: "push.subscribe",
    handler: (request) =>
      Effect.gen(function*() {
        const who = yield* member(request, true)
        if (Either.isLeft(who)) return who.left
        const body = yield* readOAuthBody(request, { form: false, json: true })
        const decoded = decodeSubscription(body instanceof URLSearchParams ? undefined : body.json)
        if (Either.isLeft(decoded)) return invalid("send a PushSubscription {endpoint, keys: {p256dh, auth}}")
        const { endpoint, keys } = decoded.right
        // The same rules as an IRC client's WEBPUSH REGISTER (services/push/PushEndpoint.ts).
        const problem = endpointProblem(endpoint, config.pushInsecureEndpoints)
        if (problem !== undefined) return invalid(problem)
        // A push service is a destination a member chooses: the guard judges it now, and again at every send
        // (docs/decisions/hosting.md "One destination guard").
        const target = destinationOf(endpoint)
        const refused = yield* Effect.either(guard.vet(target.host, target.port))
        if (Either.isLeft(refused)) return invalid(`endpoint: ${refused.left.message}`)
        const stored = subscriptionKeys(keys.p256dh, keys.auth)
        if ("problem" in stored) return invalid(`keys.${stored.problem}`)
        const owner: PushOwner = who.right._tag === "Session"
          ? { _tag: "Session", sessionId: who.right.session.session.sessionId }
          : { _tag: "Token", tokenId: who.right.principal.tokenId }
        const id = yield* subscriptions.add(who.right.accountId, owner, { endpoint, ...stored })
        return json(201, { id }, noStore)
      }).pipe(
        Effect.catchTag("BodyRefused", (refused) => Effect.succeed(refused.response)),
        // docs/contract.md "Account limits": 409 quota_exceeded, nothing registered.
        Effect.catchTag("QuotaExceeded", (error) => Effect.succeed(quotaExceeded(error)))
      )
  }

  const unsubscribe: Route = {
    method: "DELETE",
    path: PushPaths.subscription,
    name: "push.unsubscribe",
    handler: (request) =>
      Effect.gen(function*() {
        const who = yield* member(request, true)
        if (Either.isLeft(who)) return who.left
        const raw = request.params.id ?? ""
        const notFound = json(404, { error: "not_found", error_description: "no such push subscription" }, noStore)
        if (!/^\d{1,15}$/.test(raw)) return notFound
        return (yield* subscriptions.remove(who.right.accountId, Number(raw))) ? { status: 204, headers: noStore } : notFound
      })
  }

  return [publicKey, subscribe, unsubscribe] as ReadonlyArray<Route>
})
