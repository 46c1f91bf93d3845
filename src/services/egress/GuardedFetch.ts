/**
 * GuardedFetch owns the one way Belay makes an HTTP request on a member's or an app's behalf: a GET of a document
 * over https (a Client ID Metadata Document), or over http too (a link preview, a proxied image), and a POST to a Web
 * Push endpoint (`send`). The destination is asked of DestinationGuard first, and the connection goes to the
 * address it checked and no other (a lookup that answers the pinned address), while TLS verifies the URL's name.
 * Bounded in every way a remote party could stretch (docs/decisions/oauth.md "Client ID Metadata Documents: fetched
 * through the destination guard"): https only unless `allowHttp`, no redirects (a 3xx is an answer, never followed:
 * a caller that follows one asks again for the new URL, and the guard judges it again), at most `maxBytes` of body
 * (the connection is cut past it), and `timeout` for the whole exchange, from the lookup to the
 * last byte. No cookies, no credentials, no proxy from the environment.
 *
 * Concurrency: stateless; each call is one request on a fresh socket (no agent pooling), interrupted cleanly.
 */
import * as Http from "node:http"
import * as Https from "node:https"
import * as Net from "node:net"
import { Context, Data, Duration, Effect } from "effect"
import { DestinationGuard } from "./DestinationGuard.js"

/** Why a fetch gave no usable answer. `destination`: the guard refused the address (never retried soon). */
export class FetchFailed extends Data.TaggedError("FetchFailed")<{
  readonly reason: "not-https" | "destination" | "unresolved" | "connect" | "timeout" | "too-large"
  readonly detail: string
}> {
  override get message(): string {
    return `${this.reason}: ${this.detail}`
  }
}

/** An answer, whatever its status: the caller decides what a 3xx or 404 means. */
export interface FetchedResponse {
  readonly status: number
  readonly headers: Readonly<Record<string, string | undefined>>
  readonly body: Buffer
  /** The body was cut at `maxBytes` (overflow `truncate`). */
  readonly truncated?: boolean
}

export interface FetchOptions {
  readonly maxBytes: number
  readonly timeout: Duration.DurationInput
  readonly accept: string
  /** Plain http too (a link a member posted: docs/decisions/previews.md); https only otherwise. */
  readonly allowHttp?: boolean
  /**
   * Past `maxBytes`: `fail` (the default) answers too-large; `truncate` answers the first `maxBytes` bytes with
   * `truncated` set, the connection cut (a page's head is at its start: docs/decisions/previews.md).
   */
  readonly overflow?: "fail" | "truncate"
}

/** A request that carries a body (a Web Push message): its headers are the caller's, `accept` is not added. */
export interface SendOptions {
  readonly method: "POST"
  readonly headers: Readonly<Record<string, string>>
  readonly body: Buffer
  readonly maxBytes: number
  readonly timeout: Duration.DurationInput
  /** Plain http too (a local push service in development, BELAY_PUSH_INSECURE_ENDPOINTS); https only otherwise. */
  readonly allowHttp: boolean
}

/** What one request carries besides its destination. */
interface Exchange {
  readonly method: "GET" | "POST"
  readonly headers: Readonly<Record<string, string>>
  readonly body: Buffer | null
  readonly maxBytes: number
  readonly truncate: boolean
}

/**
 * Extra certificate authorities to trust besides Node's own. Production leaves it empty (Node's bundled roots and
 * `NODE_EXTRA_CA_CERTS`); tests that serve a document from a local https server with their own CA provide it.
 */
export class EgressTrust extends Context.Reference<EgressTrust>()("belay/EgressTrust", {
  defaultValue: () => ({ ca: [] as ReadonlyArray<string> })
}) {}

const parseFetchable = (raw: string, allowHttp: boolean): URL | undefined => {
  try {
    const url = new URL(raw)
    return url.protocol === "https:" || (allowHttp && url.protocol === "http:") ? url : undefined
  } catch {
    return undefined
  }
}

