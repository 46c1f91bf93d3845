/**
 * MentionRoutes owns two reads of the web client (docs/contract.md "The member's browser surface"):
 *
 * - `GET /api/mentions?before=&limit=` — the messages, across every network of the member, that highlighted them:
 *   spoken by someone else (PRIVMSG, ACTION or NOTICE) and naming the member's current nick on that network as a word,
 *   the rule Web Push and the unread counts use (services/push/WebPush.ts `highlights`). Newest first, at most `limit`
 *   (default 50, max 100: search_messages' bounds, docs/decisions/web.md "Search filters, context, mentions and
 *   history paging"), with ids below `before` when given (exclusive, a message id), and `nextBefore`: the `before`
 *   of the next older page, null once the start is reached. Found with the history's full-text search for the nick
 *   on each network (so a nick with no letters or digits finds nothing), then checked with the highlight rule, so a
 *   message the search finds for another reason is left out. A network whose search rows are mostly not highlights
 *   is searched again below them, at most MENTION_ROUNDS times a page; where it stopped short, the page ends there
 *   (`nextBefore`), so pages never skip one.
 * - `GET /api/buffers/context?networkId=&target=&around=&limit=` — the lines of one buffer around one message: the
 *   message and up to `limit` (default 25, max 100) before it, and up to `limit` conversation lines and channel events
 *   after it, oldest first, with whether more exist on either side. A search result or a mention opens there.
 *
 * Credentials as every /api route of the member (MemberCredential.memberRequest); a network that is not the member's
 * answers 404, a malformed parameter 400 `invalid_request`; `no-store`. Stateless.
 */
import { Effect, Either, Option } from "effect"
import { NetworkControl } from "../../actors/NetworkApi.js"
import { foldCase } from "../../irc/CaseMapping.js"
import { SERVER_BUFFER_PREFIX } from "../../schema/Ids.js"
import { Accounts } from "../../services/identity/Accounts.js"
import { AppConfig } from "../../services/AppConfig.js"
import { Authenticator } from "../../services/identity/Authenticator.js"
import { BrowserSessions } from "../../services/identity/BrowserSessions.js"
import { MessageHistory, type StoredMessage } from "../../services/history/MessageHistory.js"
import { toMessageRecord } from "../../services/history/MessageRecord.js"
import { Networks } from "../../services/networks/Networks.js"
import { NickNotes } from "../../services/networks/NickNotes.js"
import { highlights } from "../../services/push/WebPush.js"
import { memberRequest, memberRequestServices } from "../auth/MemberCredential.js"
import { json, type Route } from "../HttpServer.js"
import { noStore } from "../oauth/OAuthHttp.js"

export const MENTIONS_PATH = "/api/mentions"
export const CONTEXT_PATH = "/api/buffers/context"

export const MENTIONS_DEFAULT_LIMIT = 50
export const MENTIONS_MAX_LIMIT = 100
/** Searches per network for one page of mentions: the bound on a page's reads when few found rows are highlights. */
export const MENTION_ROUNDS = 3
export const CONTEXT_DEFAULT_LIMIT = 25
export const CONTEXT_MAX_LIMIT = 100
/** A buffer target as the tools take it (BufferTarget's bound): longer is no buffer. */
const TARGET_MAX = 512

const badRequest = (description: string) => json(400, { error: "invalid_request", error_description: description }, noStore)
const notFound = () => json(404, { error: "not_found", error_description: "no such network" }, noStore)

/** A whole number in [min, max] from the query string, the default when absent, null when malformed. */
export const intParam = (value: string | null, fallback: number | null, min: number, max: number): number | null => {
  if (value === null) return fallback
  if (!/^\d{1,16}$/.test(value)) return null
  const n = Number(value)
  return n >= min && n <= max ? n : null
}

const SPOKEN: ReadonlySet<string> = new Set(["privmsg", "action", "notice"])

/** Whether a stored message highlighted `nick`: the push rule, for any buffer but the server's. */
export const isMention = (m: Pick<StoredMessage, "kind" | "self" | "nick" | "text" | "target">, nick: string): boolean =>
  !m.self && m.nick !== null && SPOKEN.has(m.kind) && !m.target.startsWith(SERVER_BUFFER_PREFIX) && highlights(m.text, nick)

/** The nick as one web-search phrase: its quotes are the only syntax websearch_to_tsquery would read in it. */
const phrase = (nick: string) => `"${nick.replaceAll("\"", " ")}"`

/**
 * One network's mentions below a cursor: every mention with an id in [`frontier`, before) — or below before when
 * `frontier` is null, the network's start reached.
 */
export interface MentionScan {
  readonly found: ReadonlyArray<StoredMessage>
  readonly frontier: number | null
}

/**
 * One page from each network's scan, newest first: the mentions every scan has covered (ids at or above the highest
 * frontier), at most `limit`, and the cursor of the next page (null when no network has more). Pure.
 */
