/**
 * LinkPreviews owns the preview of a link a member's client shows under a message (docs/decisions/previews.md):
 * `preview(url)` answers the page's title, description, image and site name, or none. The page is fetched by Belay,
 * never by the member's browser, through the destination guard (PreviewFetch: http or https, at most
 * `maxRedirects` redirects each judged again, the first `maxHtmlBytes` of the page, `timeout` for the whole), read by
 * PreviewHtml, and kept in PostgreSQL (`link_previews`, migration 0015) for `ttl` — a page without a preview for
 * `noneTtl`, one that could not be fetched for `failedTtl` — so one fetch serves every member on every node until
 * then. Not member data: nothing of it names who asked. Bounded by the prune job: rows past their expiry, then the
 * oldest past `maxRows`.
 *
 * Concurrency: one lookup per URL in flight in this process — later callers await the first, which runs in the
 * service's scope, so a member who hangs up does not cancel it for the others; at most `maxConcurrentFetches`
 * fetches at once. The in-flight table is a plain map touched only in synchronous steps. Two nodes that miss at
 * the same moment may each fetch once (the second row overwrites the first). Time from Effect's Clock.
 */
import { SqlClient } from "@effect/sql"
import { Cause, Clock, Data, Deferred, Duration, Effect, Exit, FiberId, Option } from "effect"
import type { FetchedResponse } from "../egress/GuardedFetch.js"
import { GuardedFetch } from "../egress/GuardedFetch.js"
import { periodicPrune } from "../upkeep/PeriodicPrune.js"
import { followLink } from "./PreviewFetch.js"
import { cleanText, decodeHtml, parsePreviewHtml, PreviewTextLimits } from "./PreviewHtml.js"
import { normalizePreviewUrl } from "./PreviewUrl.js"

export const LinkPreviewLimits = {
  /** Of a page, only this much is read: its head, where the preview is, comes first. */
  maxHtmlBytes: 512 * 1024,
  timeout: Duration.seconds(5),
  maxRedirects: 3,
  ttl: Duration.hours(24),
  noneTtl: Duration.hours(1),
  failedTtl: Duration.minutes(10),
  maxRows: 50_000,
  pruneEvery: Duration.minutes(10),
  maxConcurrentFetches: 16
} as const

/** What a page said about itself. `url` is where it was found (after redirects). */
export interface LinkPreview {
  readonly url: string
  readonly title: string | null
  readonly description: string | null
  /** The image's own URL (the routes hand it to the browser only through the image proxy). */
  readonly image: string | null
  readonly siteName: string | null
}

/** The URL is not one Belay fetches (PreviewUrl). */
export class InvalidPreviewUrl extends Data.TaggedError("InvalidPreviewUrl")<{ readonly detail: string }> {}

/** What one lookup of a URL found, as it is kept. */
export type Outcome =
  | { readonly _tag: "preview"; readonly preview: LinkPreview }
  | { readonly _tag: "none" }
  | { readonly _tag: "failed" }

const NONE: Outcome = { _tag: "none" }
const FAILED: Outcome = { _tag: "failed" }

const HTML_TYPES: ReadonlySet<string> = new Set(["text/html", "application/xhtml+xml"])
/** A link straight to an image is its own preview; the same types the image proxy serves. */
const IMAGE_TYPES: ReadonlySet<string> = new Set(["image/png", "image/jpeg", "image/gif", "image/webp", "image/avif"])
const ACCEPT = "text/html,application/xhtml+xml;q=0.9,image/avif,image/webp,image/png,image/jpeg,image/gif;q=0.8"

const mediaType = (contentType: string | undefined): string | undefined =>
  contentType?.split(";")[0]?.trim().toLowerCase()

const hostOf = (url: string): string | null => {
  try {
    return new URL(url).hostname
  } catch {
    return null
  }
}

