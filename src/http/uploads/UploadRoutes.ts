/**
 * UploadRoutes owns the upload endpoint and the stored files' URLs (docs/contract.md "Uploads"; docs/decisions/
 * uploads.md). One endpoint serves the web client's paste and drop and the IRC listener's `soju.im/FILEHOST`:
 *
 * - `POST /api/uploads`, the body the file itself, its name in `Content-Disposition` and its type in `Content-Type`
 *   (soju's doc/ext/filehost.md) → 201 with `Location: <base>/uploads/<id>/<name>` and `{id, url, name, contentType,
 *   size}`. Who uploads: the browser session (a same-origin `Origin`, as every cookie-carried change), a Bearer token
 *   (OAuth, password sign-in, or a read-write API token, as the listener takes them), or HTTP Basic with the IRC
 *   listener's user name (`account[/network][@client]`) and secret (token or password), under the sign-in limiter.
 *   Too large → 413 `too_large`; over the account's total → 413 `quota_exceeded` (limit `uploads`); nothing stored.
 *   `OPTIONS` is the CORS preflight every `/api/*` path has (Cors.ts), which filehost.md asks for.
 * - `DELETE /api/uploads/<id>` by the same credentials → 204, the file gone from every node; 404 when the account
 *   has no such file. It is how a member makes room under the account's total.
 * - `GET` and `HEAD /uploads/<id>/<name>`: anyone with the URL (the id is 128 random bits), from any node; the name
 *   is not checked. `nosniff`, a sandboxing CSP, `attachment` unless image, audio or video (never SVG), one `Range`
 *   (206, 416), `ETag` and `If-None-Match` (304), long private caching. 404 for any other id.
 *
 * Stateless; Uploads is safe under concurrency.
 */
import { Effect, Either, Option, Stream } from "effect"
import { rateLimitKey } from "../../net/RateLimitKey.js"
import { AppConfig } from "../../services/AppConfig.js"
import { Accounts } from "../../services/identity/Accounts.js"
import { Authenticator, type Principal } from "../../services/identity/Authenticator.js"
import { BrowserSessions } from "../../services/identity/BrowserSessions.js"
import { SignInLimiter } from "../../services/identity/SignInLimiter.js"
import { type Upload, UPLOAD_ENDPOINT, uploadPath, Uploads } from "../../services/uploads/Uploads.js"
import { accountPaused } from "../auth/MemberCredential.js"
import { currentSession } from "../auth/Session.js"
import { clientIp } from "../ClientIp.js"
import { type HttpRequest, type HttpResponse, json, type Route } from "../HttpServer.js"
import { resolveIssuer } from "../Issuer.js"
import { foreignOrigin, isSameOriginPost, malformed, noStore, oauthError } from "../oauth/OAuthHttp.js"
import { fileNameOf, matchesEtag, parseRange, servedHeaders } from "./UploadHeaders.js"

export const UploadPaths = {
  upload: UPLOAD_ENDPOINT,
  one: `${UPLOAD_ENDPOINT}/:id`,
  // A wildcard rather than `:name`: the name is not checked, and a client that mangles or lengthens it still reaches
  // the file (find-my-way bounds a parameter at 100 characters).
  file: "/uploads/:id/*"
} as const

/** Tokens are printable ASCII of plausible length (Authenticator); anything else is only tried as a password. */
const PLAUSIBLE_TOKEN = /^[\x21-\x7e]{16,512}$/
/** The account part of the listener's `account[/network][@client]` user name (docs/contract.md "The IRC client listener"). */
const ACCOUNT = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/

/** 401 naming both schemes a client may answer with (RFC 9110 §11.6.1). */
const unauthorized = (description: string): HttpResponse =>
  json(401, { error: "invalid_token", error_description: description }, {
    ...noStore,
    "www-authenticate": "Bearer error=\"invalid_token\", Basic realm=\"belay\", charset=\"UTF-8\""
  })

const insufficientScope = (): HttpResponse =>
  json(403, { error: "insufficient_scope", error_description: "a read token cannot upload" }, {
    ...noStore,
    "www-authenticate": "Bearer error=\"insufficient_scope\""
  })