export const mentionPage = (scans: ReadonlyArray<MentionScan>, limit: number) => {
  const frontiers = scans.flatMap((s) => s.frontier === null ? [] : [s.frontier])
  const cut = frontiers.length === 0 ? null : Math.max(...frontiers)
  const covered = scans.flatMap((s) => s.found).filter((m) => cut === null || m.id >= cut).sort((a, b) => b.id - a.id)
  const messages = covered.slice(0, limit)
  const nextBefore = covered.length > limit ? messages[messages.length - 1]!.id : cut
  return { messages, nextBefore }
}

export const mentionRoutes = Effect.gen(function*() {
  const services = yield* memberRequestServices
  const networks = yield* Networks
  const control = yield* NetworkControl
  const history = yield* MessageHistory
  const notes = yield* NickNotes

  const render = (rows: ReadonlyArray<StoredMessage>) =>
    Effect.gen(function*() {
      const out: Array<ReturnType<typeof toMessageRecord>> = []
      const renderers = new Map<number, (m: StoredMessage) => ReturnType<typeof toMessageRecord>>()
      for (const m of rows) {
        let r = renderers.get(m.networkId)
        if (r === undefined) {
          const [bots, status] = yield* Effect.all([notes.relayBots(m.networkId), control.status(m.networkId)])
          r = (x: StoredMessage) => toMessageRecord(x, bots, status.caseMapping)
          renderers.set(m.networkId, r)
        }
        out.push(r(m))
      }
      return out
    })

  const mentions: Route = {
    method: "GET",
    path: MENTIONS_PATH,
    name: "mentions.list",
    handler: (request) =>
      Effect.gen(function*() {
        const who = yield* memberRequest(services, request, false)
        if (Either.isLeft(who)) return who.left
        const limit = intParam(request.query.get("limit"), MENTIONS_DEFAULT_LIMIT, 1, MENTIONS_MAX_LIMIT)
        if (limit === null) return badRequest(`limit must be a whole number from 1 to ${MENTIONS_MAX_LIMIT}`)
        const before = intParam(request.query.get("before"), Number.MAX_SAFE_INTEGER, 1, Number.MAX_SAFE_INTEGER)
        if (before === null) return badRequest("before must be a message id")
        const owned = yield* networks.listForAccount(who.right.accountId)
        const scans = yield* Effect.forEach(owned, (network) =>
          Effect.gen(function*() {
            const nick = (yield* control.status(network.id)).nick ?? network.nick
            if (nick === "") return { found: [], frontier: null } satisfies MentionScan
            const found: Array<StoredMessage> = []
            let below = before
            for (let round = 0; round < MENTION_ROUNDS; round++) {
              // Newest first (MessageHistory.search); a short answer is the network's start.
              const rows = yield* history.search({
                accountId: who.right.accountId,
                query: phrase(nick),
                networkId: Option.some(network.id),
                targetFolded: Option.none(),
                nick: Option.none(),
                limit,
                beforeId: below
              })
              found.push(...rows.filter((m) => isMention(m, nick)))
              if (rows.length < limit) return { found, frontier: null }
              below = rows[rows.length - 1]!.id
              if (found.length >= limit) break
            }
            return { found, frontier: below }
          }))
        const page = mentionPage(scans, limit)
        return json(200, { messages: yield* render(page.messages), nextBefore: page.nextBefore }, noStore)
      })
  }

  const context: Route = {
    method: "GET",
    path: CONTEXT_PATH,
    name: "buffers.context",
    handler: (request) =>
      Effect.gen(function*() {
        const who = yield* memberRequest(services, request, false)
        if (Either.isLeft(who)) return who.left
        const networkId = intParam(request.query.get("networkId"), null, 1, Number.MAX_SAFE_INTEGER)
        const around = intParam(request.query.get("around"), null, 1, Number.MAX_SAFE_INTEGER - 1)
        const limit = intParam(request.query.get("limit"), CONTEXT_DEFAULT_LIMIT, 1, CONTEXT_MAX_LIMIT)
        const target = request.query.get("target") ?? ""
        if (networkId === null) return badRequest("networkId must be a network id")
        if (around === null) return badRequest("around must be a message id")
        if (limit === null) return badRequest(`limit must be a whole number from 1 to ${CONTEXT_MAX_LIMIT}`)
        if (target === "" || target.length > TARGET_MAX || /[\0\r\n]/.test(target)) return badRequest("target must be a buffer")
        const owned = yield* networks.listForAccount(who.right.accountId)
        if (!owned.some((n) => n.id === networkId)) return notFound()
        const folded = foldCase((yield* control.status(networkId)).caseMapping, target)
        // One more on each side than shown: whether there is more to page to.
        const [before, after] = yield* Effect.all([
          history.recent(networkId, folded, { before: Option.some(around + 1), limit: limit + 2 }),
          history.range(networkId, folded, { after: { _tag: "Id", id: around }, newest: false, limit: limit + 1, events: true })
        ])
        const olderShown = before.slice(-(limit + 1))
        const newerShown = after.slice(0, limit)
        return json(200, {
          networkId,
          target,
          around,
          hasOlder: before.length > olderShown.length,
          hasNewer: after.length > newerShown.length,
          messages: yield* render([...olderShown, ...newerShown])
        }, noStore)
      })
  }

  return [mentions, context] as ReadonlyArray<Route>
})
