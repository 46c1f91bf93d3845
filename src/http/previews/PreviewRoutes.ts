/**
 * PreviewRoutes owns the two routes of link previews (docs/contract.md "Link previews"; docs/decisions/previews.md),
 * each for the member behind the session cookie or a Bearer OAuth / password-sign-in token (MemberCredential: an API
 * token or none → 401 invalid_token):
 *
 * - `GET /api/previews?url=<http(s) URL>` → 200 `{url, title, description, image, siteName}` (each but `url` may be
 *   null; `image` a same-origin path of the image proxy), or 204 when the page has no preview or could not be
 *   fetched; 400 `invalid_request` for a URL Belay does not fetch. Cached by the browser for 10 minutes (private).
 * - `GET /api/previews/image?url=…&sig=…` → the image (PNG, JPEG, GIF, WebP, AVIF) with `nosniff`, a sandboxing CSP
 *   and a day of private caching; 403 `invalid_signature` unless `sig` is Belay's own for `url` (ProxiedImage), 502
 *   `bad_gateway` when the remote side has no such image.
 *
 * Each is rate-limited per account (a count a member can grow, docs/decisions/account-limits.md): past it, 429
 * `too_many_requests` with `Retry-After`. The limiters' state is per process, in memory. Otherwise stateless.
 */
import { Duration, Effect, Either, Option } from "effect"
import { Accounts } from "../../services/identity/Accounts.js"
import { AppConfig } from "../../services/AppConfig.js"
import { Authenticator } from "../../services/identity/Authenticator.js"
import { BrowserSessions } from "../../services/identity/BrowserSessions.js"
import { makeSlidingWindow } from "../../services/identity/RegistrationLimiter.js"
import { ImageProxy } from "../../services/previews/ImageProxy.js"
import { LinkPreviews } from "../../services/previews/LinkPreviews.js"
import { normalizePreviewUrl } from "../../services/previews/PreviewUrl.js"
import { memberRequest, memberRequestServices } from "../auth/MemberCredential.js"
import { type HttpRequest, type HttpResponse, json, type Route } from "../HttpServer.js"
import { noStore } from "../oauth/OAuthHttp.js"
import { PreviewPaths, proxiedImagePath } from "./ProxiedImage.js"

export const PreviewRateLimits = {
  /** Previews a member's clients may ask for in a minute: a screenful of links, drawn as the member scrolls. */
  previews: 120,
  /** Images a minute: a preview's image and the sizes a browser asks again after its cache. */
  images: 300,
  window: Duration.minutes(1)
} as const

/** The answer of a proxied image: nothing in it can run, be sniffed into something else, or be framed. */
export const IMAGE_HEADERS: Readonly<Record<string, string>> = {
  "x-content-type-options": "nosniff",
  "content-security-policy": "default-src 'none'; sandbox",
  "cache-control": "private, max-age=86400",
  "content-disposition": "inline",
  "cross-origin-resource-policy": "same-origin",
  "referrer-policy": "no-referrer"
}

const PREVIEW_CACHE = { "cache-control": "private, max-age=600" }

const invalid = (description: string) => json(400, { error: "invalid_request", error_description: description }, noStore)

/** The one value of a query parameter given exactly once. */
const single = (query: URLSearchParams, name: string): string | undefined => {
  const values = query.getAll(name)
  return values.length === 1 ? values[0] : undefined
}

export const previewRoutes = Effect.gen(function*() {
  const services = yield* memberRequestServices
  const previews = yield* LinkPreviews
  const proxy = yield* ImageProxy
  const previewLimit = yield* makeSlidingWindow({ limit: PreviewRateLimits.previews, window: PreviewRateLimits.window })
  const imageLimit = yield* makeSlidingWindow({ limit: PreviewRateLimits.images, window: PreviewRateLimits.window })

  /** Takes one of the account's slots, or answers 429. */
  const limited = (limiter: typeof previewLimit, accountId: number, what: string) =>
    Effect.match(limiter.take(String(accountId)), {
      onFailure: (e): HttpResponse | undefined =>
        json(429, { error: "too_many_requests", error_description: `too many ${what} a minute for this account; try again later` }, {
          ...noStore,
          "retry-after": String(e.retryAfterSeconds)
        }),
      onSuccess: () => undefined
    })

  const preview: Route = {
    method: "GET",
    path: PreviewPaths.previews,
    name: "previews.preview",
    handler: (request: HttpRequest) =>
      Effect.gen(function*() {
        const who = yield* memberRequest(services, request, false)
        if (Either.isLeft(who)) return who.left
        const raw = single(request.query, "url")
        if (raw === undefined || normalizePreviewUrl(raw) === undefined) {
          return invalid("url must be given once: an http or https URL of at most 2048 characters, without user or password")
        }
        const refused = yield* limited(previewLimit, who.right.accountId, "previews")
        if (refused !== undefined) return refused
        const found = yield* Effect.either(previews.preview(raw))
        if (Either.isLeft(found)) return invalid(found.left.detail)
        if (Option.isNone(found.right)) return { status: 204, headers: PREVIEW_CACHE }
        const p = found.right.value
        return json(200, {
          url: p.url,
          title: p.title,
          description: p.description,
          image: p.image === null ? null : proxiedImagePath(proxy, p.image),
          siteName: p.siteName
        }, PREVIEW_CACHE)
      })
  }

  const image: Route = {
    method: "GET",
    path: PreviewPaths.image,
    name: "previews.image",
    handler: (request: HttpRequest) =>
      Effect.gen(function*() {
        const who = yield* memberRequest(services, request, false)
        if (Either.isLeft(who)) return who.left
        const url = single(request.query, "url")
        const sig = single(request.query, "sig")
        if (url === undefined || sig === undefined) return invalid("url and sig must each be given once")
        if (!proxy.verify(url, sig)) {
          return json(403, { error: "invalid_signature", error_description: "this image address was not made by Belay" }, noStore)
        }
        const refused = yield* limited(imageLimit, who.right.accountId, "images")
        if (refused !== undefined) return refused
        const fetched = yield* Effect.either(proxy.fetch(url))
        if (Either.isLeft(fetched)) {
          return fetched.left.reason === "invalid-url"
            ? invalid(fetched.left.detail)
            : json(502, { error: "bad_gateway", error_description: `no image: ${fetched.left.message}` }, noStore)
        }
        return {
          status: 200,
          headers: { "content-type": fetched.right.contentType, ...IMAGE_HEADERS },
          body: fetched.right.body
        } satisfies HttpResponse
      })
  }

  return [preview, image] as ReadonlyArray<Route>
})
