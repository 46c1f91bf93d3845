/**
 * An in-memory store of messages standing in for MessageWriter in actor tests: keeps every appended message in
 * append order, and can simulate a database outage (appends are held in order, `flush` waits until the outage ends,
 * exactly MessageWriter's contract: append never fails or blocks, flush resolves once everything before it is
 * stored).
 *
 * Concurrency: single-threaded JS; every method is a synchronous step or waits on a SubscriptionRef.
 */
import { Effect, Layer, PubSub, Stream, SubscriptionRef } from "effect"
import type { StoredMessage } from "../../src/services/history/MessageHistory.js"
import { type NewMessage, type StoredRow, upstreamMsgid } from "../../src/services/history/MessageRow.js"
import type { RedactedMessage, Redaction } from "../../src/services/history/MessageRedactions.js"
import { MessageWriter } from "../../src/services/history/MessageWriter.js"

export interface MemoryMessageStore extends MessageWriter {
  /** Everything stored (not the rows held during an outage), oldest first. */
  readonly all: Effect.Effect<ReadonlyArray<StoredMessage & { readonly targetFolded: string; readonly raw: string | null }>>
  /** Rows held back by an outage. */
  readonly pending: Effect.Effect<number>
  readonly setOutage: (down: boolean) => Effect.Effect<void>
  /** Makes `append` die once for a message whose text is this (a bug in a store must not take other networks down). */
  readonly poison: (text: string) => Effect.Effect<void>
}

export const make: Effect.Effect<MemoryMessageStore> = Effect.gen(function*() {
  const down = yield* SubscriptionRef.make(false)
  const stored: Array<StoredMessage & { readonly targetFolded: string; readonly raw: string | null }> = []
  let held: Array<NewMessage> = []
  let nextId = 1
  let poisoned: string | undefined

  const toStored = (m: NewMessage) => ({
    id: nextId++,
    networkId: m.networkId,
    target: m.target,
    targetFolded: m.targetFolded,
    time: m.time,
    kind: m.kind,
    nick: m.nick,
    text: m.text,
    numeric: m.numeric ?? null,
    self: m.self,
    encryption: m.encryption ?? "plain",
    raw: m.raw ?? null,
    msgid: upstreamMsgid(m.msgid),
    replyTo: upstreamMsgid(m.replyTo)
  })

  const drain = () => {
    for (const m of held) stored.push(toStored(m))
    held = []
  }

  const append = (message: NewMessage) =>
    Effect.gen(function*() {
      if (poisoned !== undefined && message.text === poisoned) {
        poisoned = undefined
        return yield* Effect.dieMessage("poisoned message")
      }
      if (yield* SubscriptionRef.get(down)) held.push(message)
      else {
        drain()
        stored.push(toStored(message))
      }
    })

  const flush = down.changes.pipe(
    Stream.filter((d) => !d),
    Stream.take(1),
    Stream.runDrain,
    Effect.zipRight(Effect.sync(drain))
  )

  // Nothing listens in actor tests; the member's tabs are tested over the real writer.
  const announced = yield* PubSub.unbounded<ReadonlyArray<StoredRow>>()
  const redacted = yield* PubSub.unbounded<RedactedMessage>()

  /** As MessageRedactions applies it, to the rows stored (not to those an outage holds back). */
  const redact = (r: Redaction) =>
    Effect.sync(() => {
      stored.forEach((row, i) => {
        if (row.networkId === r.networkId && row.targetFolded === r.targetFolded && row.msgid === r.msgid) {
          stored[i] = { ...row, text: "", raw: null, redacted: true }
        }
      })
    })

  return Object.assign(
    MessageWriter.make({
      append,
      flush,
      stored: announced,
      relay: () => Effect.void,
      storedHere: () => true,
      highestAnnounced: () => 0,
      appended: () => 0,
      sequenceOf: () => undefined,
      redact,
      redacted,
      redactedElsewhere: () => Effect.void
    }),
    {
      all: Effect.sync(() => stored.slice()),
      pending: Effect.sync(() => held.length),
      setOutage: (d: boolean) =>
        Effect.gen(function*() {
          yield* SubscriptionRef.set(down, d)
          if (!d) drain()
        }),
      poison: (text: string) =>
        Effect.sync(() => {
          poisoned = text
        })
    }
  )
})

export const layer = (store: MemoryMessageStore) => Layer.succeed(MessageWriter, store)