export class GuardedFetch extends Effect.Service<GuardedFetch>()("belay/GuardedFetch", {
  effect: Effect.gen(function*() {
    const guard = yield* DestinationGuard
    const trust = yield* EgressTrust

    /** One GET of `rawUrl`, within the bounds of `options`. */
    const get = (rawUrl: string, options: FetchOptions): Effect.Effect<FetchedResponse, FetchFailed> =>
      Effect.gen(function*() {
        const allowHttp = options.allowHttp === true
        const url = parseFetchable(rawUrl, allowHttp)
        if (url === undefined) {
          return yield* new FetchFailed({ reason: "not-https", detail: `only ${allowHttp ? "http and " : ""}https URLs are fetched` })
        }
        const exchange: Exchange = {
          method: "GET",
          headers: { accept: options.accept, "user-agent": "Belay" },
          body: null,
          maxBytes: options.maxBytes,
          truncate: options.overflow === "truncate"
        }
        return yield* checked(url, exchange)
      }).pipe(
        Effect.timeoutFail({
          duration: options.timeout,
          onTimeout: () => new FetchFailed({ reason: "timeout", detail: `no full answer within ${Duration.format(options.timeout)}` })
        })
      )

    /** The guard's answer for the URL's host, then the request to the address it checked. */
    const checked = (url: URL, exchange: Exchange) =>
      Effect.gen(function*() {
        const port = url.port === "" ? (url.protocol === "https:" ? 443 : 80) : Number(url.port)
        const pinned = yield* guard.check(url.hostname, port).pipe(
          Effect.catchTags({
            DestinationRefused: (e) => Effect.fail(new FetchFailed({ reason: "destination", detail: e.message })),
            DestinationUnresolved: (e) => Effect.fail(new FetchFailed({ reason: "unresolved", detail: e.message }))
          })
        )
        return yield* request(url, port, pinned, exchange)
      })

    /** One request with a body (Web Push), within the same bounds as `get`. */
    const send = (rawUrl: string, options: SendOptions): Effect.Effect<FetchedResponse, FetchFailed> =>
      Effect.gen(function*() {
        let url: URL
        try {
          url = new URL(rawUrl)
        } catch {
          return yield* new FetchFailed({ reason: "not-https", detail: "not a URL" })
        }
        if (url.protocol !== "https:" && !(options.allowHttp && url.protocol === "http:")) {
          return yield* new FetchFailed({ reason: "not-https", detail: "only https URLs are sent to" })
        }
        return yield* checked(url, {
          method: options.method,
          headers: options.headers,
          body: options.body,
          maxBytes: options.maxBytes,
          truncate: false
        })
      }).pipe(
        Effect.timeoutFail({
          duration: options.timeout,
          onTimeout: () => new FetchFailed({ reason: "timeout", detail: `no full answer within ${Duration.format(options.timeout)}` })
        })
      )

    const request = (
      url: URL,
      port: number,
      pinned: { readonly name: string; readonly address: string | null; readonly family: 4 | 6 | null },
      exchange: Exchange
    ) =>
      Effect.async<FetchedResponse, FetchFailed>((resume) => {
        let done = false
        const finish = (effect: Effect.Effect<FetchedResponse, FetchFailed>) => {
          if (done) return
          done = true
          resume(effect)
        }
        const name = pinned.name
        const address = pinned.address
        const family = pinned.family ?? 4
        const secure = url.protocol === "https:"
        const req = (secure ? Https.request : Http.request)({
          method: exchange.method,
          host: name,
          port,
          path: `${url.pathname}${url.search}`,
          headers: exchange.body === null ? exchange.headers : { ...exchange.headers, "content-length": String(exchange.body.length) },
          agent: false,
          // TLS verifies the URL's name, whatever address the guard pinned; an IP literal sends no SNI (RFC 6066 §3).
          ...(Net.isIP(name) === 0 ? { servername: name } : {}),
          ...(trust.ca.length === 0 ? {} : { ca: [...trust.ca] }),
          ...(address === null ? {} : {
            // Only the checked address, never a second lookup that could answer otherwise (DNS rebinding).
            lookup: ((_host, lookupOptions, callback) =>
              lookupOptions.all === true
                ? callback(null, [{ address, family }])
                : callback(null, address, family)) satisfies Net.LookupFunction
          })
        }, (res) => {
          const chunks: Array<Buffer> = []
          let size = 0
          const answer = (truncated: boolean): FetchedResponse => {
            const headers: Record<string, string | undefined> = {}
            for (const [key, value] of Object.entries(res.headers)) {
              headers[key] = Array.isArray(value) ? value.join(", ") : value
            }
            const body = Buffer.concat(chunks)
            return { status: res.statusCode ?? 0, headers, body, ...(truncated ? { truncated } : {}) }
          }
          res.on("data", (chunk: Buffer) => {
            if (done) return
            if (size + chunk.length > exchange.maxBytes) {
              if (exchange.truncate) {
                chunks.push(chunk.subarray(0, exchange.maxBytes - size))
                finish(Effect.succeed(answer(true)))
              } else {
                finish(Effect.fail(new FetchFailed({ reason: "too-large", detail: `more than ${exchange.maxBytes} bytes` })))
              }
              req.destroy()
              return
            }
            size += chunk.length
            chunks.push(chunk)
          })
          res.on("end", () => finish(Effect.succeed(answer(false))))
          res.on("error", (e) => finish(Effect.fail(new FetchFailed({ reason: "connect", detail: e.message }))))
        })
        req.on("error", (e) => finish(Effect.fail(new FetchFailed({ reason: "connect", detail: e.message }))))
        req.end(exchange.body ?? undefined)
        return Effect.sync(() => req.destroy())
      })

    return { get, send } as const
  }),
  dependencies: [DestinationGuard.Default]
}) {}
