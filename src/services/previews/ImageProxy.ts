/**
 * ImageProxy owns the images Belay fetches so that a member's browser never asks a linked site for them
 * (docs/decisions/previews.md "The image proxy"): a preview's image, an app's logo on the approval page. `fetch(url)`
 * gets it through the destination guard (PreviewFetch: http or https, `maxRedirects` redirects each judged again,
 * at most `maxBytes`, `timeout` for the whole) and answers it only when the remote server calls it a PNG, JPEG, GIF,
 * WebP or AVIF image, its bytes are one (ImageBytes: never SVG) and it is not too large to unpack.
 *
 * `signature(url)` is what makes a proxied URL Belay's own: an HMAC-SHA256 of the URL under a key derived from the
 * data key (SecretBox.derive, the same on every node with the same BELAY_SECRET_KEY), so only URLs Belay itself put
 * in a preview or a page are fetched, and the proxy is no open relay (docs/decisions/previews.md "Signed URLs").
 *
 * Concurrency: one fetch per URL in flight in this process (later callers await the first, which runs in the
 * service's scope); at most `maxConcurrentFetches` at once; answers kept in memory up to `cacheBytes` for
 * `cacheTtl`, the least recently stored dropped first. The maps are touched only in synchronous steps.
 */
import * as Crypto from "node:crypto"
import { Clock, Data, Deferred, Duration, Effect, Either, Exit, FiberId } from "effect"
import { SecretBox } from "../crypto/SecretBox.js"
import { GuardedFetch } from "../egress/GuardedFetch.js"
import { IMAGE_TYPES, type ImageType, judgeImage } from "./ImageBytes.js"
import { followLink } from "./PreviewFetch.js"
import { normalizePreviewUrl } from "./PreviewUrl.js"

export const ImageProxyLimits = {
  maxBytes: 5 * 1024 * 1024,
  timeout: Duration.seconds(5),
  maxRedirects: 3,
  cacheBytes: 16 * 1024 * 1024,
  cacheTtl: Duration.minutes(10),
  maxConcurrentFetches: 8
} as const

export interface ProxiedImage {
  readonly contentType: ImageType
  readonly body: Buffer
}

/** Why there is no image to serve: `invalid-url` is the caller's; every other reason is the remote side's. */
export class ImageRefused extends Data.TaggedError("ImageRefused")<{
  readonly reason: "invalid-url" | "fetch" | "status" | "type"
  readonly detail: string
}> {
  override get message(): string {
    return `${this.reason}: ${this.detail}`
  }
}

const ACCEPT = "image/avif,image/webp,image/png,image/jpeg,image/gif"

type Answer = Either.Either<ProxiedImage, ImageRefused>

export class ImageProxy extends Effect.Service<ImageProxy>()("belay/ImageProxy", {
  scoped: Effect.gen(function*() {
    const fetcher = yield* GuardedFetch
    const key = (yield* SecretBox).derive("image proxy")
    const scope = yield* Effect.scope
    const permits = yield* Effect.makeSemaphore(ImageProxyLimits.maxConcurrentFetches)
    const inflight = new Map<string, Deferred.Deferred<Answer>>()
    const cache = new Map<string, { readonly at: number; readonly image: ProxiedImage }>()
    let cachedBytes = 0

    /** base64url HMAC-SHA256 of the URL; a domain string keeps it from being any other MAC of the same key. */
    const signature = (url: string): string =>
      Crypto.createHmac("sha256", key).update(`belay image proxy\0${url}`).digest("base64url")

    /** Whether `presented` is `url`'s signature, compared in constant time. */
    const verify = (url: string, presented: string): boolean => {
      const expected = Buffer.from(signature(url))
      const given = Buffer.from(presented)
      return given.length === expected.length && Crypto.timingSafeEqual(given, expected)
    }

    const remember = (url: string, image: ProxiedImage, now: number) => {
      if (image.body.length > ImageProxyLimits.cacheBytes / 4) return
      const old = cache.get(url)
      if (old !== undefined) cachedBytes -= old.image.body.length
      cache.delete(url)
      cache.set(url, { at: now, image })
      cachedBytes += image.body.length
      for (const [oldest, entry] of cache) {
        if (cachedBytes <= ImageProxyLimits.cacheBytes) break
        cache.delete(oldest)
        cachedBytes -= entry.image.body.length
      }
    }

    const fetchImage = (url: string): Effect.Effect<Answer> =>
      followLink(fetcher, url, {
        maxBytes: ImageProxyLimits.maxBytes,
        timeout: ImageProxyLimits.timeout,
        accept: ACCEPT,
        allowHttp: true,
        maxRedirects: ImageProxyLimits.maxRedirects
      }).pipe(
        Effect.map(({ response }): Answer => {
          if (response.status !== 200) return Either.left(new ImageRefused({ reason: "status", detail: `the site answered ${response.status}` }))
          const declared = response.headers["content-type"]?.split(";")[0]?.trim().toLowerCase()
          if (declared === undefined || !IMAGE_TYPES.has(declared)) {
            return Either.left(new ImageRefused({ reason: "type", detail: `the site calls it ${declared ?? "nothing"}` }))
          }
          const judged = judgeImage(response.body)
          if ("refused" in judged) return Either.left(new ImageRefused({ reason: "type", detail: judged.refused }))
          return Either.right({ contentType: judged.type, body: response.body })
        }),
        Effect.catchTag("FollowFailed", (e) => Effect.succeed(Either.left(new ImageRefused({ reason: "fetch", detail: e.message })))),
        Effect.tap((answer) =>
          Either.isRight(answer) ? Effect.flatMap(Clock.currentTimeMillis, (now) => Effect.sync(() => remember(url, answer.right, now))) : Effect.void
        ),
        permits.withPermits(1)
      )

    /** The image at `rawUrl`, or why there is none. The caller has checked the URL's signature. */
    const fetch = (rawUrl: string): Effect.Effect<ProxiedImage, ImageRefused> =>
      Effect.flatMap(Clock.currentTimeMillis, (now) =>
        Effect.suspend((): Effect.Effect<ProxiedImage, ImageRefused> => {
          const url = normalizePreviewUrl(rawUrl)
          if (url === undefined) return Effect.fail(new ImageRefused({ reason: "invalid-url", detail: "not an http or https URL Belay fetches" }))
          const hit = cache.get(url)
          if (hit !== undefined && now - hit.at < Duration.toMillis(ImageProxyLimits.cacheTtl)) return Effect.succeed(hit.image)
          let pending = inflight.get(url)
          let start: Effect.Effect<unknown> = Effect.void
          if (pending === undefined) {
            const deferred = Deferred.unsafeMake<Answer>(FiberId.none)
            inflight.set(url, deferred)
            pending = deferred
            start = fetchImage(url).pipe(
              Effect.onExit((exit) =>
                Effect.andThen(
                  Effect.sync(() => inflight.delete(url)),
                  Deferred.succeed(
                    deferred,
                    Exit.isSuccess(exit) ? exit.value : Either.left(new ImageRefused({ reason: "fetch", detail: "the fetch was cut short" }))
                  )
                )
              ),
              Effect.forkIn(scope)
            )
          }
          const awaited = pending
          return Effect.zipRight(start, Effect.flatMap(Deferred.await(awaited), Either.match({ onLeft: Effect.fail, onRight: Effect.succeed })))
        }))

    return { signature, verify, fetch } as const
  }),
  dependencies: [GuardedFetch.Default, SecretBox.Default]
}) {}
