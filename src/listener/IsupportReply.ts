/**
 * IsupportReply: the RPL_ISUPPORT (005) list a client is sent — the bound upstream's tokens passed through, with
 * Belay's own (`BOUNCER_NETID`, `CHATHISTORY`, `MSGREFTYPES`, `CLIENTTAGDENY`) in place of the upstream's — at the
 * welcome, and again on the IRCv3 extended-isupport `ISUPPORT` command: before registration (once negotiated) only
 * Belay's own tokens, as the network is not known yet (the extension lets a server send a subset then, and the full
 * list at the welcome). With `batch` and `draft/extended-isupport` every 005 goes in a `draft/isupport` batch, as the
 * extension requires. Pure but for `isupportNow`, which reads the upstream's state.
 *
 * Concurrency rule: runs on the connection's session fiber only.
 */
import { Effect, Option } from "effect"
import { CHATHISTORY_LIMIT } from "./ChatHistoryRequest.js"
import { type Downstream, nextBatchId, numeric, replyLine } from "./Downstream.js"
import type { ListenerDeps } from "./ListenerDeps.js"
import { vapidFor } from "./WebPush.js"

/** RFC 2812 §2.3: 15 parameters at most; 005 spends two on the nick and the trailing text. */
const TOKENS_PER_LINE = 13

/** ISUPPORT tokens Belay answers for itself, so the upstream's are not passed on. */
const OWN_TOKENS = new Set(["BOUNCER_NETID", "CHATHISTORY", "MSGREFTYPES", "CLIENTTAGDENY", "soju.im/FILEHOST", "VAPID"])

/** What the upstream connection says of itself, when it is up. */
export interface UpstreamIsupport {
  readonly isupport: ReadonlyArray<string>
  readonly caps: ReadonlyArray<string>
}

/**
 * The tokens a client is sent. `networkId`: the bound network, null for a control connection, undefined before
 * registration (Belay's own history tokens only). `filehost`: the upload endpoint's URL, sent once registered as
 * `soju.im/FILEHOST` (soju's doc/ext/filehost.md), in place of any the upstream sends. `vapid`: the VAPID public key,
 * for a client with soju.im/webpush (WebPush.ts `vapidFor`), in place of an upstream bouncer's.
 */
export const isupportTokens = (
  networkId: number | null | undefined,
  upstream: UpstreamIsupport | undefined,
  filehost?: string | undefined,
  vapid?: string | undefined
): ReadonlyArray<string> => {
  const own = [
    ...(networkId === null ? ["CHANTYPES="] : networkId === undefined ? [] : [`BOUNCER_NETID=${networkId}`]),
    `CHATHISTORY=${CHATHISTORY_LIMIT}`,
    "MSGREFTYPES=msgid,timestamp",
    ...(upstream !== undefined && !upstream.caps.includes("message-tags") ? ["CLIENTTAGDENY=*"] : []),
    ...(filehost !== undefined && networkId !== undefined ? [`soju.im/FILEHOST=${filehost}`] : []),
    ...(vapid !== undefined ? [`VAPID=${vapid}`] : [])
  ]
  const passed = (upstream?.isupport ?? []).filter((t) => {
    const key = t.split("=")[0]!.replace(/^-/, "")
    return !OWN_TOKENS.has(key) && !(networkId === null && key === "CHANTYPES")
  })
  return [...passed, ...own]
}

/** The 005 lines of `tokens`, in a `draft/isupport` batch when the client has batch and draft/extended-isupport. */
export const sendIsupport = (d: Downstream, tokens: ReadonlyArray<string>): void => {
  const batch = d.caps.enabled.has("batch") && d.caps.enabled.has("draft/extended-isupport") ? nextBatchId(d) : undefined
  if (batch !== undefined) replyLine(d, { command: "BATCH", params: [`+${batch}`, "draft/isupport"] })
  for (let i = 0; i < tokens.length; i += TOKENS_PER_LINE) {
    const params = [d.nick, ...tokens.slice(i, i + TOKENS_PER_LINE), "are supported by this server"]
    if (batch === undefined) numeric(d, "005", ...params.slice(1))
    else replyLine(d, { command: "005", params }, { batch })
  }
  if (batch !== undefined) replyLine(d, { command: "BATCH", params: [`-${batch}`] })
}

/** The `ISUPPORT` command of a registered client: the list as it is now. */
export const isupportNow = (deps: ListenerDeps, d: Downstream): Effect.Effect<void> =>
  Effect.gen(function*() {
    const networkId = d.network?.id
    const upstream = networkId === undefined ? Option.none() : yield* deps.control.upstream(networkId)
    sendIsupport(d, isupportTokens(networkId ?? null, Option.getOrUndefined(upstream), deps.filehost, vapidFor(deps, d)))
  })
