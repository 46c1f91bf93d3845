/**
 * Authorize owns `/oauth/authorize`: the approval page (GET) and the member's decision
 * (POST). Nothing is ever sent to the app except the outcome of an explicit decision: a
 * code, or `error=access_denied` (interface "Errors > OAuth"; RFC 9700 §4.11.2).
 *
 * GET, in order:
 *   1. the Host names this server → else 400 page;
 *   2. the request (AuthorizeRequest.validateAuthorizeRequest: single-valued parameters,
 *      client known and not expired, redirect_uri registered — exact, or a loopback URI
 *      on another port —, response_type=code, an S256 challenge, state ≤ 1024, each
 *      `resource` this server's /mcp) → else a 400 error page naming the OAuth error
 *      (invalid_client, invalid_request, invalid_target), never a redirect;
 *   3. no session → the sign-in page, which comes back here afterwards;
 *      A client_id that is an https URL names a Client ID Metadata Document instead of a
 *      registration: its URL's form is checked at 2, the member signs in (3) before the
 *      document is fetched (ClientDocuments, through the destination guard: anonymous
 *      visitors cannot make Belay fetch), then 2 runs against the document's redirect_uris;
 *      an unusable document is a 400 page naming invalid_client, and the document's
 *      metadata is saved in the client's row (OAuthClients.saveDocument) for the code and
 *      the token (docs/decisions/oauth.md "Client ID Metadata Documents: a client row keyed by the URL");
 *   4. the approval page, every time (RFC 8252 §8.6), backed by a fresh single-use
 *      consent record of the validated request, bound to the session, with a CSRF token
 *      derived from the session and that record.
 * POST, in order (none of 1–5 consumes the record):
 *   1. Host → 400 page;  2. same-origin → 403 page;  3. a live session → 403 page;
 *   4. body ≤ 16 KiB form;  5. the CSRF token for this session and record → 403 page;
 *   6. decision is approve or deny → 400 page;
 *   7. the record is claimed (deleted) for this session and still within 15 minutes →
 *      else 400 page (a second submission lands here);
 *   8. deny → 303 to the redirect URI with error=access_denied, state, iss (out-of-band:
 *      a page); approve → the registration is kept (approved), a code is issued, 303
 *      with code, state (only when sent, byte for byte) and iss (out-of-band: the page
 *      shows the code).
 * The Location and the code are never logged. Stateless itself.
 */
import { Effect, Either, Option } from "effect"
import { OAuthPaths } from "../../schema/OAuth.js"
import { Accounts } from "../../services/identity/Accounts.js"
import { AppConfig } from "../../services/AppConfig.js"
import { BrowserSessions, csrfToken, verifyCsrfToken } from "../../services/identity/BrowserSessions.js"
import { type OAuthClient, OAuthClients } from "../../services/oauth/OAuthClients.js"
import { OAuthCodes } from "../../services/oauth/OAuthCodes.js"
import { OAuthConsents } from "../../services/oauth/OAuthConsents.js"
import {
  authorizationResponse,
  authorizeCheckError,
  validateAuthorizeRequest
} from "../../services/oauth/AuthorizeRequest.js"
import { classifyRedirectUri, clientUriHost, redirectTarget } from "../../services/oauth/ClientMetadata.js"
import { isDocumentClientId, validateDocumentUrl } from "../../services/oauth/ClientDocument.js"
import { ClientDocuments } from "../../services/oauth/ClientDocuments.js"
import { ImageProxy } from "../../services/previews/ImageProxy.js"
import { readCookie, sessionCookieName } from "../Cookies.js"
import type { HttpRequest, HttpResponse, Route } from "../HttpServer.js"
import { approvalPage, deniedPage, errorPage, oobCodePage, PageFields, pageCsp } from "../pages/Pages.js"
import { PreviewPaths, proxiedImagePath } from "../previews/ProxiedImage.js"
import { resolveIssuer } from "../Issuer.js"
import { isSameOriginPost, page, readOAuthBody, seeOther } from "./OAuthHttp.js"
import { signInResponse, single } from "./SignIn.js"

export const CONSENT_FIELD = "consent"

const consentPurpose = (consentId: string) => `consent:${consentId}`

const refused = (status: number, message: string, title?: string, error?: string): HttpResponse =>
  page(status, errorPage({ message, ...(title === undefined ? {} : { title }), ...(error === undefined ? {} : { error }) }))

