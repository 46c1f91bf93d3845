/**
 * ClientDocuments owns the Client ID Metadata Documents Belay has fetched: `resolve(clientId)` answers the document
 * an https client_id names, fetched through GuardedFetch (the destination guard; https, no redirects, 5 KiB, 3 s) and
 * judged by ClientDocument's rules, or why it cannot be used. Answers are kept in memory for their Cache-Control
 * lifetime within ClientDocumentLimits' bounds, failures for 30 s; a stale document is never used when the fetch
 * fails (docs/decisions/oauth.md "Client ID Metadata Documents: when the host is down").
 *
 * Concurrency: the cache and the in-flight table are plain maps touched only inside synchronous steps of the
 * fibers that call `resolve`; one fetch per URL at a time (later callers await the first), at most
 * `MAX_CONCURRENT_FETCHES` fetches at once, at most `MAX_CACHED` answers kept (the oldest dropped first). Time from
 * Effect's Clock.
 */
import { Clock, Deferred, Duration, Effect, Either, Exit } from "effect"
import { GuardedFetch } from "../egress/GuardedFetch.js"
import {
  type ClientDocument,
  ClientDocumentLimits,
  documentTtl,
  validateClientDocument,
  validateDocumentUrl
} from "./ClientDocument.js"

const MAX_CACHED = 1000
const MAX_CONCURRENT_FETCHES = 8

type Answer = Either.Either<ClientDocument, string>

export class ClientDocuments extends Effect.Service<ClientDocuments>()("belay/ClientDocuments", {
  effect: Effect.gen(function*() {
    const fetcher = yield* GuardedFetch
    const permits = yield* Effect.makeSemaphore(MAX_CONCURRENT_FETCHES)
    const cache = new Map<string, { readonly expiresAt: number; readonly answer: Answer }>()
    const inflight = new Map<string, Deferred.Deferred<Answer>>()

    const remember = (clientId: string, answer: Answer, ttl: Duration.Duration, now: number) => {
      cache.delete(clientId)
      if (cache.size >= MAX_CACHED) {
        const oldest = cache.keys().next().value
        if (oldest !== undefined) cache.delete(oldest)
      }
      cache.set(clientId, { expiresAt: now + Duration.toMillis(ttl), answer })
    }

    const fetchOnce = (clientId: string): Effect.Effect<Answer> =>
      fetcher.get(clientId, {
        maxBytes: ClientDocumentLimits.maxBytes,
        timeout: ClientDocumentLimits.timeout,
        accept: "application/json"
      }).pipe(
        Effect.map((response) => ({
          answer: validateClientDocument(clientId, {
            status: response.status,
            contentType: response.headers["content-type"],
            body: response.body
          }),
          cacheControl: response.headers["cache-control"]
        })),
        Effect.catchTag("FetchFailed", (e) =>
          Effect.succeed({ answer: Either.left<string>(`the document could not be fetched (${e.message})`), cacheControl: undefined })),
        Effect.tap(({ answer, cacheControl }) =>
          Effect.flatMap(Clock.currentTimeMillis, (now) =>
            Effect.sync(() =>
              remember(
                clientId,
                answer,
                Either.isRight(answer) ? documentTtl(cacheControl) : ClientDocumentLimits.failureTtl,
                now
              )
            ))),
        Effect.tap(({ answer }) =>
          Either.isLeft(answer)
            ? Effect.logInfo("client metadata document refused").pipe(Effect.annotateLogs({ clientId, reason: answer.left }))
            : Effect.void
        ),
        Effect.map(({ answer }) => answer),
        permits.withPermits(1)
      )

    /**
     * The document `clientId` names, or why it cannot be used (a sentence for the error page and the logs). Fetches
     * only a client_id ClientDocument.validateDocumentUrl accepts.
     */
    const resolve = (clientId: string): Effect.Effect<Answer> =>
      Effect.gen(function*() {
        const url = validateDocumentUrl(clientId)
        if (Either.isLeft(url)) return Either.left(url.left)
        const now = yield* Clock.currentTimeMillis
        const cached = cache.get(clientId)
        if (cached !== undefined && cached.expiresAt > now) return cached.answer
        const pending = inflight.get(clientId)
        if (pending !== undefined) return yield* Deferred.await(pending)
        const deferred = yield* Deferred.make<Answer>()
        inflight.set(clientId, deferred)
        return yield* fetchOnce(clientId).pipe(
          Effect.onExit((exit) =>
            Effect.andThen(
              Effect.sync(() => inflight.delete(clientId)),
              Deferred.succeed(deferred, Exit.isSuccess(exit) ? exit.value : Either.left("the fetch was interrupted"))
            )
          )
        )
      })

    return { resolve } as const
  }),
  dependencies: [GuardedFetch.Default]
}) {}