/** What an answer of `finalUrl` says, as something to keep. */
export const classifyAnswer = (finalUrl: string, response: FetchedResponse): Outcome => {
  if (response.status >= 500) return FAILED
  if (response.status < 200 || response.status > 299) return NONE
  const type = mediaType(response.headers["content-type"])
  if (type !== undefined && IMAGE_TYPES.has(type)) {
    return { _tag: "preview", preview: { url: finalUrl, title: null, description: null, image: finalUrl, siteName: hostOf(finalUrl) } }
  }
  // No Content-Type: read as HTML, as a browser sniffing it would most often decide.
  if (type !== undefined && !HTML_TYPES.has(type)) return NONE
  const page = parsePreviewHtml(decodeHtml(response.body, response.headers["content-type"]), finalUrl)
  if (page.title === undefined && page.description === undefined && page.image === undefined) return NONE
  return {
    _tag: "preview",
    preview: {
      url: finalUrl,
      title: page.title ?? null,
      description: page.description ?? null,
      image: page.image ?? null,
      siteName: page.siteName ?? cleanText(hostOf(finalUrl) ?? undefined, PreviewTextLimits.siteName) ?? null
    }
  }
}

interface Row {
  readonly outcome: "preview" | "none" | "failed"
  readonly finalUrl: string | null
  readonly title: string | null
  readonly description: string | null
  readonly imageUrl: string | null
  readonly siteName: string | null
}

const fromRow = (url: string, row: Row): Outcome =>
  row.outcome === "preview"
    ? {
      _tag: "preview",
      preview: {
        url: row.finalUrl ?? url,
        title: row.title,
        description: row.description,
        image: row.imageUrl,
        siteName: row.siteName
      }
    }
    : row.outcome === "none"
    ? NONE
    : FAILED

const ttlOf = (outcome: Outcome): Duration.Duration =>
  Duration.decode(
    outcome._tag === "preview" ? LinkPreviewLimits.ttl : outcome._tag === "none" ? LinkPreviewLimits.noneTtl : LinkPreviewLimits.failedTtl
  )

