/**
 * TagFrames: the browser's IRCv3 frames (docs/contract.md "The member's browser surface", WebSocket) — `react`,
 * `reply`, `typing`, `redact` — each turned into the line the design names and sent upstream through the port's raw
 * path (NetworkControl.raw / rawLines: the send_raw checks, flood control, storage of the member's own messages), the
 * path the IRC client listener's tagged lines take. Each is answered like a call: `{ok: true}` in a `result` frame
 * when the frame had an `id`, else nothing; an `error` frame with a clear message otherwise, and nothing sent.
 *
 * Refused: a read-only sign-in (paused account); a network not the member's; a network not connected; an upstream
 * without the capability the frame needs (message-tags for react, reply and typing; draft/message-redaction for
 * redact). `typing` `active` goes upstream at most once per target per TYPING_INTERVAL (IRCv3 typing: "clients
 * SHOULD NOT send the active notification more than once every 3 seconds"); a quicker one is answered and dropped.
 * `paused` and `done` always go, and let the next `active` through.
 *
 * Concurrency rule: one `TypingLimiter` per socket, changed one synchronous step at a time by that socket's frame
 * fibers; the rest holds no state.
 */
import { Clock, Effect, Option } from "effect"
import type { NetworkControlService, UpstreamView } from "../../actors/NetworkApi.js"
import { foldCase } from "../../irc/CaseMapping.js"
import { formatLine } from "../../irc/IrcLine.js"
import { messageLines } from "../../irc/TaggedMessages.js"
import { prefixAllowance } from "../../irc/TextSplit.js"
import type { ServerFrame, TagFrame } from "../../schema/SocketFrame.js"
import type { Networks } from "../../services/networks/Networks.js"
import type { ToolCaller } from "../mcp/ToolHandlers.js"

/** IRCv3 typing: at most one `active` per target per 3 s. */
export const TYPING_INTERVAL_MS = 3_000
/** Targets a socket's limiter remembers; the oldest is forgotten beyond (it only lets one more `active` through). */
export const TYPING_TARGETS = 64

/** When each target of one socket last had an `active` sent (network id and folded target → epoch ms). */
export type TypingLimiter = Map<string, number>

export interface TagFrameServices {
  readonly control: NetworkControlService
  readonly networks: Networks
}

const needs = { react: "message-tags", reply: "message-tags", typing: "message-tags", redact: "draft/message-redaction" } as const

/** The answer to one frame, after sending what it asks for. */
export const onTagFrame = (
  services: TagFrameServices,
  caller: ToolCaller,
  frame: TagFrame,
  typing: TypingLimiter
): Effect.Effect<ServerFrame | undefined> =>
  Effect.gen(function*() {
    const id = frame.id ?? null
    const refuse = (message: string): ServerFrame => ({ type: "error", id, message })
    const ok: ServerFrame | undefined = frame.id === undefined
      ? undefined
      : { type: "result", id: frame.id, isError: false, payload: { ok: true } }
    if (caller.scope !== "read-write") return refuse("this sign-in may only read (the account is paused)")
    const { networkId, target } = frame
    if (Option.isNone(yield* services.networks.owned(caller.accountId, networkId))) {
      return refuse(`unknown network ${networkId}`)
    }
    const upstream = yield* services.control.upstream(networkId)
    if (Option.isNone(upstream)) return refuse(`network ${networkId} is not connected`)
    const u = upstream.value
    const cap = needs[frame.type]
    if (!u.caps.includes(cap)) return refuse(`this network's server does not support ${cap}, which ${frame.type} needs`)

    let send: Effect.Effect<void, { readonly _tag: string }>
    switch (frame.type) {
      case "react":
        send = services.control.raw(networkId, formatLine({
          tags: new Map([["+draft/react", frame.reaction], ["+draft/reply", frame.msgid]]),
          command: "TAGMSG",
          params: [target]
        }))
        break
      case "reply":
        send = (yield* services.control.isEncrypted(networkId, target))
          // End-to-end encrypted: the text goes encrypted through `say`; the reply tag cannot go with it.
          ? services.control.say(networkId, "privmsg", target, frame.text)
          : services.control.rawLines(
            networkId,
            messageLines("PRIVMSG", target, frame.text, {
              tags: new Map([["+draft/reply", frame.msgid]]),
              prefixAllowance: ownPrefix(u)
            })
          )
        break
      case "typing": {
        const { caseMapping } = yield* services.control.status(networkId)
        const key = `${networkId} ${foldCase(caseMapping, target)}`
        const now = yield* Clock.currentTimeMillis
        if (frame.state === "active") {
          const last = typing.get(key)
          if (last !== undefined && now - last < TYPING_INTERVAL_MS) return ok
          typing.delete(key)
          if (typing.size >= TYPING_TARGETS) typing.delete(typing.keys().next().value!)
          typing.set(key, now)
        } else typing.delete(key)
        send = services.control.raw(
          networkId,
          formatLine({ tags: new Map([["+typing", frame.state]]), command: "TAGMSG", params: [target] })
        )
        break
      }
      case "redact":
        send = services.control.raw(networkId, formatLine({ command: "REDACT", params: [target, frame.msgid] }))
        break
    }
    const sent = yield* Effect.either(send)
    if (sent._tag === "Left") {
      const error = sent.left
      return refuse("message" in error && typeof error.message === "string" && error.message !== "" ? error.message : error._tag)
    }
    return ok
  })

const ownPrefix = (u: UpstreamView) =>
  prefixAllowance({ nick: u.nick, ...(u.user !== null ? { user: u.user } : {}), ...(u.host !== null ? { host: u.host } : {}) })
