/**
 * Route: the vocabulary a feature's HTTP handler is written in — the request as HttpServer hands it over, the
 * response it returns, and the route (method, path, handler) that joins them. HttpServer serves routes, Router
 * matches them; both import this, so neither imports the other. Types and tagged errors only.
 */
import type * as Http from "node:http"
import { Data, type Effect, type Stream } from "effect"

export class BodyTooLarge extends Data.TaggedError("BodyTooLarge")<{ readonly limit: number }> {}
export class BodyReadFailed extends Data.TaggedError("BodyReadFailed")<{ readonly cause: unknown }> {}
/** The client did not finish sending the body within HttpLimits.bodyTimeoutMs; answer 408 (the connection closes). */
export class BodyTimedOut extends Data.TaggedError("BodyTimedOut")<{ readonly afterMs: number }> {}

export interface HttpRequest {
  readonly method: string
  readonly path: string
  /** Path parameters of the matched route (`:id` → `params.id`), percent-decoded. */
  readonly params: Readonly<Record<string, string>>
  readonly query: URLSearchParams
  readonly headers: Http.IncomingHttpHeaders
  /** The TCP peer; the forwarded client address is resolved by ClientIp when trusted. */
  readonly remoteAddress: string
  /**
   * Reads the whole body; call it once per request. Fails with BodyTooLarge past `limit` bytes and with BodyTimedOut
   * when the client has not sent it all within HttpLimits.bodyTimeoutMs.
   */
  readonly body: (limit: number) => Effect.Effect<Buffer, BodyTooLarge | BodyReadFailed | BodyTimedOut>
  /**
   * Instead of `body`, for a body too large to hold (uploads): its bytes as they arrive, each pulled only when the
   * consumer asks, so the client is held back rather than buffered; BodyTooLarge past `limit` bytes (before any byte
   * when the declared length says so), BodyReadFailed when the client goes away, BodyTimedOut when it has not all
   * arrived within HttpLimits.bodyTimeoutMs plus `limit` at HttpLimits.streamFloorBytesPerSecond (a large file on a
   * slow link takes minutes; a trickle still ends). Optional so that test doubles of a request need not provide it.
   */
  readonly bodyStream?: (limit: number) => Stream.Stream<Uint8Array, BodyTooLarge | BodyReadFailed | BodyTimedOut>
  readonly header: (name: string) => string | undefined
  /**
   * The connection the request came on, as an identity only: a key for what is kept per connection (a WeakMap's, so
   * that it goes with the connection). Optional so that test doubles of a request need not provide it.
   */
  readonly connection?: object
}

export interface HttpResponse {
  readonly status: number
  readonly headers?: Readonly<Record<string, string>>
  /**
   * Parts are written in order without being joined: a large answer kept encoded (tools/list's ~54 KB) goes out as
   * it is, with only its small per-request part new, rather than copied into a fresh buffer for every request. A
   * string part is written as UTF-8; a string first part (an answer's few bytes that carry the request id) leaves in
   * the same chunk as the status line and headers (HttpServer `send`).
   */
  readonly body?: string | Buffer | ReadonlyArray<string | Buffer>
  /**
   * Instead of `body`, an answer too large to hold (Settings › Export): written chunk by chunk, each once the client
   * has taken the one before, without a content-length. A failure mid-way cuts the connection, so the client sees an
   * incomplete answer rather than a complete-looking one.
   */
  readonly stream?: Stream.Stream<string | Uint8Array, unknown>
}

export type Handler = (request: HttpRequest) => Effect.Effect<HttpResponse>

export interface Route {
  readonly method: "GET" | "HEAD" | "POST" | "DELETE" | "PUT" | "PATCH" | "OPTIONS"
  /** find-my-way syntax: `/settings/passkeys/:id/remove`. */
  readonly path: string
  /** Label for metrics; defaults to the path. */
  readonly name?: string
  readonly handler: Handler
}