export class LinkPreviews extends Effect.Service<LinkPreviews>()("belay/LinkPreviews", {
  scoped: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const fetcher = yield* GuardedFetch
    const scope = yield* Effect.scope
    const permits = yield* Effect.makeSemaphore(LinkPreviewLimits.maxConcurrentFetches)
    const inflight = new Map<string, Deferred.Deferred<Outcome>>()

    const cached = (url: string, now: number) =>
      sql<Row>`
        SELECT outcome, final_url AS "finalUrl", title, description, image_url AS "imageUrl", site_name AS "siteName"
        FROM link_previews WHERE url = ${url} AND expires_at > ${new Date(now)}`.pipe(
        Effect.orDie,
        Effect.map((rows) => (rows[0] === undefined ? Option.none() : Option.some(fromRow(url, rows[0]))))
      )

    const store = (url: string, outcome: Outcome, now: number) => {
      const p = outcome._tag === "preview" ? outcome.preview : undefined
      const expires = new Date(now + Duration.toMillis(ttlOf(outcome)))
      return sql`
        INSERT INTO link_previews (url, outcome, final_url, title, description, image_url, site_name, fetched_at, expires_at)
        VALUES (${url}, ${outcome._tag}, ${p?.url ?? null}, ${p?.title ?? null}, ${p?.description ?? null},
                ${p?.image ?? null}, ${p?.siteName ?? null}, ${new Date(now)}, ${expires})
        ON CONFLICT (url) DO UPDATE SET
          outcome = EXCLUDED.outcome, final_url = EXCLUDED.final_url, title = EXCLUDED.title,
          description = EXCLUDED.description, image_url = EXCLUDED.image_url, site_name = EXCLUDED.site_name,
          fetched_at = EXCLUDED.fetched_at, expires_at = EXCLUDED.expires_at`.pipe(Effect.orDie, Effect.asVoid)
    }

    const fetchPage = (url: string): Effect.Effect<Outcome> =>
      followLink(fetcher, url, {
        maxBytes: LinkPreviewLimits.maxHtmlBytes,
        timeout: LinkPreviewLimits.timeout,
        accept: ACCEPT,
        allowHttp: true,
        overflow: "truncate",
        maxRedirects: LinkPreviewLimits.maxRedirects
      }).pipe(
        Effect.map(({ url: finalUrl, response }) => classifyAnswer(finalUrl, response)),
        Effect.catchTag("FollowFailed", (e) => {
          // A destination the guard refuses, a scheme or a redirect chain that leads nowhere: the same answer next
          // time, kept as long as any page without a preview. A timeout or a refused connection may pass.
          const lasting = e.reason === "destination" || e.reason === "not-https" || e.reason === "redirects"
          return Effect.as(
            Effect.logDebug("link preview not fetched").pipe(Effect.annotateLogs({ host: hostOf(url), reason: e.reason })),
            lasting ? NONE : FAILED
          )
        }),
        permits.withPermits(1)
      )

    /** The cache's answer, else one fetch, stored before it is answered. */
    const lookup = (url: string): Effect.Effect<Outcome> =>
      Effect.gen(function*() {
        const hit = yield* cached(url, yield* Clock.currentTimeMillis)
        if (Option.isSome(hit)) return hit.value
        const outcome = yield* fetchPage(url)
        yield* store(url, outcome, yield* Clock.currentTimeMillis)
        return outcome
      })

    /**
     * The preview of `rawUrl`: some when the page has one, none when it has none or could not be fetched (the
     * difference only decides how long it is kept). Fails only when the URL is not one Belay fetches.
     */
    const preview = (rawUrl: string): Effect.Effect<Option.Option<LinkPreview>, InvalidPreviewUrl> =>
      Effect.suspend((): Effect.Effect<Option.Option<LinkPreview>, InvalidPreviewUrl> => {
        const url = normalizePreviewUrl(rawUrl)
        if (url === undefined) {
          return Effect.fail(
            new InvalidPreviewUrl({ detail: "url must be an http or https URL of at most 2048 characters, without user or password" })
          )
        }
        let pending = inflight.get(url)
        let start: Effect.Effect<unknown> = Effect.void
        if (pending === undefined) {
          const deferred = Deferred.unsafeMake<Outcome>(FiberId.none)
          inflight.set(url, deferred)
          pending = deferred
          start = lookup(url).pipe(
            Effect.tapErrorCause((cause) => Effect.logWarning("link preview lookup failed", Cause.pretty(cause))),
            // Whatever ends the lookup (a defect, the service closing) answers those waiting, as "nothing to show".
            Effect.onExit((exit) =>
              Effect.andThen(
                Effect.sync(() => inflight.delete(url)),
                Deferred.succeed(deferred, Exit.isSuccess(exit) ? exit.value : FAILED)
              )
            ),
            Effect.forkIn(scope)
          )
        }
        const awaited = pending
        return Effect.zipRight(
          start,
          Effect.map(Deferred.await(awaited), (outcome) => (outcome._tag === "preview" ? Option.some(outcome.preview) : Option.none()))
        )
      })

    /** Expired rows, then the oldest past the cap: the table stays bounded however many links members post. */
    const prune = Effect.gen(function*() {
      const now = new Date(yield* Clock.currentTimeMillis)
      yield* sql`DELETE FROM link_previews WHERE expires_at <= ${now}`
      yield* sql`
        DELETE FROM link_previews WHERE fetched_at <= (
          SELECT fetched_at FROM link_previews ORDER BY fetched_at DESC OFFSET ${LinkPreviewLimits.maxRows} LIMIT 1)`
    }).pipe(Effect.orDie)

    yield* periodicPrune("link previews", LinkPreviewLimits.pruneEvery, prune)

    return { preview, prune } as const
  }),
  dependencies: [GuardedFetch.Default]
}) {}