export const authorizeRoutes = Effect.gen(function*() {
  const config = yield* AppConfig
  const accounts = yield* Accounts
  const clients = yield* OAuthClients
  const sessions = yield* BrowserSessions
  const consents = yield* OAuthConsents
  const codes = yield* OAuthCodes
  const documents = yield* ClientDocuments
  const images = yield* ImageProxy

  /** The client a request names, looked up only when client_id appears exactly once. */
  const clientOf = (query: URLSearchParams) => {
    const ids = query.getAll("client_id")
    return ids.length === 1 && ids[0] !== ""
      ? Effect.map(clients.lookup(ids[0]!), Option.getOrUndefined)
      : Effect.succeed<OAuthClient | undefined>(undefined)
  }

  /** The member signed in by the request's session cookie, if any. */
  const signedIn = (request: HttpRequest, issuer: string) =>
    Effect.gen(function*() {
      const secret = readCookie(request, sessionCookieName(issuer))
      const session = secret === undefined ? Option.none() : yield* sessions.lookup(secret)
      const member = Option.isNone(session) ? Option.none() : yield* accounts.findById(session.value.accountId)
      return secret === undefined || Option.isNone(session) || Option.isNone(member)
        ? undefined
        : { secret, session: session.value, member: member.value }
    })

  /** GET for a client_id that names a Client ID Metadata Document (step 3's note above). */
  const showDocumentClient = (request: HttpRequest, issuer: string, clientId: string) =>
    Effect.gen(function*() {
      const url = validateDocumentUrl(clientId)
      if (Either.isLeft(url)) {
        yield* Effect.logInfo("authorization request refused").pipe(Effect.annotateLogs({ check: "client-document-url" }))
        return refused(400, "The app's client_id is not a URL a metadata document may have.", undefined, "invalid_client")
      }
      const host = url.right.host
      const visitor = yield* signedIn(request, issuer)
      if (visitor === undefined) {
        return signInResponse(request, {
          issuer,
          returnTo: `${OAuthPaths.authorize}?${request.query.toString()}`,
          clientName: host
        })
      }
      const answer = yield* documents.resolve(clientId)
      if (Either.isLeft(answer)) {
        return refused(400, `The metadata document of this app (at ${host}) cannot be used: ${answer.left}.`, undefined, "invalid_client")
      }
      const document = answer.right
      const validated = validateAuthorizeRequest(request.query, document, { issuer })
      if (Either.isLeft(validated)) {
        yield* Effect.logInfo("authorization request refused").pipe(Effect.annotateLogs({ check: validated.left.check }))
        return refused(400, validated.left.message, undefined, authorizeCheckError(validated.left.check))
      }
      const saved = yield* Effect.either(clients.saveDocument(document))
      if (Either.isLeft(saved)) {
        return refused(503, "Too many apps are waiting for approval right now. Try again later.", undefined, "temporarily_unavailable")
      }
      const authorization = validated.right
      const consentId = yield* consents.create({
        sessionId: visitor.session.sessionId,
        clientId,
        redirectUri: authorization.redirectUri,
        state: authorization.state,
        codeChallenge: authorization.codeChallenge,
        resource: authorization.resource
      })
      const everyRedirectLocal = document.redirectUris.every((uri) => {
        const kind = classifyRedirectUri(uri)
        return Either.isRight(kind) && (kind.right === "loopback" || kind.right === "custom")
      })
      // The logo comes through the image proxy (the member's browser never asks the app's host), and the page may
      // load that one image and nothing else (docs/decisions/previews.md "The image proxy").
      const logoSrc = document.logoUri === undefined ? undefined : proxiedImagePath(images, document.logoUri)
      return page(
        200,
        approvalPage({
          action: OAuthPaths.authorize,
          csrfToken: csrfToken(visitor.secret, consentPurpose(consentId)),
          hidden: { [CONSENT_FIELD]: consentId },
          clientName: document.clientName,
          clientUriHost: clientUriHost(document.clientUri),
          target: authorization.redirectTarget,
          username: visitor.member.name,
          document: { host, logoHost: clientUriHost(document.logoUri), logoSrc, everyRedirectLocal }
        }),
        { "Content-Security-Policy": pageCsp(logoSrc === undefined ? "'none'" : `${issuer}${PreviewPaths.image}`) }
      )
    })

  const show = (request: HttpRequest) =>
    Effect.gen(function*() {
      const resolved = resolveIssuer(request, config)
      if (Either.isLeft(resolved)) return refused(400, "The Host header of this request is not valid.")
      const issuer = resolved.right
      const clientIds = request.query.getAll("client_id")
      if (clientIds.length === 1 && isDocumentClientId(clientIds[0]!)) {
        return yield* showDocumentClient(request, issuer, clientIds[0]!)
      }

      const validated = validateAuthorizeRequest(request.query, yield* clientOf(request.query), { issuer })
      if (Either.isLeft(validated)) {
        yield* Effect.logInfo("authorization request refused").pipe(Effect.annotateLogs({ check: validated.left.check }))
        return refused(400, validated.left.message, undefined, authorizeCheckError(validated.left.check))
      }
      const authorization = validated.right
      const client = authorization.client

      const secret = readCookie(request, sessionCookieName(issuer))
      const session = secret === undefined ? Option.none() : yield* sessions.lookup(secret)
      const member = Option.isNone(session) ? Option.none() : yield* accounts.findById(session.value.accountId)
      if (secret === undefined || Option.isNone(session) || Option.isNone(member)) {
        return signInResponse(request, {
          issuer,
          returnTo: `${OAuthPaths.authorize}?${request.query.toString()}`,
          clientName: client.clientName
        })
      }

      const consentId = yield* consents.create({
        sessionId: session.value.sessionId,
        clientId: authorization.clientId,
        redirectUri: authorization.redirectUri,
        state: authorization.state,
        codeChallenge: authorization.codeChallenge,
        resource: authorization.resource
      })
      return page(
        200,
        approvalPage({
          action: OAuthPaths.authorize,
          csrfToken: csrfToken(secret, consentPurpose(consentId)),
          hidden: { [CONSENT_FIELD]: consentId },
          clientName: client.clientName,
          clientUriHost: clientUriHost(client.clientUri),
          target: authorization.redirectTarget,
          username: member.value.name
        })
      )
    })

  const decide = (request: HttpRequest) =>
    Effect.gen(function*() {
      const resolved = resolveIssuer(request, config)
      if (Either.isLeft(resolved)) return refused(400, "The Host header of this request is not valid.")
      const issuer = resolved.right
      if (!isSameOriginPost(request, issuer)) {
        return refused(403, "This approval did not come from this site's own page.", "Approval refused")
      }
      const secret = readCookie(request, sessionCookieName(issuer))
      const session = secret === undefined ? Option.none() : yield* sessions.lookup(secret)
      if (secret === undefined || Option.isNone(session)) {
        return refused(403, "You are not signed in any more. Start again from the app.", "Approval refused")
      }

      const form = yield* readOAuthBody(request, { form: true, json: false })
      if (!(form instanceof URLSearchParams)) return refused(400, "The approval form could not be read.")
      const consentId = single(form, CONSENT_FIELD)
      const csrf = single(form, PageFields.csrf)
      if (consentId === undefined || csrf === undefined || !verifyCsrfToken(secret, consentPurpose(consentId), csrf)) {
        return refused(403, "The approval form is not valid for this sign-in. Start again from the app.", "Approval refused")
      }
      const decision = single(form, PageFields.decision)
      if (decision !== "approve" && decision !== "deny") {
        return refused(400, "The form did not say whether to approve or deny.")
      }

      const claimed = yield* consents.claim(consentId, session.value.sessionId)
      if (Option.isNone(claimed)) {
        return refused(400, "This approval page was already used or has expired. Start again from the app.")
      }
      const consent = claimed.value
      const client = yield* clients.lookup(consent.clientId)
      if (Option.isNone(client)) {
        return refused(400, "This app's registration expired before it was approved. Start again from the app.")
      }
      const clientName = client.value.clientName
      const annotations = { clientId: consent.clientId, accountId: session.value.accountId }

      if (decision === "deny") {
        yield* Effect.logInfo("authorization denied").pipe(Effect.annotateLogs(annotations))
        const response = authorizationResponse(consent, { _tag: "Denied" }, issuer)
        return response._tag === "Redirect" ? seeOther(response.location) : page(200, deniedPage({ clientName }))
      }

      if (!(yield* clients.approve(consent.clientId))) {
        return refused(400, "This app's registration expired before it was approved. Start again from the app.")
      }
      const issued = yield* codes.issue({
        clientId: consent.clientId,
        accountId: session.value.accountId,
        redirectUri: consent.redirectUri,
        codeChallenge: consent.codeChallenge,
        resource: consent.resource
      }).pipe(Effect.either)
      // docs/contract.md "Account limits": shown to the member, never sent to the app (the interface, OAuth errors).
      if (Either.isLeft(issued)) return refused(409, `${issued.left.message}: revoke an app in Settings, Authorized apps.`)
      const code = issued.right
      yield* Effect.logInfo("authorization approved").pipe(
        Effect.annotateLogs({ ...annotations, target: redirectTarget(consent.redirectUri).kind })
      )
      const response = authorizationResponse(consent, { _tag: "Approved", code }, issuer)
      switch (response._tag) {
        case "Redirect":
          return seeOther(response.location)
        case "ShowCode":
          return page(200, oobCodePage({ code: response.code, clientName }))
        case "ShowDenied":
          return page(200, deniedPage({ clientName }))
      }
    }).pipe(Effect.catchTag("BodyRefused", (e) => Effect.succeed(e.response)))

  return [
    { method: "GET", path: OAuthPaths.authorize, name: "oauth.authorize", handler: show },
    { method: "POST", path: OAuthPaths.authorize, name: "oauth.authorize.decide", handler: decide }
  ] satisfies ReadonlyArray<Route>
})
