/**
 * MarkRead: IRCv3 draft/read-marker over the web client's read markers (ReadMarkers), so a buffer read in an IRC
 * client is read in the browser too, and the other way round. `MARKREAD <target> timestamp=T` moves the buffer's
 * marker to its newest message at or before T (markers only move forward); ReadMarkers.changes then tells every tab
 * and every IRC client with the capability (LiveEvents.ts), the sender included, as the extension asks. `MARKREAD
 * <target>` answers the marker, or `*` when the buffer has none; so does a set whose time names no message (before
 * the buffer's first, or a buffer without history), which cannot move a marker that is a message (docs/contract.md).
 *
 * Concurrency rule: runs on the connection's session fiber only.
 */
import { Effect, Option } from "effect"
import { foldCase } from "../irc/CaseMapping.js"
import { parseReference } from "./ChatHistoryRequest.js"
import { type Downstream, fail, replyLine } from "./Downstream.js"
import type { ListenerDeps } from "./ListenerDeps.js"
import { timeTag } from "./MessageLines.js"

export const onMarkRead = (deps: ListenerDeps, d: Downstream, params: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const [target, stamp] = params
    const network = d.network
    const signedIn = d.signedIn
    if (target === undefined) return fail(d, "MARKREAD", "NEED_MORE_PARAMS", [], "Missing target")
    if (network === undefined || signedIn === undefined) return fail(d, "MARKREAD", "INVALID_TARGET", [target], "No network bound")
    const status = yield* deps.control.status(network.id)
    const folded = foldCase(status.caseMapping, target)
    /** The marker as stored, to this client alone (a get, or a set that moved nothing). */
    const answerStored = Effect.gen(function*() {
      const marker = yield* deps.markers.get(network.id, folded)
      const time = Option.flatMap(marker, (m) => Option.fromNullable(m.time))
      replyLine(d, {
        command: "MARKREAD",
        params: [target, Option.match(time, { onNone: () => "*", onSome: (t) => `timestamp=${timeTag(t)}` })]
      })
    })
    if (stamp === undefined) return yield* answerStored
    const ref = parseReference(stamp)
    if (ref?._tag !== "Time") return fail(d, "MARKREAD", "INVALID_PARAMS", [target, stamp], "Expected timestamp=<ISO 8601>")
    const newest = yield* deps.history.idAtOrBefore(network.id, folded, ref.time)
    // A time before every message of the buffer (or a buffer with none) names no message, so the marker cannot move
    // there; as with a time behind the marker, the client hears the marker as stored rather than an error.
    if (Option.isNone(newest)) return yield* answerStored
    const moved = yield* deps.markers.set(signedIn.accountId, network.id, folded, newest.value.id)
    if (Option.isNone(moved)) return yield* answerStored
    // The marker as stored reaches every client through ReadMarkers.changes.
  })
