/**
 * Backlog: for a client without draft/chathistory that names itself (`account/network@client`: WeeChat, irssi,
 * HexChat), what the network's channels and DMs received since that client name last saw, on its next connection —
 * per buffer in a `chathistory` batch with `time` tags, or as plain lines for a client without batch — at most
 * BACKLOG_LINES, read within BACKLOG_READ (docs/contract.md "The IRC client listener"). What a client was sent is
 * tracked by its name (ClientDeliveries: the newest message id delivered), written when it leaves and after each
 * backlog. A client name seen for the first time gets no backlog: it starts from now. Clients with CHATHISTORY get
 * none (the extension: the server "SHOULD NOT play back any history that would otherwise be sent automatically").
 *
 * Concurrency rule: runs on the connection's session fiber only.
 */
import { Effect, Option } from "effect"
import type { StoredRow } from "../services/history/MessageRow.js"
import { type Downstream, nextBatchId, SERVER_NAME, write } from "./Downstream.js"
import type { ListenerDeps } from "./ListenerDeps.js"
import { deliverable, sendStored } from "./LiveEvents.js"
import { ownLine } from "./MessageLines.js"

export const BACKLOG_LINES = 4000
export const BACKLOG_READ = "10 seconds"

const clientOf = (d: Downstream) => {
  const client = d.signInName?.client ?? null
  return d.network === undefined || d.signedIn === undefined || client === null ? undefined : client
}

export const sendBacklog = (deps: ListenerDeps, d: Downstream) =>
  Effect.gen(function*() {
    const client = clientOf(d)
    const network = d.network
    const signedIn = d.signedIn
    if (client === undefined || network === undefined || signedIn === undefined) return
    const last = yield* deps.deliveries.delivered(network.id, client)
    if (Option.isNone(last) || d.caps.enabled.has("draft/chathistory")) {
      d.delivered = Math.max(d.delivered, yield* deps.history.newestOfNetwork(network.id))
      return yield* remember(deps, d)
    }
    d.delivered = Math.max(d.delivered, last.value)
    const rows = yield* deps.history.networkAfter(network.id, last.value, BACKLOG_LINES).pipe(
      Effect.timeoutTo({ duration: BACKLOG_READ, onTimeout: () => [] as ReadonlyArray<StoredRow>, onSuccess: (r) => r })
    )
    const byTarget = new Map<string, Array<StoredRow>>()
    for (const row of rows) {
      if (!deliverable(d, row)) continue
      let list = byTarget.get(row.target)
      if (list === undefined) byTarget.set(row.target, (list = []))
      list.push(row)
    }
    const batches = d.caps.enabled.has("batch")
    for (const [target, list] of byTarget) {
      const batch = batches ? nextBatchId(d) : undefined
      const own = (params: ReadonlyArray<string>) =>
        write(d, ownLine(d.view, { source: { nick: SERVER_NAME }, command: "BATCH", params }))
      if (batch !== undefined) own([`+${batch}`, "chathistory", target])
      for (const row of list) sendStored(d, row, batch)
      if (batch !== undefined) own([`-${batch}`])
    }
    yield* remember(deps, d)
  })

/** Writes down how far this client name has been delivered (a no-op for an unnamed client). */
export const remember = (deps: ListenerDeps, d: Downstream) =>
  Effect.suspend(() => {
    const client = clientOf(d)
    if (client === undefined || d.delivered <= 0) return Effect.void
    return deps.deliveries.advance(d.signedIn!.accountId, d.network!.id, client, d.delivered)
  })
