/**
 * MessageRedactions: the upstream's redactions applied to the stored history (IRCv3 draft/message-redaction;
 * docs/decisions/history.md "Message ids, replies, reactions and redaction"). A network actor hands over
 * `REDACT <target> <msgid>` as a `Redaction` (actors/network/History.ts); the row of that buffer whose upstream msgid
 * it names (a PRIVMSG, NOTICE, ACTION or reaction) is marked `redacted`, its text cleared to '' and its raw line to
 * NULL — the sender asked for its removal — and kept, so ids and order hold. Then the newest pages kept in memory
 * show it redacted (RecentPages.redact: a new object, so MessageRecord's serialized copy of the old one is not
 * reused) and it is announced on `redacted`: the member's tabs get a `redaction` frame (MemberEvents), and in a
 * cluster the other nodes hear it (ClusterEvents, `redactedElsewhere`). The row also keeps where the redaction fell
 * among the stored messages (`redacted_after`, the newest id taken from the sequence then, committed or not;
 * migration 0019), so a tab that was away gets the frame when it resumes with `?since=` (MessageHistory.redactedSince,
 * SocketSession's replay), on any node.
 *
 * Order: the row a redaction names may still wait in MessageWriter's inbox (a message and its redaction a few
 * milliseconds apart), so each redaction waits for the writer's `flush` (everything appended before it is stored)
 * before its UPDATE. Nothing here ever makes the actor wait: `redact` only queues.
 *
 * Bounds and failures: at most QUEUED redactions wait (the database down, a flood of REDACT); beyond, one is dropped
 * with a warning per episode, the message then stays as it was. A failed UPDATE is retried on the writer's schedule
 * until the database answers; one naming no stored message (never stored, already redacted, another buffer's) changes
 * nothing.
 *
 * Concurrency rule: `redact` is a synchronous offer, safe from any fiber; one fiber applies the redactions, one at a
 * time, in the order they were handed over; it ends with the writer's scope.
 */
import type { SqlClient } from "@effect/sql"
import { Effect, PubSub, Queue, type Schedule, type Scope } from "effect"
import type { RecentPages } from "./RecentPages.js"

/** Redactions waiting to be applied, at most. */
export const QUEUED = 1000

/** What a network actor hands over: the buffer the REDACT named, and the upstream msgid it removes. */
export interface Redaction {
  readonly networkId: number
  readonly target: string
  readonly targetFolded: string
  readonly msgid: string
}

/** A stored message that was redacted: what the tabs are told (`redaction` frame) and the other nodes. */
export interface RedactedMessage {
  readonly networkId: number
  readonly target: string
  readonly targetFolded: string
  readonly messageId: number
}

/** The kinds a redaction may remove: what an IRC user sends with a msgid of their own. */
const REDACTABLE = "('privmsg', 'notice', 'action', 'react')"

export const makeRedactions = (deps: {
  readonly sql: SqlClient.SqlClient
  readonly flush: Effect.Effect<void>
  readonly pages: Pick<RecentPages, "redact">
  readonly retry: Schedule.Schedule<unknown, unknown>
}): Effect.Effect<{
  readonly redact: (redaction: Redaction) => Effect.Effect<void>
  readonly redacted: PubSub.PubSub<RedactedMessage>
  readonly redactedElsewhere: (message: RedactedMessage) => Effect.Effect<void>
}, never, Scope.Scope> =>
  Effect.gen(function*() {
    const { sql, pages } = deps
    const inbox = yield* Queue.bounded<Redaction>(QUEUED)
    const redacted = yield* PubSub.unbounded<RedactedMessage>()
    let fullWarned = false

    const redact = (redaction: Redaction): Effect.Effect<void> =>
      Effect.suspend(() => {
        if (inbox.unsafeOffer(redaction)) {
          fullWarned = false
          return Effect.void
        }
        if (fullWarned) return Effect.void
        fullWarned = true
        return Effect.logWarning("too many redactions waiting for the database; dropping redactions").pipe(
          Effect.annotateLogs({ networkId: redaction.networkId, waiting: QUEUED })
        )
      })

    /** Into the kept pages, then to whoever listens (tabs, other nodes). */
    const announce = (message: RedactedMessage) =>
      Effect.suspend(() => {
        pages.redact(message.networkId, message.targetFolded, message.messageId)
        return Effect.asVoid(PubSub.publish(redacted, message))
      })

    // `redacted_after` is read from the id sequence, after the row is marked and in the same transaction, not as
    // max(id): a batch another connection is storing has taken its ids from the sequence before it commits, so its
    // messages (which may reach a tab before this redaction's frame) are counted, where max(id) would not see them
    // (docs/contract.md, WebSocket `?since=`). The sequence is read as it stands, outside any snapshot.
    const update = (r: Redaction) =>
      sql.withTransaction(Effect.gen(function*() {
        const rows = yield* sql<{ messageId: number; target: string }>`
          UPDATE messages AS m SET redacted = true, text = '', raw = NULL
          FROM buffers AS b
          WHERE b.network_id = ${r.networkId} AND b.target_folded = ${r.targetFolded}
            AND m.buffer_id = b.id AND m.msgid = ${r.msgid} AND NOT m.redacted AND m.kind IN ${sql.literal(REDACTABLE)}
          RETURNING m.id AS "messageId", b.target`
        if (rows.length === 0) return rows
        yield* sql`
          UPDATE messages SET redacted_after = (SELECT last_value FROM messages_id_seq)
          WHERE ${sql.in("id", rows.map((row) => row.messageId))}`
        return rows
      }))

    const apply = (r: Redaction) =>
      Effect.gen(function*() {
        yield* deps.flush
        const rows = yield* update(r).pipe(
          Effect.tapError((error) => Effect.logWarning("could not store a redaction; retrying", error)),
          Effect.retry(deps.retry)
        )
        for (const row of rows.toSorted((x, y) => x.messageId - y.messageId)) {
          yield* announce({ networkId: r.networkId, target: row.target, targetFolded: r.targetFolded, messageId: row.messageId })
        }
      })

    yield* Queue.take(inbox).pipe(
      Effect.flatMap(apply),
      // Only a bug gets here (the UPDATE is retried until it is answered): logged, and the next one goes on.
      Effect.catchAllCause((cause) => Effect.logError("a redaction was not applied", cause)),
      Effect.forever,
      Effect.forkScoped
    )

    return { redact, redacted, redactedElsewhere: announce } as const
  })