const notFound = (): HttpResponse =>
  json(404, { error: "not_found", error_description: "no such file" }, { ...noStore, "x-content-type-options": "nosniff" })

/** A principal of a Bearer or Basic token: the account, unless it may only read. */
const principalUploader = (principal: Principal): Either.Either<number, HttpResponse> =>
  principal.scope === "read-write"
    ? Either.right(principal.accountId)
    : Either.left(principal.paused ? accountPaused() : insufficientScope())

/** `user:secret` of an HTTP Basic header (RFC 7617 §2, UTF-8), or undefined when it is not one. */
const basicCredentials = (authorization: string): { readonly user: string; readonly secret: string } | undefined => {
  const m = /^Basic[ ]+([A-Za-z0-9+/]+={0,2})[ ]*$/i.exec(authorization)
  if (m === null || m[1]!.length > 4096) return undefined
  const decoded = Buffer.from(m[1]!, "base64").toString("utf8")
  const colon = decoded.indexOf(":")
  return colon === -1 ? undefined : { user: decoded.slice(0, colon), secret: decoded.slice(colon + 1) }
}

export const uploadRoutes = Effect.gen(function*() {
  const config = yield* AppConfig
  const authenticator = yield* Authenticator
  const accounts = yield* Accounts
  const sessions = yield* BrowserSessions
  const limiter = yield* SignInLimiter
  const uploads = yield* Uploads

  /** HTTP Basic as the IRC listener signs in (SignIn.ts): a token of the account, else its password; limited alike. */
  const basicUploader = (request: HttpRequest, user: string, secret: string) =>
    Effect.gen(function*() {
      const name = user.split(/[/@]/)[0] ?? ""
      if (!ACCOUNT.test(name) || secret === "") return Either.left(unauthorized("give the account's name and a token or its password"))
      const attempt = { ipKey: rateLimitKey(clientIp(request, config.trustProxy)), account: name }
      const limited = yield* Effect.either(limiter.check(attempt))
      if (Either.isLeft(limited)) return Either.left(oauthError(limited.left))
      const account = yield* accounts.findByName(name)
      if (Option.isSome(account) && PLAUSIBLE_TOKEN.test(secret)) {
        const principal = yield* authenticator.authenticate(`Bearer ${secret}`)
        if (Option.isSome(principal) && principal.value.accountId === account.value.id) return principalUploader(principal.value)
      }
      const verified = yield* accounts.verifyPassword(name, secret)
      if (Option.isSome(verified)) {
        return verified.value.status === "paused" ? Either.left(accountPaused()) : Either.right(verified.value.id)
      }
      yield* limiter.recordFailure(attempt)
      yield* Effect.logInfo("upload sign-in failed").pipe(Effect.annotateLogs({ account: name }))
      return Either.left(unauthorized("the name and secret do not sign in"))
    })

  /** The account an upload is for, or the answer that ends the request. */
  const uploader = (request: HttpRequest, issuer: string): Effect.Effect<Either.Either<number, HttpResponse>> =>
    Effect.gen(function*() {
      const authorization = request.header("authorization")
      if (authorization !== undefined) {
        const basic = basicCredentials(authorization)
        if (basic !== undefined) return yield* basicUploader(request, basic.user, basic.secret)
        const principal = yield* authenticator.authenticate(authorization)
        if (Option.isNone(principal)) return Either.left(unauthorized("the token is not valid or was revoked"))
        return principalUploader(principal.value)
      }
      const session = yield* currentSession({ sessions, accounts }, request, issuer)
      if (Option.isNone(session)) return Either.left(unauthorized("sign in, or send a Bearer token or HTTP Basic credentials"))
      // docs/contract.md "Credentials": a change carried by the cookie must come from this origin.
      if (!isSameOriginPost(request, issuer)) return Either.left(foreignOrigin())
      const account = yield* accounts.findById(session.value.session.accountId)
      if (Option.isNone(account)) return Either.left(unauthorized("the account is gone"))
      return account.value.status === "paused" ? Either.left(accountPaused()) : Either.right(account.value.id)
    })

  const created = (issuer: string, file: Upload): HttpResponse => {
    const url = `${issuer}${uploadPath(file.id, file.name)}`
    return json(201, { id: file.id, url, name: file.name, contentType: file.contentType, size: file.size }, {
      ...noStore,
      location: url
    })
  }

  const tooLarge = (max: number) =>
    json(413, { error: "too_large", max, error_description: `the file is larger than ${max} bytes, the largest upload this server takes` }, noStore)

  const upload: Route = {
    method: "POST",
    path: UploadPaths.upload,
    name: "uploads.upload",
    handler: (request) =>
      Effect.gen(function*() {
        const issuer = resolveIssuer(request, config)
        if (Either.isLeft(issuer)) return malformed()
        const who = yield* uploader(request, issuer.right)
        if (Either.isLeft(who)) return who.left
        if (request.bodyStream === undefined) return malformed()
        const length = request.header("content-length")
        const declaredSize = length !== undefined && /^\d{1,15}$/.test(length.trim()) ? Number(length.trim()) : undefined
        const stored = yield* uploads.store({
          accountId: who.right,
          name: fileNameOf(request.header("content-disposition")) ?? "",
          contentType: request.header("content-type"),
          declaredSize
        }, request.bodyStream(uploads.maxBytes))
        return created(issuer.right, stored)
      }).pipe(
        Effect.catchTags({
          UploadRefused: (refused) =>
            Effect.succeed(
              refused.reason === "too-large"
                ? tooLarge(refused.max)
                : json(413, { error: "quota_exceeded", limit: "uploads", max: refused.max, error_description: refused.message }, noStore)
            ),
          BodyTooLarge: (error) => Effect.succeed(tooLarge(error.limit)),
          // Slower than the floor rate (HttpLimitsSettings.streamFloorBytesPerSecond): nothing was stored.
          BodyTimedOut: (error) =>
            Effect.succeed(
              json(408, { error: "timeout", error_description: `the file did not arrive within ${Math.round(error.afterMs / 1000)} s` }, noStore)
            ),
          // The client went away mid-body: nothing was stored, and no one reads this answer.
          BodyReadFailed: () => Effect.succeed(malformed())
        })
      )
  }

  const serve = (head: boolean): Route => ({
    method: head ? "HEAD" : "GET",
    path: UploadPaths.file,
    name: head ? "uploads.head" : "uploads.get",
    handler: (request) =>
      Effect.gen(function*() {
        const found = yield* uploads.find(request.params.id ?? "")
        if (Option.isNone(found)) return notFound()
        const file = found.value
        const headers = servedHeaders(file)
        if (matchesEtag(request.header("if-none-match"), headers.etag!)) {
          const { "content-type": _type, ...rest } = headers
          return { status: 304, headers: rest }
        }
        // RFC 9110 §13.1.5: a Range under If-Range that names another validator gets the whole file.
        const ifRange = request.header("if-range")
        const range = ifRange !== undefined && ifRange.trim() !== headers.etag
          ? { _tag: "Whole" as const }
          : parseRange(request.header("range"), file.size)
        if (range._tag === "Unsatisfiable") {
          return { status: 416, headers: { ...headers, "content-range": `bytes */${file.size}` }, body: "" }
        }
        const [status, start, end]: readonly [number, number, number] = range._tag === "Part"
          ? [206, range.start, range.end]
          : [200, 0, file.size - 1]
        const partHeaders: Record<string, string> = range._tag === "Part"
          ? { ...headers, "content-range": `bytes ${start}-${end}/${file.size}` }
          : headers
        return {
          status,
          headers: { ...partHeaders, "content-length": String(Math.max(0, end - start + 1)) },
          stream: head ? Stream.empty : uploads.read(file, start, end)
        }
      })
  })

  const remove: Route = {
    method: "DELETE",
    path: UploadPaths.one,
    name: "uploads.delete",
    handler: (request) =>
      Effect.gen(function*() {
        const issuer = resolveIssuer(request, config)
        if (Either.isLeft(issuer)) return malformed()
        const who = yield* uploader(request, issuer.right)
        if (Either.isLeft(who)) return who.left
        return (yield* uploads.remove(who.right, request.params.id ?? "")) ? { status: 204, headers: noStore } : notFound()
      })
  }

  return [upload, remove, serve(false), serve(true)] as ReadonlyArray<Route>
})
